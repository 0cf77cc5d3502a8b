"""Word -> sub-word piece ids as arrays: every distinct word form gets a type id once,
its pieces come from the featurizer's (batched, fast) tokenisation, and a whole run of
words is then looked up with one dict pass and numpy gathers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain

import numpy as np


class PieceTable:
    """Growing table of word types: ``flat`` pieces, ``start`` and ``length`` per type."""

    def __init__(self, encode: Callable[[list[str]], list[list[int]]]):
        self.encode = encode  # words -> piece ids of each (cached, truncated, never empty)
        self.index: dict[str, int] = {}
        self.words: list[str] = []  # the form of each type, in type order
        self.flat = np.zeros(0, dtype=np.int64)
        self.start = np.zeros(0, dtype=np.int64)
        self.length = np.zeros(0, dtype=np.int64)
        self._facts: dict[Callable[[Sequence[str]], np.ndarray], np.ndarray] = {}

    def type_flags(self, fact: Callable[[Sequence[str]], np.ndarray]) -> np.ndarray:
        """(types,) bool: ``fact`` (one flag per form of a list of forms) of every type's
        form, each type's computed once: a later call computes only the types added since
        (a streaming run meets the same forms chunk after chunk)."""
        known = self._facts.get(fact, np.zeros(0, dtype=bool))
        if len(known) < len(self.words):
            new = np.asarray(fact(self.words[len(known):]), dtype=bool)
            known = self._facts[fact] = np.concatenate([known, new])
        return known

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
        self.words.extend(words)

    def lookup(self, groups: Sequence[Sequence[str]]) -> np.ndarray:
        """Type ids (N,) of the words of ``groups`` (e.g. each utterance's words), one
        after the other; unseen forms are tokenised first, in one batch."""
        count = sum(map(len, groups))
        try:
            return self._types(groups, count)
        except KeyError:
            self._grow(sorted(set(chain.from_iterable(groups)).difference(self.index)))
            return self._types(groups, count)

    def _types(self, groups: Sequence[Sequence[str]], count: int) -> np.ndarray:
        # one dict pass straight into the array: no list of all the words
        return np.fromiter(map(self.index.__getitem__, chain.from_iterable(groups)),
                           dtype=np.int64, count=count)
