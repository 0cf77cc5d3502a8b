"""The decoding windows of ``SubwordFeaturizer`` built with array operations.

The same windows and batches as ``SubwordFeaturizer.windows`` + ``collate`` (without the
training targets), from flat arrays over all words of a run: the pieces of every word
(``PieceTable``) and the cumulative piece count ``S``. The walk from window to window
takes one step of every sequence per array operation (``_walk``).

Every input of a window is a slice of a per-piece "track" (the piece ids, and at each
word's slot piece its word id, pause, utterance start and previous slot), so batches are
filled by one gather per track over many batches at once, then the [CLS], [SEP] and
padding positions are overwritten.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from punct.models.base import WindowPlan, WordSeq
from punct.models.subword.pieces import PieceTable

CHUNK_POSITIONS = 1 << 18
"""Positions filled at once (several batches): a few MB per input, whatever the run's
length, and few enough numpy calls per batch that their overhead does not dominate."""


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


def _ragged(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The indices ``starts[k] .. starts[k] + counts[k] - 1`` of every k, concatenated:
    the running sum of steps of one, with a jump at the head of each run (cheaper than
    repeating every start)."""
    if not counts.all():
        starts, counts = starts[counts > 0], counts[counts > 0]
    heads = _exclusive_cumsum(counts)
    step = np.ones(int(heads[-1]), dtype=np.int64)
    if len(step):
        step[0] = starts[0]
        step[heads[1:-1]] = starts[1:] - (starts[:-1] + counts[:-1] - 1)
    return np.cumsum(step, out=step)


INPUTS = ("input_ids", "attention_mask", "word_ids", "pauses", "prev_pos", "utt_start")
"""The inputs of a decoding batch (``SubwordFeaturizer.collate`` without the targets)."""
SLOT_FILL = {"word_ids": -1, "pauses": np.nan, "prev_pos": -1, "utt_start": 0.0}
"""The value of the per-slot inputs at positions without a word's slot (as ``collate``)."""

WALK_TOGETHER = 32
"""Sequences walked together, one window of each per array step, while at least this
many are unfinished (short utterances: a few steps in all); the rest (long streams) are
finished one by one, one bisect per window."""


def _walk(cum: np.ndarray, seq_start: np.ndarray, capacity: int, stride: int
          ) -> tuple[np.ndarray, np.ndarray]:
    """First and end (exclusive) word of every window, in order: from word f to the last
    word that fits in ``capacity`` pieces, the next window at the first word at least
    ``stride`` pieces on (never past the current end, and at least one word on)."""
    f, end = seq_start[:-1], seq_start[1:]
    f, end = f[f < end], end[f < end]
    firsts, lasts = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    while len(f) >= WALK_TOGETHER:
        base = cum[f]
        last = np.minimum(np.searchsorted(cum, base + capacity, side="right") - 1, end)
        firsts.append(f)
        lasts.append(last)
        go = last < end
        f, base, last, end = f[go], base[go], last[go], end[go]
        nxt = np.minimum(np.searchsorted(cum, base + stride, side="left"), last)
        f = np.maximum(f + 1, nxt)
    for a, b in zip(f.tolist(), end.tolist(), strict=True):
        one_first, one_last = _walk_one(cum[a:b + 1].tolist(), capacity, stride)
        firsts.append(a + np.asarray(one_first, dtype=np.int64))
        lasts.append(a + np.asarray(one_last, dtype=np.int64))
    first, last = np.concatenate(firsts), np.concatenate(lasts)
    order = np.argsort(first)  # by sequence, then along it: the windows' plan order
    return first[order], last[order]


def _walk_one(cum_l: list[int], capacity: int, stride: int) -> tuple[list[int], list[int]]:
    """``_walk`` of one sequence from its first word, given the piece counts ``cum_l``
    (its words' first pieces and the end), word indices relative to it."""
    firsts: list[int] = []
    lasts: list[int] = []
    b = len(cum_l) - 1
    f = 0
    while True:
        base = cum_l[f]
        last = bisect_right(cum_l, base + capacity, f) - 1
        firsts.append(f)
        lasts.append(last)
        if last >= b:
            return firsts, lasts
        f = max(f + 1, min(bisect_left(cum_l, base + stride, f, b), last))


def _slot_track(size: int, fill: float, slot: np.ndarray, values: np.ndarray
                ) -> np.ndarray:
    """A per-piece track of ``size`` elements: each word's value at its slot, ``fill``
    elsewhere."""
    out = np.full(size, fill, dtype=values.dtype)
    out[slot] = values
    return out


def _chunks(spans: np.ndarray, limit: int) -> Iterator[tuple[int, int]]:
    """Consecutive ranges [lo, hi) of batches holding at most ``limit`` positions in
    all (``spans``: positions of each batch), at least one batch each."""
    ends = _exclusive_cumsum(spans)
    lo = 0
    while lo < len(spans):
        hi = max(lo + 1, int(np.searchsorted(ends, ends[lo] + limit, side="right")) - 1)
        yield lo, hi
        lo = hi


class PiecePlan(WindowPlan):
    """Word-aligned windows of at most ``capacity`` pieces between [CLS] and [SEP], the
    next starting at the first word at least ``stride`` pieces on (never past the end)."""

    def __init__(self, table: PieceTable, specials: Specials, seqs: Sequence[WordSeq],
                 capacity: int, stride: int, width: int | None = None):
        self.specials = specials
        self.width = width  # fixed batch width (courtland), else the longest window
        self.table = table
        groups = [seq.words for seq in seqs]
        lens = np.fromiter(map(len, groups), dtype=np.int64, count=len(seqs))
        offsets = np.fromiter((s.offset for s in seqs), dtype=np.int64, count=len(seqs))
        seq_start = _exclusive_cumsum(lens)  # flat index of each sequence's first word
        n_words = int(seq_start[-1])
        types = table.lookup(groups)
        self.types = types  # each word's type (flat order)
        n_pieces = np.minimum(table.length[types], capacity)
        cum = _exclusive_cumsum(n_pieces)  # S: flat index of each word's first piece
        # each word's slot piece as a track index (tracks have one leading element)
        slot = cum[1:] if specials.last_piece else cum[:-1] + 1
        self.first, self.last = _walk(cum, seq_start, capacity, stride)
        self.piece_start = cum[self.first]
        self.lengths = 2 + cum[self.last] - self.piece_start
        # where each window's first word has its slot (its previous slot is outside)
        self.first_slot = slot[self.first] - self.piece_start
        size = 1 + int(cum[-1]) + max(self.width or 0, int(self.lengths.max(initial=0)))
        pieces = np.full(size, specials.pad, dtype=np.int64)
        # mode="clip": ``out`` unbuffered (the indices are valid)
        table.flat.take(_ragged(table.start[types], n_pieces), out=pieces[1:1 + cum[-1]],
                        mode="clip")
        word_ids = np.repeat(offsets - seq_start[:-1], lens) + np.arange(n_words)
        self.word_ids = word_ids  # each word's global index (flat order)
        self.tracks = {"input_ids": pieces,
                       "word_ids": _slot_track(size, SLOT_FILL["word_ids"], slot, word_ids)}
        # what the other inputs' tracks are made of (built when a batch first needs them)
        self._seqs, self._slot, self._size = seqs, slot, size
        self._seq_heads = seq_start[:-1][lens > 0]  # flat index of each utterance's start

    def track(self, key: str) -> np.ndarray:
        """The per-piece track of input ``key`` (one leading element), built on first
        use: a model that reads only the pieces never pays for the others."""
        if key not in self.tracks:
            slot, size, heads = self._slot, self._size, self._seq_heads
            if key == "pauses":
                seqs = self._seqs
                values = (np.concatenate([s.pauses for s in seqs]).astype(np.float32, copy=False)
                          if seqs else np.zeros(0, dtype=np.float32))
            elif key == "utt_start":
                values = np.zeros(len(slot), dtype=np.float32)
                values[heads] = 1.0
            elif key == "prev_pos":
                values = np.empty_like(slot)  # the previous word's slot (track index)
                values[1:] = slot[:-1]
                values[heads] = -1
            else:
                raise KeyError(f"no input {key!r} in a piece plan (known: {', '.join(INPUTS)})")
            self.tracks[key] = _slot_track(size, SLOT_FILL[key], slot, values)
        return self.tracks[key]

    def word_types(self) -> tuple[np.ndarray, np.ndarray, PieceTable]:
        """The words' global indices and type ids, and the table of types."""
        return self.word_ids, self.types, self.table

    def batch(self, rows: np.ndarray) -> dict[str, torch.Tensor]:
        """``input_ids``, ``attention_mask``, ``word_ids``, ``pauses``, ``prev_pos`` and
        ``utt_start`` (B, T) of windows ``rows``, padded as ``collate`` pads them."""
        return next(self.batches(np.asarray(rows, dtype=np.int64), len(rows)))[1]

    def batches(self, order: np.ndarray, batch_size: int,
                inputs: Collection[str] | None = None
                ) -> Iterator[tuple[np.ndarray, dict[str, torch.Tensor]]]:
        """The batches of ``order``, filled a chunk of batches at a time (at most
        ``CHUNK_POSITIONS`` positions, or one batch): each batch's inputs are (B, T)
        views of one flat array per input, where the batch occupies B * T contiguous
        elements. ``inputs``: those filled besides ``word_ids`` (None: all of ``INPUTS``)."""
        wanted = INPUTS if inputs is None else set(inputs) | {"word_ids"}
        unknown = set(wanted).difference(INPUTS)
        if unknown:
            raise ValueError(f"no input {sorted(unknown)} in a piece plan "
                           f"(known: {', '.join(INPUTS)})")
        keys = [key for key in INPUTS if key in wanted]  # INPUTS' order
        order = np.asarray(order, dtype=np.int64)
        starts = np.arange(0, len(order), batch_size)
        ends = np.append(starts[1:], len(order))
        widths = (np.full(len(starts), self.width, dtype=np.int64) if self.width
                  else np.maximum.reduceat(self.lengths[order], starts) if len(order)
                  else np.zeros(0, dtype=np.int64))
        for lo, hi in _chunks((ends - starts) * widths, CHUNK_POSITIONS):
            yield from self._fill(order, starts[lo:hi], ends[lo:hi], widths[lo:hi], keys)

    def _fill(self, order: np.ndarray, starts: np.ndarray, ends: np.ndarray,
              widths: np.ndarray, keys: Sequence[str]
              ) -> Iterator[tuple[np.ndarray, dict[str, torch.Tensor]]]:
        """Batches ``order[starts[b]:ends[b]]``, ``widths[b]`` positions each, with the
        inputs ``keys``."""
        rows = order[starts[0]:ends[-1]]
        sizes = ends - starts
        row_width = np.repeat(widths, sizes)
        lengths = self.lengths[rows]
        base = _exclusive_cumsum(row_width)
        total = int(base[-1])
        base = base[:-1]  # flat index of each row's position 0
        piece_start = self.piece_start[rows]
        # position p of a row reads track index piece_start + p
        take = np.repeat(piece_start - base, row_width)
        take += np.arange(total)
        out = {key: self.track(key).take(take) for key in keys if key != "attention_mask"}
        if "prev_pos" in out:  # the previous slot's track index -> its position
            prev = out["prev_pos"]
            prev -= np.repeat(piece_start, row_width)
            np.maximum(prev, -1, out=prev)  # non-slot positions
            prev[base + self.first_slot[rows]] = -1
        sep = base + lengths - 1
        padding = _ragged(sep + 1, row_width - lengths)
        edges = np.concatenate([base, sep, padding])  # [CLS], [SEP] and padding
        for key, value in SLOT_FILL.items():
            if key in out:
                out[key][edges] = value
        sp = self.specials
        if "input_ids" in out:
            input_ids = out["input_ids"]
            input_ids[base] = sp.cls
            input_ids[sep] = sp.sep
            input_ids[padding] = sp.pad
        if "attention_mask" in keys:
            out["attention_mask"] = np.ones(total, dtype=np.int64)
            out["attention_mask"][padding] = 0
        bounds = _exclusive_cumsum(sizes * widths).tolist()
        for b, (size, width) in enumerate(zip(sizes.tolist(), widths.tolist(), strict=True)):
            lo, hi = bounds[b], bounds[b + 1]
            yield (order[starts[b]:ends[b]],
                   {key: torch.from_numpy(value[lo:hi].reshape(size, width))
                    for key, value in out.items()})
