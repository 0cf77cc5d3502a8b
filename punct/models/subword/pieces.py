"""Word -> sub-word piece ids as arrays: every distinct word form gets a type id once,
its pieces come from the featurizer's (batched, fast) tokenisation, and a whole run of
words is then looked up with one dict pass and numpy gathers."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


class PieceTable:
    """Growing table of word types: ``flat`` pieces, ``start`` and ``length`` per type."""

    def __init__(self, encode: Callable[[list[str]], list[list[int]]]):
        self.encode = encode  # words -> piece ids of each (cached, truncated, never empty)
        self.index: dict[str, int] = {}
        self.flat = np.zeros(0, dtype=np.int64)
        self.start = np.zeros(0, dtype=np.int64)
        self.length = np.zeros(0, dtype=np.int64)

    def _grow(self, words: list[str]) -> None:
        pieces = self.encode(words)
        lengths = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
        new_flat = np.fromiter((i for p in pieces for i in p), dtype=np.int64,
                               count=int(lengths.sum()))
        starts = np.zeros(len(pieces), dtype=np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        base = len(self.index)
        self.start = np.concatenate([self.start, starts + self.flat.size])
        self.length = np.concatenate([self.length, lengths])
        self.flat = np.concatenate([self.flat, new_flat])
        self.index.update(zip(words, range(base, base + len(words)), strict=True))

    def lookup(self, words: Sequence[str]) -> np.ndarray:
        """Type ids (N,) of ``words``; unseen forms are tokenised first, in one batch."""
        try:
            return self._types(words)
        except KeyError:
            self._grow(sorted(set(words).difference(self.index)))
            return self._types(words)

    def _types(self, words: Sequence[str]) -> np.ndarray:
        # one dict pass straight into the array: no intermediate tuple or list
        return np.fromiter(map(self.index.__getitem__, words), dtype=np.int64,
                           count=len(words))
