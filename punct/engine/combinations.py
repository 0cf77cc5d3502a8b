"""Decisions of a multi-label model restricted to the sets of marks seen in training.

One sigmoid per mark decides each mark on its own, so a word can get a set of marks that
never occurs in the language of the corpus, e.g. PERIOD and EXCLAMATION together at a
document end. With ``decode.combinations: seen`` the trainer lists the sets of marks that
occur on one training word (the empty set always counts), and the decision picks, among
those sets, the one with the highest sum of margins ``logit(p_k) - logit(t_k)`` over its
marks. Without the restriction the same rule gives back plain thresholding (every mark
with ``p_k >= t_k``), so the tuned thresholds keep their meaning.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

_EPS = 1e-6


def seen_combinations(targets: Iterable[np.ndarray], labels: Sequence[str]) -> list[list[str]]:
    """The distinct non-empty sets of marks in (N, P) multi-hot target matrices, each set
    in label order, sorted by size and then by label order."""
    seen: set[tuple[int, ...]] = set()
    for matrix in targets:
        rows = np.asarray(matrix) > 0.5
        for row in np.unique(rows, axis=0) if rows.size else []:
            marks = tuple(int(k) for k in np.flatnonzero(row))
            if marks:
                seen.add(marks)
    return [[labels[k] for k in marks] for marks in sorted(seen, key=lambda m: (len(m), m))]


def combination_matrix(combinations: Sequence[Sequence[str]], labels: Sequence[str]
                       ) -> np.ndarray:
    """(K + 1, P) bool: the empty set first, then each listed set of marks."""
    index = {lab: k for k, lab in enumerate(labels)}
    out = np.zeros((len(combinations) + 1, len(labels)), dtype=bool)
    for row, marks in enumerate(combinations, start=1):
        unknown = [m for m in marks if m not in index]
        if unknown:
            raise ValueError(f"decode.combinations: unknown mark(s) {unknown} "
                             f"(labels: {', '.join(labels)})")
        out[row, [index[m] for m in marks]] = True
    return out


def logit(p: np.ndarray) -> np.ndarray:
    """log(p / (1 - p)) in float64, p clipped to [1e-6, 1 - 1e-6] (the decisions' margins)."""
    p = np.clip(np.asarray(p, dtype=np.float64), _EPS, 1.0 - _EPS)
    return np.log(p) - np.log1p(-p)


def constrained_marks(punct: np.ndarray, thresholds: float | Sequence[float] | np.ndarray,
                      allowed: np.ndarray) -> np.ndarray:
    """(N, P) decisions: per word, the allowed set (rows of ``allowed``, the empty set
    among them) with the highest sum of margins ``logit(p) - logit(threshold)``."""
    margins = logit(punct) - logit(np.broadcast_to(thresholds, punct.shape[1:]))
    scores = margins @ allowed.T.astype(np.float64)  # (N, K)
    return allowed[scores.argmax(axis=1)]
