"""Per-mark decision thresholds of a multi-label model, tuned on the dev set.

After training, the thresholds are tuned on dev by coordinate ascent on the micro-F1
(grid 0.05 ... 0.95; marks with fewer than ``MIN_SUPPORT`` dev occurrences keep the
default, so a tiny dev set cannot push rare marks into many false alarms). A mark trained
with a BCE ``pos_weight`` w has its sigmoid raised by log(w) in logit space, so its
untuned default is the calibrated w / (1 + w), the point where the unweighted posterior
is one half; otherwise a rare, heavily weighted mark (EXCLAMATION) outbids a frequent one
(PERIOD) wherever both are likely. The result is written to
``thresholds.json`` in the experiment directory and used by decode, restore and the
sweep (``punct.infer.decode.read_thresholds``). Exclusive label sets decode by argmax and
have no thresholds.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from punct.infer.combinations import constrained_marks
from punct.infer.decode import THRESHOLDS_FILE

GRID = np.round(np.arange(0.05, 0.951, 0.05), 2)
MIN_SUPPORT = 20
"""Marks seen fewer times in dev keep the default threshold."""


@dataclass
class TunedThresholds:
    """Thresholds per mark and the dev micro-F1 before and after tuning."""

    thresholds: dict[str, float]
    f1_before: float
    f1_after: float


def _f1(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> np.ndarray:
    denom = 2 * tp + fp + fn
    return np.where(denom > 0, 2 * tp / np.maximum(denom, 1), 0.0)


def micro_f1(probs: np.ndarray, ref: np.ndarray, thresholds: np.ndarray,
             allowed: np.ndarray | None = None) -> float:
    """Micro-F1 over all marks of the decisions ``probs >= thresholds`` (or, with
    ``allowed`` sets of marks, of ``punct.infer.combinations.constrained_marks``)."""
    hyp = probs >= thresholds if allowed is None else constrained_marks(probs, thresholds,
                                                                        allowed)
    tp = float((hyp & ref).sum())
    fp = float((hyp & ~ref).sum())
    fn = float((~hyp & ref).sum())
    return float(_f1(np.array(tp), np.array(fp), np.array(fn)))


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


def tune_thresholds(probs: np.ndarray, ref: np.ndarray, labels: Sequence[str],
                    default: float = 0.5, min_support: int = MIN_SUPPORT,
                    allowed: np.ndarray | None = None,
                    pos_weight: Sequence[float] | np.ndarray | None = None
                    ) -> TunedThresholds:
    """Per-mark thresholds on (N, P) probabilities against (N, P) boolean references.

    Coordinate ascent on the micro-F1 over all marks (the selection metric): each mark
    with at least ``min_support`` dev occurrences gets, in turn, the grid value that
    maximises the micro-F1 with the other thresholds fixed (ties keep the current value);
    two passes. Rare marks keep ``default``: a threshold fitted to a handful of dev words
    buys recall with many false alarms on new data. ``allowed``: the sets of marks a word
    may get (``decode.combinations``); the decisions then interact, and each grid value
    is scored by decoding all marks. ``pos_weight``: the per-mark weights of the training
    loss; the rare marks then keep their calibrated default (``calibrated_defaults``)."""
    probs = np.asarray(probs, dtype=np.float64)
    ref = np.asarray(ref, dtype=bool)
    if probs.shape != ref.shape or probs.ndim != 2 or probs.shape[1] != len(labels):
        raise ValueError(f"probabilities {probs.shape} and references {ref.shape} do not "
                         f"match {len(labels)} labels")
    tuned = [k for k in range(len(labels)) if int(ref[:, k].sum()) >= min_support]
    start = calibrated_defaults(default, len(labels), pos_weight)
    chosen = np.full(len(labels), float(default))
    rare = [k for k in range(len(labels)) if k not in tuned]
    chosen[rare] = start[rare]

    def counts(k: int, thresholds: np.ndarray) -> np.ndarray:
        hyp = probs[:, k][:, None] >= thresholds[None, :]
        pos = ref[:, k][:, None]
        return np.stack([(hyp & pos).sum(0), (hyp & ~pos).sum(0), (~hyp & pos).sum(0)])

    if allowed is not None:
        result = _tune_constrained(probs, ref, labels, chosen, tuned, allowed)
        result.f1_before = micro_f1(probs, ref, np.full(len(labels), float(default)), allowed)
        return result
    for _ in range(2):
        for k in tuned:
            others = sum(counts(j, chosen[j:j + 1])[:, 0] for j in range(len(labels)) if j != k)
            grid = np.append(chosen[k], GRID)  # the current value first: ties keep it
            tp, fp, fn = counts(k, grid) + np.asarray(others, dtype=np.int64)[:, None]
            chosen[k] = float(grid[int(np.argmax(_f1(tp, fp, fn)))])
    before = micro_f1(probs, ref, np.full(len(labels), float(default)))
    after = micro_f1(probs, ref, chosen)
    return TunedThresholds(dict(zip(labels, chosen.tolist(), strict=True)), before, after)


def _tune_constrained(probs: np.ndarray, ref: np.ndarray, labels: Sequence[str],
                      chosen: np.ndarray, tuned: list[int], allowed: np.ndarray
                      ) -> TunedThresholds:
    """The coordinate ascent of ``tune_thresholds`` under a restriction to ``allowed``."""
    before = micro_f1(probs, ref, chosen, allowed)
    best = before
    for _ in range(2):
        for k in tuned:
            for value in GRID:
                trial = chosen.copy()
                trial[k] = value
                score = micro_f1(probs, ref, trial, allowed)
                if score > best:
                    best, chosen = score, trial
    return TunedThresholds(dict(zip(labels, chosen.tolist(), strict=True)), before, best)


def write_thresholds(exp_dir: str | Path, label_set: str, tuned: TunedThresholds) -> Path:
    """Write ``thresholds.json`` (atomically) and return its path."""
    path = Path(exp_dir) / THRESHOLDS_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({
        "label_set": label_set, "thresholds": tuned.thresholds,
        "dev_micro_f1_default": round(tuned.f1_before, 6),
        "dev_micro_f1_tuned": round(tuned.f1_after, 6),
    }, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path
