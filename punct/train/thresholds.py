"""Per-mark decision thresholds of a multi-label model, tuned on the dev set.

After training, the thresholds are tuned on dev by coordinate ascent on the micro-F1
(grid 0.05 ... 0.95; marks with fewer than ``MIN_SUPPORT`` dev occurrences keep the
default, so a tiny dev set cannot push rare marks into many false alarms).

**No floods, no droughts.** A threshold may not buy dev micro-F1 by predicting a mark far
more (or far less) often than the reference has it: each mark's candidate thresholds are
restricted to those whose dev ratio predicted / reference lies in :data:`RATIO_BAND`
(0.5-2). Where no grid value reaches the band, the tails (:data:`TAIL_GRID`, 0.005-0.03
and 0.97-0.995) and the thresholds that give as many predictions as references (and the
band's edges) are tried too (:func:`band_thresholds`): the words' critical thresholds
(:func:`critical_thresholds`), below which a word gets the mark, which are its
probabilities under plain thresholding and lower where ``decode.combinations`` makes the
mark compete with others. The value closest to the band (in log ratio) is taken. A rare
mark keeps its default unless that default lies outside the band, and after the ascent a
mark that another mark's move pushed out of the band is moved back in (the decisions
interact under ``decode.combinations``). The ratios at
the chosen thresholds are reported (``thresholds.json``, the training log). A mark trained
with a BCE ``pos_weight`` w has its sigmoid raised by log(w) in logit space, so its
untuned default is the calibrated w / (1 + w), the point where the unweighted posterior
is one half; otherwise a rare, heavily weighted mark (EXCLAMATION) outbids a frequent one
(PERIOD) wherever both are likely. The result is written to
``thresholds.json`` in the experiment directory and used by decode, restore and the
sweep (``punct.engine.decode.read_thresholds``). Exclusive label sets decode by argmax and
have no thresholds.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from punct.atomic import atomic_write_text
from punct.engine.combinations import constrained_marks, logit
from punct.engine.decode import THRESHOLDS_FILE

GRID = np.round(np.arange(0.05, 0.951, 0.05), 2)
TAIL_GRID = np.array([0.005, 0.01, 0.02, 0.03, 0.97, 0.98, 0.99, 0.995])
"""Tried for a mark only when no value of ``GRID`` brings its dev ratio into the band (a
mark the model rates very low, or one it floods even at 0.95); see ``band_thresholds``."""
MIN_SUPPORT = 20
"""Marks seen fewer times in dev keep the default threshold."""
RATIO_BAND = (0.5, 2.0)
REPAIR_ROUNDS = 3
"""Rounds of moving marks left outside the band back in after the coordinate ascent."""
"""Allowed dev ratio of predicted to reference occurrences of a mark."""


@dataclass
class TunedThresholds:
    """Thresholds per mark and the dev micro-F1 before and after tuning."""

    thresholds: dict[str, float]
    f1_before: float
    f1_after: float
    ratios: dict[str, float | None] = field(default_factory=dict)
    """Dev predicted / reference occurrences per mark at ``thresholds`` (None: no reference)."""


def _f1(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> np.ndarray:
    denom = 2 * tp + fp + fn
    return np.where(denom > 0, 2 * tp / np.maximum(denom, 1), 0.0)


def micro_f1(probs: np.ndarray, ref: np.ndarray, thresholds: np.ndarray,
             allowed: np.ndarray | None = None) -> float:
    """Micro-F1 over all marks of the decisions ``probs >= thresholds`` (or, with
    ``allowed`` sets of marks, of ``punct.engine.combinations.constrained_marks``)."""
    return scored_decisions(probs, ref, thresholds, allowed)[1]


def scored_decisions(probs: np.ndarray, ref: np.ndarray, thresholds: np.ndarray,
                     allowed: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """The decisions (N, P) at ``thresholds`` and their micro-F1 over all marks."""
    hyp = _decisions(probs, thresholds, allowed)
    tp = float((hyp & ref).sum())
    fp = float((hyp & ~ref).sum())
    fn = float((~hyp & ref).sum())
    return hyp, float(_f1(np.array(tp), np.array(fp), np.array(fn)))


def calibrated_defaults(default: float, n_marks: int,
                        pos_weight: Sequence[float] | np.ndarray | None) -> np.ndarray:
    """Per-mark default thresholds: ``default`` moved to ``w * t / (w * t + 1 - t)`` for a
    mark trained with ``pos_weight`` w (w / (1 + w) at t = 0.5); ``default`` without."""
    t = np.full(n_marks, float(default))
    if pos_weight is None:
        return t
    w = np.asarray(pos_weight, dtype=np.float64)
    if w.shape != (n_marks,) or (w <= 0).any():
        raise ValueError(f"pos_weight must be {n_marks} positive numbers, got {w.tolist()}")
    return w * t / (w * t + 1.0 - t)


def band_distance(predicted: np.ndarray, support: int,
                  band: tuple[float, float] = RATIO_BAND) -> np.ndarray:
    """How far (in log ratio) ``predicted / support`` lies outside ``band`` (0 inside)."""
    ratio = np.maximum(np.asarray(predicted, dtype=np.float64), 0.5) / max(support, 1)
    low, high = band
    below = np.log(low / ratio) if low > 0 else np.zeros_like(ratio)
    above = np.log(ratio / high) if np.isfinite(high) else np.zeros_like(ratio)
    return np.maximum(below, 0.0) + np.maximum(above, 0.0)


def _decisions(probs: np.ndarray, thresholds: np.ndarray,
               allowed: np.ndarray | None) -> np.ndarray:
    return (probs >= thresholds if allowed is None
            else constrained_marks(probs, thresholds, allowed))


def critical_thresholds(probs: np.ndarray, thresholds: np.ndarray, k: int,
                        allowed: np.ndarray | None = None) -> np.ndarray:
    """Per word, the highest threshold of mark ``k`` at which the word gets mark ``k``,
    the other marks' thresholds fixed: its probability under plain thresholding. With
    ``allowed`` sets (``constrained_marks``) a set holding ``k`` must outscore every set
    without it, so the threshold is logit⁻¹(logit p_k + R - S), where R is the best sum of
    the other marks' margins in a set with ``k`` and S the best score of a set without
    (0 where ``k`` is in no allowed set, up to a hair below, so ties go to ``k``)."""
    probs = np.asarray(probs, dtype=np.float64)
    if allowed is None:
        return probs[:, k].copy()
    has_k = allowed[:, k]
    if not has_k.any():
        return np.zeros(len(probs))
    margins = logit(probs) - logit(np.broadcast_to(thresholds, probs.shape[1:]))
    margins[:, k] = 0.0
    scores = margins @ allowed.T.astype(np.float64)  # (N, K + 1), mark k left out
    with_k = scores[:, has_k].max(axis=1)
    without_k = scores[:, ~has_k].max(axis=1)  # the empty set is always allowed
    logit_t = logit(probs[:, k]) + with_k - without_k - 1e-9
    return 1.0 / (1.0 + np.exp(-logit_t))


def band_thresholds(probs: np.ndarray, support: int, band: tuple[float, float] = RATIO_BAND,
                    *, k: int = 0, thresholds: np.ndarray | None = None,
                    allowed: np.ndarray | None = None) -> np.ndarray:
    """Thresholds tried for mark ``k`` when no ``GRID`` value brings it into the band: the
    tails (``TAIL_GRID``) and the thresholds at which it is predicted as often as the
    reference has it, and at the band's edges: the c-th highest of the words'
    ``critical_thresholds`` gives c predictions, ties aside (with plain thresholding, the
    c-th highest dev probability). ``probs``: (N, P)."""
    probs = np.asarray(probs, dtype=np.float64)
    if thresholds is None:
        thresholds = np.full(probs.shape[1], 0.5)
    ranked = np.sort(critical_thresholds(probs, thresholds, k, allowed))[::-1]
    counts = {support, math.ceil(band[0] * support), math.floor(band[1] * support)}
    own = [ranked[c - 1] for c in sorted(counts) if 1 <= c <= len(ranked) and ranked[c - 1] > 0]
    return np.unique(np.concatenate([TAIL_GRID, np.asarray(own, dtype=np.float64)]))


def pred_ref_ratios(probs: np.ndarray, ref: np.ndarray, labels: Sequence[str],
                    thresholds: np.ndarray, allowed: np.ndarray | None = None
                    ) -> dict[str, float | None]:
    """Predicted / reference occurrences per mark of the decisions at ``thresholds``."""
    hyp = _decisions(probs, thresholds, allowed)
    out: dict[str, float | None] = {}
    for k, label in enumerate(labels):
        support = int(ref[:, k].sum())
        out[label] = round(float(hyp[:, k].sum()) / support, 4) if support else None
    return out


def tune_thresholds(probs: np.ndarray, ref: np.ndarray, labels: Sequence[str],
                    default: float = 0.5, min_support: int = MIN_SUPPORT,
                    allowed: np.ndarray | None = None,
                    pos_weight: Sequence[float] | np.ndarray | None = None,
                    band: tuple[float, float] = RATIO_BAND) -> TunedThresholds:
    """Per-mark thresholds on (N, P) probabilities against (N, P) boolean references.

    Coordinate ascent on the micro-F1 over all marks (the selection metric): each mark
    with at least ``min_support`` dev occurrences gets, in turn, the grid value that
    maximises the micro-F1 with the other thresholds fixed, among the values whose dev
    predicted / reference ratio lies in ``band`` (or, where none does, the value closest
    to it); ties keep the current value; two passes. Rare marks keep ``default`` unless
    it floods or starves them beyond ``band``: a threshold fitted to a handful of dev
    words buys recall with many false alarms on new data. ``allowed``: the sets of marks
    a word may get (``decode.combinations``); the decisions then interact, each grid
    value is scored by decoding all marks, and a mark that a later mark's move pushed out
    of the band is moved back at the end. ``pos_weight``: the per-mark weights of the
    training loss; the rare marks then start from their calibrated default
    (``calibrated_defaults``)."""
    probs = np.asarray(probs, dtype=np.float64)
    ref = np.asarray(ref, dtype=bool)
    if probs.shape != ref.shape or probs.ndim != 2 or probs.shape[1] != len(labels):
        raise ValueError(f"probabilities {probs.shape} and references {ref.shape} do not "
                         f"match {len(labels)} labels")
    support = ref.sum(axis=0).astype(int)
    tuned = [k for k in range(len(labels)) if support[k] >= min_support]
    start = calibrated_defaults(default, len(labels), pos_weight)
    chosen = np.full(len(labels), float(default))
    rare = [k for k in range(len(labels)) if k not in tuned]
    chosen[rare] = start[rare]
    before = micro_f1(probs, ref, np.full(len(labels), float(default)), allowed)

    def scores(k: int, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Micro-F1 and band distance of mark ``k`` at each grid value."""
        f1 = np.empty(len(grid))
        dist = np.empty(len(grid))
        for i, value in enumerate(grid):
            trial = chosen.copy()
            trial[k] = value
            hyp, f1[i] = scored_decisions(probs, ref, trial, allowed)
            dist[i] = band_distance(np.array(hyp[:, k].sum()), int(support[k]), band)
        return f1, dist

    def candidates(k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The grid for mark ``k`` (the current value first: ties keep it), extended when
        no value of the main grid reaches the band, and its scores."""
        grid = np.append(chosen[k], GRID)
        f1, dist = scores(k, grid)
        if dist.min() > 0:
            extra = band_thresholds(probs, int(support[k]), band, k=k, thresholds=chosen,
                                    allowed=allowed)
            extra_f1, extra_dist = scores(k, extra)
            grid = np.append(grid, extra)
            f1, dist = np.append(f1, extra_f1), np.append(dist, extra_dist)
        return grid, f1, dist

    for _ in range(2):
        for k in tuned:
            grid, f1, dist = candidates(k)
            ok = dist <= dist.min() + 1e-12  # in the band, or as close to it as any
            chosen[k] = float(grid[int(np.argmax(np.where(ok, f1, -1.0)))])
    # A rare mark whose default floods or starves it moves into the band; so does a tuned
    # mark that a later mark's move pushed out (with ``allowed`` sets the decisions
    # interact). Repeated while something moves, at most REPAIR_ROUNDS times.
    for _ in range(REPAIR_ROUNDS):
        moved = False
        for k in [*tuned, *rare]:
            if support[k] == 0:
                continue
            grid, f1, dist = candidates(k)
            if dist[0] > 0:
                ok = dist <= dist.min() + 1e-12
                best = float(grid[int(np.argmax(np.where(ok, f1, -1.0)))])
                moved |= best != chosen[k]
                chosen[k] = best
        if not moved:
            break
    after = micro_f1(probs, ref, chosen, allowed)
    return TunedThresholds(dict(zip(labels, chosen.tolist(), strict=True)), before, after,
                           pred_ref_ratios(probs, ref, labels, chosen, allowed))


def write_thresholds(exp_dir: str | Path, label_set: str, tuned: TunedThresholds) -> Path:
    """Write ``thresholds.json`` (atomically) and return its path."""
    path = Path(exp_dir) / THRESHOLDS_FILE
    atomic_write_text(path, json.dumps({
        "label_set": label_set, "thresholds": tuned.thresholds,
        "dev_micro_f1_default": round(tuned.f1_before, 6),
        "dev_micro_f1_tuned": round(tuned.f1_after, 6),
        "dev_pred_ref_ratio": tuned.ratios, "ratio_band": list(RATIO_BAND),
    }, indent=2) + "\n")
    return path
