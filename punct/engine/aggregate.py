"""Aggregation of per-position predictions of overlapping windows into per-word ones.

Positions are matched to words by ``word_ids`` (global word index, -1 = no word).
Two rules:
- ``mean``: the mean of the probabilities over all predictions of a word (Nagy et al.;
  AutoPunct);
- ``sum``: the sum of activations (logits) over predictions, turned back into
  probabilities with a sigmoid (marks of a multi-label set), a softmax over O (logit 0)
  plus the marks (an exclusive set) or a softmax (capitalisation) (Courtland et al.).
  A family may hand its raw activations in ``Prediction.extra["punct_logits"]`` /
  ``["cap_logits"]``; otherwise logit(p) (log(p / p_O) when exclusive) and log(p) are
  used.
"""

from __future__ import annotations

import numpy as np

from punct.errors import PunctInputError

EPS = 1e-7
MODES = ("mean", "sum")


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, EPS, 1.0 - EPS)
    return np.log(p) - np.log1p(-p)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def punct_terms(mode: str, exclusive: bool, p: np.ndarray, logits: np.ndarray | None
                ) -> np.ndarray:
    """What one prediction adds to a word's mark accumulator (float64 (M, P)): the
    probabilities (``mean``), or the activations (``sum``; from ``p`` when not given)."""
    if mode != "sum":
        return p
    if logits is not None:
        return logits
    if exclusive:
        p_o = np.clip(1.0 - p.sum(axis=1, keepdims=True), EPS, 1.0)
        return np.log(np.clip(p, EPS, 1.0)) - np.log(p_o)
    return _logit(p)


def cap_terms(mode: str, c: np.ndarray, logits: np.ndarray | None) -> np.ndarray:
    """What one prediction adds to a word's casing accumulator (float64 (M, 3))."""
    if mode != "sum":
        return c
    return logits if logits is not None else np.log(np.clip(c, EPS, 1.0))


def mean_divisor(counts: np.ndarray) -> np.ndarray:
    """The prediction counts as float64 divisors of the ``mean`` rule; a word never
    predicted is an error."""
    missing = np.flatnonzero(counts == 0)
    if missing.size:
        raise ValueError(f"{missing.size} words were never predicted (first: {missing[0]})")
    return counts.astype(np.float64)


def finish(mode: str, exclusive: bool, punct: np.ndarray, cap: np.ndarray | None,
           counts: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Per-word probabilities from the accumulated sums and the prediction counts;
    every word must have been predicted at least once."""
    per_word = mean_divisor(counts)[:, None]  # (for every rule: no word unpredicted)
    if mode == "mean":
        out = punct / per_word
        out_cap = cap / per_word if cap is not None else None
    elif exclusive:
        out = _softmax(np.pad(punct, ((0, 0), (1, 0))))[:, 1:]
        out_cap = _softmax(cap) if cap is not None else None
    else:
        out = _sigmoid(punct)
        out_cap = _softmax(cap) if cap is not None else None
    return out, out_cap, counts.copy()


class Aggregator:
    """Accumulates window predictions for ``n_words`` words."""

    def __init__(self, n_words: int, n_punct: int, with_cap: bool, mode: str = "mean",
                 exclusive: bool = False):
        if mode not in MODES:
            raise PunctInputError(f"unknown aggregation {mode!r} (known: {', '.join(MODES)})")
        self.mode = mode
        self.exclusive = exclusive
        self.n_words = n_words
        self.counts = np.zeros(n_words, dtype=np.int64)
        self.punct = np.zeros((n_words, n_punct), dtype=np.float64)
        self.cap = np.zeros((n_words, 3), dtype=np.float64) if with_cap else None

    def add(self, word_ids: np.ndarray, punct: np.ndarray, cap: np.ndarray | None = None,
            punct_logits: np.ndarray | None = None, cap_logits: np.ndarray | None = None
            ) -> None:
        """Add one batch: ``word_ids`` (B, T), ``punct`` (B, T, P) probabilities,
        ``cap`` (B, T, 3) probabilities (or None); optional raw activations for ``sum``."""
        ids = np.asarray(word_ids).reshape(-1)
        keep = ids >= 0
        if ids[keep].size and ids[keep].max() >= self.n_words:
            raise ValueError(f"word id {ids[keep].max()} out of range ({self.n_words} words)")
        idx = ids[keep]
        np.add.at(self.counts, idx, 1)
        p = np.asarray(punct, dtype=np.float64).reshape(len(ids), -1)[keep]
        pl = (None if punct_logits is None else
              np.asarray(punct_logits, dtype=np.float64).reshape(len(ids), -1)[keep])
        np.add.at(self.punct, idx, punct_terms(self.mode, self.exclusive, p, pl))
        if self.cap is not None:
            if cap is None:
                raise ValueError("this aggregator expects capitalisation probabilities")
            c = np.asarray(cap, dtype=np.float64).reshape(len(ids), -1)[keep]
            cl = (None if cap_logits is None else
                  np.asarray(cap_logits, dtype=np.float64).reshape(len(ids), -1)[keep])
            np.add.at(self.cap, idx, cap_terms(self.mode, c, cl))

    def result(self) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """Per-word mark probabilities (N, P), cap probabilities (N, 3) or None, counts (N,).

        Every word must have been predicted at least once.
        """
        return finish(self.mode, self.exclusive, self.punct, self.cap, self.counts)


class SlotAggregator:
    """The engine's aggregator: takes the predictions at word slots only, batch by batch,
    and sums them per word at the end in the order they came (float64), so that every
    word gets exactly the sums of :class:`Aggregator` (``np.add.at`` in batch order).

    It reads only what its rule needs (:meth:`wants`): the probabilities for ``mean``,
    the activations for ``sum`` where given (else the probabilities)."""

    def __init__(self, n_words: int, mode: str = "mean", exclusive: bool = False):
        if mode not in MODES:
            raise PunctInputError(f"unknown aggregation {mode!r} (known: {', '.join(MODES)})")
        self.n_words = n_words
        self.mode = mode
        self.exclusive = exclusive
        self._ids: list[np.ndarray] = []
        self._parts: list[tuple[np.ndarray | None, ...]] = []

    def wants(self, punct: object, cap: object, punct_logits: object, cap_logits: object
              ) -> tuple[bool, bool, bool, bool]:
        """Which of a batch's outputs :meth:`add` reads (the others need not be
        gathered): the activations replace the probabilities under ``sum``."""
        has = (punct is not None, cap is not None, punct_logits is not None,
               cap_logits is not None and cap is not None)
        if self.mode != "sum":
            return has[0], has[1], False, False
        return has[0] and not has[2], has[1] and not has[3], has[2], has[3]

    def add(self, word_ids: np.ndarray, punct: np.ndarray | None,
            cap: np.ndarray | None = None, punct_logits: np.ndarray | None = None,
            cap_logits: np.ndarray | None = None) -> None:
        """Add the slots of one batch, in row-major order: ``word_ids`` (M,) and the
        matching rows of ``punct`` (M, P), ``cap`` (M, 3) or None, and the activations
        (any float dtype). Only what the rule reads is kept."""
        ids = np.asarray(word_ids, dtype=np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= self.n_words):
            raise ValueError(f"word id {ids.max()} out of range ({self.n_words} words)")
        if self.mode == "sum":  # the activations replace the probabilities
            parts = (None if punct_logits is not None else punct,
                     None if cap_logits is not None else cap, punct_logits, cap_logits)
        else:
            parts = (punct, cap, None, None)
        if parts[0] is None and parts[2] is None:
            raise ValueError("no mark probabilities or activations to aggregate")
        if self._parts and [p is None for p in parts] != [p is None for p in self._parts[0]]:
            raise ValueError("every batch must bring the same outputs (capitalisation, "
                             "activations) as the first")
        self._ids.append(ids)
        self._parts.append(parts)

    def _column(self, k: int) -> np.ndarray | None:
        """Output ``k`` of every batch in arrival order (M, C) with contiguous columns
        (``ordered_sums`` reads a column at a time), as it came (float32 from the engine:
        ``ordered_sums`` widens it exactly, no float64 copy is needed). The engine hands
        its outputs in that layout already (one part: no copy)."""
        parts = [p[k] for p in self._parts]
        if parts[0] is None:
            return None
        if len(parts) == 1 and parts[0].T.flags.c_contiguous:
            return parts[0]
        return np.concatenate([p.T for p in parts], axis=1).T

    def result(self, n_punct: int = 0) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """As :meth:`Aggregator.result`; ``n_punct`` for a run without any prediction."""
        if not self._ids:
            counts = np.zeros(self.n_words, dtype=np.int64)
            return finish(self.mode, self.exclusive,
                          np.zeros((self.n_words, n_punct)), None, counts)
        ids = np.concatenate(self._ids)
        counts = np.bincount(ids, minlength=self.n_words).astype(np.int64, copy=False)
        punct, cap, punct_logits, cap_logits = (self._column(k) for k in range(4))
        # the mean divides each column's sums as they are copied out: one pass less
        divisor = mean_divisor(counts) if self.mode == "mean" else None
        acc = ordered_sums(ids, self._terms(punct, punct_logits, True), self.n_words, divisor)
        acc_cap = (None if cap is None and cap_logits is None else
                   ordered_sums(ids, self._terms(cap, cap_logits, False), self.n_words,
                                divisor))
        if divisor is not None:
            return acc, acc_cap, counts
        return finish(self.mode, self.exclusive, acc, acc_cap, counts)

    def _terms(self, probs: np.ndarray | None, logits: np.ndarray | None, marks: bool
               ) -> np.ndarray:
        """What each slot adds: the outputs as they came (``ordered_sums`` widens them
        to float64 exactly), or terms derived from the probabilities in float64."""
        if logits is not None:
            return logits
        assert probs is not None  # ``add`` keeps one of the two
        if self.mode != "sum":
            return probs
        p = probs.astype(np.float64, copy=False)
        return punct_terms("sum", self.exclusive, p, None) if marks else cap_terms("sum", p, None)


def ordered_sums(ids: np.ndarray, terms: np.ndarray, n_words: int,
                 divisor: np.ndarray | None = None) -> np.ndarray:
    """(N, C): per word, the sum of its rows of ``terms`` added one by one in their order
    of appearance, starting from 0.0 (the exact float64 sums of ``np.add.at``):
    ``np.bincount`` with weights adds in that order (in float64, whatever the weights'
    float dtype), one column at a time (fastest when ``terms`` has contiguous columns).
    ``divisor`` (N,) float64: each word's sums divided by it (the same quotients as
    dividing the finished sums). The result has contiguous columns: the per-word
    decisions compare whole columns."""
    out = np.empty((terms.shape[1], n_words), dtype=np.float64)
    for k in range(terms.shape[1]):
        sums = np.bincount(ids, weights=terms[:, k], minlength=n_words)
        if divisor is None:
            out[k] = sums
        else:
            np.divide(sums, divisor, out=out[k])
    return out.T
