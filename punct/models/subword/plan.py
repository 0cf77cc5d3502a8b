"""The decoding windows of ``SubwordFeaturizer`` built with array operations.

The same windows and batches as ``SubwordFeaturizer.windows`` + ``collate`` (without the
training targets), from flat arrays over all words of a run: the pieces of every word
(``PieceTable``), the cumulative piece count ``S``, and for every word the end of the
window that starts at it and the start of the next window. Only the walk from window to
window is a Python loop (one step per window); a batch is a few numpy gathers.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from punct.models.base import WindowPlan, WordSeq
from punct.models.subword.pieces import PieceTable


@dataclass(frozen=True)
class Specials:
    """Token ids the windows need, and the slot of a word (its first or last piece)."""

    cls: int
    sep: int
    pad: int
    last_piece: bool


def _exclusive_cumsum(values: np.ndarray) -> np.ndarray:
    out = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(values, out=out[1:])
    return out


def _ragged(starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The indices ``starts[k] .. starts[k] + counts[k] - 1`` of every k, concatenated,
    and the k of each."""
    owner = np.repeat(np.arange(len(counts)), counts)
    first = _exclusive_cumsum(counts)[:-1]
    return np.arange(int(counts.sum())) - np.repeat(first - starts, counts), owner


GROUP_WINDOWS = 2048
"""Windows whose batches are filled at once (their buffers: about 20 bytes per position)."""


class PiecePlan(WindowPlan):
    """Word-aligned windows of at most ``capacity`` pieces between [CLS] and [SEP], the
    next starting at the first word at least ``stride`` pieces on (never past the end)."""

    def __init__(self, table: PieceTable, specials: Specials, seqs: Sequence[WordSeq],
                 capacity: int, stride: int, width: int | None = None):
        self.specials = specials
        self.width = width  # fixed batch width (courtland), else the longest window
        words: list[str] = []
        for seq in seqs:
            words.extend(seq.words)
        lens = np.fromiter((len(s.words) for s in seqs), dtype=np.int64, count=len(seqs))
        offsets = np.fromiter((s.offset for s in seqs), dtype=np.int64, count=len(seqs))
        seq_start = _exclusive_cumsum(lens)  # flat index of each sequence's first word
        n = len(words)
        types = table.lookup(words)
        n_pieces = np.minimum(table.length[types], capacity)
        cum = _exclusive_cumsum(n_pieces)  # S: flat index of each word's first piece
        piece_src, _ = _ragged(table.start[types], n_pieces)
        self.pieces = table.flat[piece_src]
        # word-level inputs
        self.word_ids = np.repeat(offsets - seq_start[:-1], lens) + np.arange(n)
        self.pauses = (np.concatenate([s.pauses for s in seqs]).astype(np.float32, copy=False)
                       if seqs else np.zeros(0, dtype=np.float32))
        self.utt_start = np.zeros(n, dtype=np.float32)
        self.utt_start[seq_start[:-1][lens > 0]] = 1.0
        self.slot_piece = cum[1:] - 1 if specials.last_piece else cum[:-1]
        # windows: from word f to the last word that fits, then on by ``stride`` pieces
        cum_l = cum.tolist()
        firsts: list[int] = []
        lasts: list[int] = []
        for a, b in zip(seq_start[:-1].tolist(), seq_start[1:].tolist(), strict=True):
            f = a
            while f < b:
                base = cum_l[f]
                last = bisect_right(cum_l, base + capacity, f, b + 1) - 1
                firsts.append(f)
                lasts.append(last)
                if last >= b:
                    break
                f = max(f + 1, min(bisect_left(cum_l, base + stride, f, b), last))
        self.first = np.asarray(firsts, dtype=np.int64)
        self.last = np.asarray(lasts, dtype=np.int64)
        self.piece_start = cum[self.first]
        self.lengths = 2 + cum[self.last] - self.piece_start

    def batch(self, rows: np.ndarray) -> dict[str, torch.Tensor]:
        """``input_ids``, ``attention_mask``, ``word_ids``, ``pauses``, ``prev_pos`` and
        ``utt_start`` (B, T) of windows ``rows``, padded as ``collate`` pads them."""
        return next(self.batches(np.asarray(rows, dtype=np.int64), len(rows)))[1]

    def batches(self, order: np.ndarray, batch_size: int
                ) -> Iterator[tuple[np.ndarray, dict[str, torch.Tensor]]]:
        """The batches of ``order``: the slots of all of them placed at once, then the
        batches filled ``GROUP_WINDOWS`` windows at a time by a few gathers and scatters
        into one buffer per input, of which each batch is a view."""
        order = np.asarray(order, dtype=np.int64)
        lengths = self.lengths[order]
        starts = np.arange(0, len(order), batch_size)
        widths = (np.full(len(starts), self.width, dtype=np.int64) if self.width
                  else np.maximum.reduceat(lengths, starts) if len(order)
                  else np.zeros(0, dtype=np.int64))
        counts = self.last[order] - self.first[order]
        words, row = _ragged(self.first[order], counts)
        at = 1 + self.slot_piece[words] - self.piece_start[order][row]
        prev = np.empty_like(at)
        prev[1:] = at[:-1]
        prev[_exclusive_cumsum(counts)[:-1][counts > 0]] = -1
        # each batch is a (size, width) block of one flat buffer per group of batches
        sizes = np.minimum(batch_size, len(order) - starts)
        block = _exclusive_cumsum(sizes * widths)
        window_batch = np.arange(len(order)) // batch_size
        window_base = block[window_batch] + (np.arange(len(order)) % batch_size) * widths[
            window_batch]
        flat = window_base[row] + at
        bounds = _exclusive_cumsum(counts)[np.append(starts, len(order))]
        per_group = max(1, GROUP_WINDOWS // batch_size)
        for g in range(0, len(starts), per_group):
            b0, b1 = g, min(g + per_group, len(starts))
            w0, w1 = int(starts[b0]), int(starts[b1 - 1] + sizes[b1 - 1])
            s0, s1 = int(bounds[b0]), int(bounds[b1])
            base = int(block[b0])
            inputs = self._fill(order[w0:w1], lengths[w0:w1],
                                np.repeat(widths[b0:b1], sizes[b0:b1]),
                                window_base[w0:w1] - base, int(block[b1]) - base,
                                flat[s0:s1] - base, words[s0:s1], prev[s0:s1])
            for b in range(b0, b1):
                lo, hi = int(block[b]) - base, int(block[b + 1]) - base
                shape = (int(sizes[b]), int(widths[b]))
                w = int(starts[b])
                yield order[w:w + shape[0]], {
                    k: torch.from_numpy(v[lo:hi].reshape(shape)) for k, v in inputs.items()}

    def _fill(self, rows: np.ndarray, lengths: np.ndarray, widths: np.ndarray,
              window_base: np.ndarray, size: int, flat: np.ndarray, words: np.ndarray,
              prev: np.ndarray) -> dict[str, np.ndarray]:
        """Flat buffers (``size`` positions) of windows ``rows`` (each ``widths`` wide
        from ``window_base``) with their word slots at ``flat``, padded as ``collate``
        pads them."""
        sp = self.specials
        pos, owner = _ragged(window_base, widths)
        pos -= window_base[owner]  # the position inside its window
        length = lengths[owner]
        src = self.piece_start[rows][owner] + (pos - 1)
        np.clip(src, 0, max(len(self.pieces) - 1, 0), out=src)
        input_ids = np.where((pos >= 1) & (pos < length - 1), self.pieces[src], sp.pad)
        input_ids[pos == 0] = sp.cls
        input_ids[window_base + lengths - 1] = sp.sep
        out = {"input_ids": input_ids,
               "word_ids": np.full(size, -1, dtype=np.int64),
               "pauses": np.full(size, np.nan, dtype=np.float32),
               "prev_pos": np.full(size, -1, dtype=np.int64),
               "utt_start": np.zeros(size, dtype=np.float32),
               "attention_mask": (pos < length).astype(np.int64)}
        out["word_ids"][flat] = self.word_ids[words]
        out["pauses"][flat] = self.pauses[words]
        out["prev_pos"][flat] = prev
        out["utt_start"][flat] = self.utt_start[words]
        return out
