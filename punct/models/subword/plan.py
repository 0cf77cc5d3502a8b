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
        """The batches of ``order``: the slots of all of them placed at once, then each
        batch filled by a few scatters and one gather of its pieces."""
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
        flat = (row % batch_size) * widths[row // batch_size] + at
        word_ids, pauses = self.word_ids[words], self.pauses[words]
        utt_start = self.utt_start[words]
        bounds = _exclusive_cumsum(counts)[np.append(starts, len(order))].tolist()
        for b, lo in enumerate(starts.tolist()):
            rows = order[lo:lo + batch_size]
            sl = slice(bounds[b], bounds[b + 1])
            yield rows, self._fill(rows, lengths[lo:lo + batch_size], int(widths[b]),
                                   flat[sl], word_ids[sl], pauses[sl], prev[sl],
                                   utt_start[sl])

    def _fill(self, rows: np.ndarray, lengths: np.ndarray, width: int, flat: np.ndarray,
              word_ids: np.ndarray, pauses: np.ndarray, prev: np.ndarray,
              utt_start: np.ndarray) -> dict[str, torch.Tensor]:
        sp = self.specials
        size = len(rows)
        pos = np.arange(width)
        src = self.piece_start[rows][:, None] + (pos - 1)
        inside = (pos >= 1) & (pos < (lengths - 1)[:, None])
        np.clip(src, 0, max(len(self.pieces) - 1, 0), out=src)
        input_ids = np.where(inside, self.pieces[src], sp.pad)
        input_ids[:, 0] = sp.cls
        input_ids[np.arange(size), lengths - 1] = sp.sep
        mask = (pos < lengths[:, None]).astype(np.int64)
        out = {"input_ids": input_ids, "word_ids": np.full(size * width, -1, dtype=np.int64),
               "pauses": np.full(size * width, np.nan, dtype=np.float32),
               "prev_pos": np.full(size * width, -1, dtype=np.int64),
               "utt_start": np.zeros(size * width, dtype=np.float32)}
        out["word_ids"][flat] = word_ids
        out["pauses"][flat] = pauses
        out["prev_pos"][flat] = prev
        out["utt_start"][flat] = utt_start
        batch = {k: torch.from_numpy(v.reshape(size, width)) for k, v in out.items()}
        batch["attention_mask"] = torch.from_numpy(mask)
        return batch
