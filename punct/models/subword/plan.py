"""The decoding windows of ``SubwordFeaturizer`` built with array operations.

The same windows and batches as ``SubwordFeaturizer.windows`` + ``collate`` (without the
training targets), from flat arrays over all words of a run: the pieces of every word
(``PieceTable``), the cumulative piece count ``S``, and for every word the end of the
window that starts at it and the start of the next window. Only the walk from window to
window is a Python loop (one step per window); a batch is a few numpy gathers.
"""

from __future__ import annotations

from collections.abc import Sequence
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
        self.pauses = (np.concatenate([np.asarray(s.pauses, dtype=np.float32) for s in seqs])
                       if seqs else np.zeros(0, dtype=np.float32))
        self.utt_start = np.zeros(n, dtype=np.float32)
        self.utt_start[seq_start[:-1][lens > 0]] = 1.0
        self.slot_piece = cum[1:] - 1 if specials.last_piece else cum[:-1]
        # windows: from word f to ``end[f]``, then on to ``step[f]``
        seq_end = np.repeat(seq_start[1:], lens)
        end = np.minimum(np.searchsorted(cum, cum[:-1] + capacity, side="right") - 1, seq_end)
        step = np.maximum(np.arange(n) + 1,
                          np.minimum(np.searchsorted(cum, cum[:-1] + stride, side="left"), end))
        end_l, step_l = end.tolist(), step.tolist()
        firsts: list[int] = []
        lasts: list[int] = []
        for a, b in zip(seq_start[:-1].tolist(), seq_start[1:].tolist(), strict=True):
            f = a
            while f < b:
                firsts.append(f)
                lasts.append(end_l[f])
                if end_l[f] >= b:
                    break
                f = step_l[f]
        self.first = np.asarray(firsts, dtype=np.int64)
        self.last = np.asarray(lasts, dtype=np.int64)
        self.piece_start = cum[self.first]
        self.lengths = 2 + cum[self.last] - self.piece_start

    def batch(self, rows: np.ndarray) -> dict[str, torch.Tensor]:
        """``input_ids``, ``attention_mask``, ``word_ids``, ``pauses``, ``prev_pos`` and
        ``utt_start`` (B, T) of windows ``rows``, padded as ``collate`` pads them."""
        sp = self.specials
        rows = np.asarray(rows, dtype=np.int64)
        size = len(rows)
        lengths = self.lengths[rows]
        width = self.width or int(lengths.max())
        pos = np.arange(width)
        src = self.piece_start[rows][:, None] + pos - 1
        inside = (pos >= 1) & (pos < (lengths - 1)[:, None])
        input_ids = np.where(inside, self.pieces[np.clip(src, 0, max(len(self.pieces) - 1, 0))],
                             sp.pad)
        input_ids[:, 0] = sp.cls
        input_ids[np.arange(size), lengths - 1] = sp.sep
        mask = (pos < lengths[:, None]).astype(np.int64)
        # the prediction slots, window by window, word by word
        counts = self.last[rows] - self.first[rows]
        words, row = _ragged(self.first[rows], counts)
        at = 1 + self.slot_piece[words] - self.piece_start[rows][row]
        flat = row * width + at
        prev = np.empty_like(at)
        prev[1:] = at[:-1]
        prev[_exclusive_cumsum(counts)[:-1][counts > 0]] = -1
        word_ids = np.full(size * width, -1, dtype=np.int64)
        word_ids[flat] = self.word_ids[words]
        pauses = np.full(size * width, np.nan, dtype=np.float32)
        pauses[flat] = self.pauses[words]
        prev_pos = np.full(size * width, -1, dtype=np.int64)
        prev_pos[flat] = prev
        utt_start = np.zeros(size * width, dtype=np.float32)
        utt_start[flat] = self.utt_start[words]
        shape = (size, width)
        return {"input_ids": torch.from_numpy(input_ids),
                "word_ids": torch.from_numpy(word_ids.reshape(shape)),
                "pauses": torch.from_numpy(pauses.reshape(shape)),
                "prev_pos": torch.from_numpy(prev_pos.reshape(shape)),
                "utt_start": torch.from_numpy(utt_start.reshape(shape)),
                "attention_mask": torch.from_numpy(mask)}
