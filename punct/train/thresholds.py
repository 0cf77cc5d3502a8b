"""Per-mark decision thresholds of a multi-label model, tuned on the dev set.

After training, each mark's threshold is the value on a grid (0.05 ... 0.95) that
maximises that mark's F1 on dev; a mark that never occurs in dev, or whose best F1 is
no better than at the default threshold, keeps the default. The result is written to
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

from punct.infer.decode import THRESHOLDS_FILE

GRID = np.round(np.arange(0.05, 0.951, 0.05), 2)


@dataclass
class TunedThresholds:
    """Thresholds per mark and the dev micro-F1 before and after tuning."""

    thresholds: dict[str, float]
    f1_before: float
    f1_after: float


def _f1(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> np.ndarray:
    denom = 2 * tp + fp + fn
    return np.where(denom > 0, 2 * tp / np.maximum(denom, 1), 0.0)


def micro_f1(probs: np.ndarray, ref: np.ndarray, thresholds: np.ndarray) -> float:
    """Micro-F1 over all marks of the decisions ``probs >= thresholds``."""
    hyp = probs >= thresholds
    tp = float((hyp & ref).sum())
    fp = float((hyp & ~ref).sum())
    fn = float((~hyp & ref).sum())
    return float(_f1(np.array(tp), np.array(fp), np.array(fn)))


def tune_thresholds(probs: np.ndarray, ref: np.ndarray, labels: Sequence[str],
                    default: float = 0.5) -> TunedThresholds:
    """Best threshold per mark on (N, P) probabilities against (N, P) boolean references."""
    probs = np.asarray(probs, dtype=np.float64)
    ref = np.asarray(ref, dtype=bool)
    if probs.shape != ref.shape or probs.ndim != 2 or probs.shape[1] != len(labels):
        raise ValueError(f"probabilities {probs.shape} and references {ref.shape} do not "
                         f"match {len(labels)} labels")
    chosen = np.full(len(labels), float(default))
    for k in range(len(labels)):
        positive = ref[:, k]
        if not positive.any():
            continue
        hyp = probs[:, k][:, None] >= np.append(GRID, default)[None, :]
        tp = (hyp & positive[:, None]).sum(axis=0)
        fp = (hyp & ~positive[:, None]).sum(axis=0)
        fn = (~hyp & positive[:, None]).sum(axis=0)
        f1 = _f1(tp, fp, fn)
        best = int(np.argmax(f1[:-1]))
        if f1[best] > f1[-1]:
            chosen[k] = float(GRID[best])
    before = micro_f1(probs, ref, np.full(len(labels), float(default)))
    after = micro_f1(probs, ref, chosen)
    return TunedThresholds(dict(zip(labels, chosen.tolist(), strict=True)), before, after)


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
