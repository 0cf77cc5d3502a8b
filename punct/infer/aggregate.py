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


class Aggregator:
    """Accumulates window predictions for ``n_words`` words."""

    def __init__(self, n_words: int, n_punct: int, with_cap: bool, mode: str = "mean",
                 exclusive: bool = False):
        if mode not in MODES:
            raise ValueError(f"unknown aggregation {mode!r} (known: {', '.join(MODES)})")
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
        if self.mode == "sum":
            if punct_logits is not None:
                p = np.asarray(punct_logits, dtype=np.float64).reshape(len(ids), -1)[keep]
            elif self.exclusive:
                p_o = np.clip(1.0 - p.sum(axis=1, keepdims=True), EPS, 1.0)
                p = np.log(np.clip(p, EPS, 1.0)) - np.log(p_o)
            else:
                p = _logit(p)
        np.add.at(self.punct, idx, p)
        if self.cap is not None:
            if cap is None:
                raise ValueError("this aggregator expects capitalisation probabilities")
            c = np.asarray(cap, dtype=np.float64).reshape(len(ids), -1)[keep]
            if self.mode == "sum":
                c = (np.asarray(cap_logits, dtype=np.float64).reshape(len(ids), -1)[keep]
                     if cap_logits is not None else np.log(np.clip(c, EPS, 1.0)))
            np.add.at(self.cap, idx, c)

    def result(self) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """Per-word mark probabilities (N, P), cap probabilities (N, 3) or None, counts (N,).

        Every word must have been predicted at least once.
        """
        missing = np.flatnonzero(self.counts == 0)
        if missing.size:
            raise ValueError(f"{missing.size} words were never predicted (first: {missing[0]})")
        if self.mode == "mean":
            punct = self.punct / self.counts[:, None]
            cap = self.cap / self.counts[:, None] if self.cap is not None else None
        elif self.exclusive:
            punct = _softmax(np.pad(self.punct, ((0, 0), (1, 0))))[:, 1:]
            cap = _softmax(self.cap) if self.cap is not None else None
        else:
            punct = _sigmoid(self.punct)
            cap = _softmax(self.cap) if self.cap is not None else None
        return punct, cap, self.counts.copy()
