"""Is one system's micro-F1 above another's on the same test set beyond what the choice of
utterances explains? Paired bootstrap resampling (Koehn 2004) over utterances.

Both systems are scored utterance by utterance as ``punct.score.metrics.score_tables``
scores them (the same word alignment, label mapping and non-speech rows), giving each
utterance its micro counts (TP, FP, FN over the marks). A resample draws as many
utterances as the set has, with replacement, the same draw for both systems, and adds
their counts; micro-F1 is computed from the sums (F1 is not a mean of per-utterance
figures). Over ``samples`` draws this gives the spread of the difference:
- ``low``/``high``: the percentile interval of the difference at ``level`` (95 %);
- ``p_value``: two-sided, twice the share of draws on the far side of zero from the
  observed difference ((count + 1) / (samples + 1), so never 0), at most 1.

The utterance is the unit because it is what a data dir holds as one independent piece
(a talk block, a recording); words of one utterance are not independent draws. With few
utterances (the mini test set has 12) the interval is coarse, and wide.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from punct.data.nonspeech import DEFAULT_MAP
from punct.errors import PunctInputError
from punct.labels import LabelSet
from punct.score.metrics import score_tables
from punct.score.tables import load_scores
from punct.wordtable import WordRow, read_word_table

DEFAULT_SAMPLES = 1000


@dataclass(frozen=True)
class Bootstrap:
    """The difference a - b of micro-F1 (in points) and its spread over resamples."""

    delta: float
    low: float
    high: float
    p_value: float
    level: float
    samples: int
    utterances: int

    def as_dict(self) -> dict[str, Any]:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def utterance_counts(ref: Mapping[str, Sequence[WordRow]],
                     hyp: Mapping[str, Sequence[WordRow]], label_set: LabelSet | str,
                     nonspeech: str | None = None) -> np.ndarray:
    """(U, 3) int64: the micro TP, FP, FN of every utterance of ``ref``, in its order
    (``nonspeech``: the map of rows that are no slots, as ``score_tables`` takes it)."""
    missing = [utt for utt in ref if utt not in hyp]
    if missing:
        raise PunctInputError(f"the hypothesis has no utterance {missing[0]} "
                              f"({len(missing)} missing)")
    out = np.zeros((len(ref), 3), dtype=np.int64)
    for k, (utt, rows) in enumerate(ref.items()):
        micro = score_tables({utt: rows}, {utt: hyp[utt]}, label_set,
                             nonspeech=nonspeech)["all"]["punct"]["micro"]
        out[k] = (micro["tp"], micro["fp"], micro["fn"])
    return out


def micro_f1(counts: np.ndarray) -> np.ndarray:
    """Micro-F1 in points from summed counts (..., 3); 0 where nothing was marked or due."""
    tp, fp, fn = counts[..., 0], counts[..., 1], counts[..., 2]
    den = 2 * tp + fp + fn
    return np.where(den > 0, 200.0 * tp / np.maximum(den, 1), 0.0)


def paired_bootstrap(a: np.ndarray, b: np.ndarray, samples: int = DEFAULT_SAMPLES,
                     seed: int = 0, level: float = 0.95) -> Bootstrap:
    """Micro-F1 of ``a`` minus ``b`` (per-utterance counts, same utterances) and its
    bootstrap interval and p-value (module docstring)."""
    if a.shape != b.shape or a.ndim != 2 or a.shape[1] != 3:
        raise PunctInputError(f"paired counts must both be (U, 3), got {a.shape} and {b.shape}")
    if len(a) == 0:
        raise PunctInputError("no utterances to resample")
    if samples < 1 or not 0.0 < level < 1.0:
        raise PunctInputError(f"need samples >= 1 and 0 < level < 1, got {samples}, {level}")
    delta = float(micro_f1(a.sum(0)) - micro_f1(b.sum(0)))
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(a), size=(samples, len(a)))
    weights = np.stack([np.bincount(row, minlength=len(a)) for row in draws])  # (S, U)
    deltas = micro_f1(weights @ a) - micro_f1(weights @ b)
    tail = (1.0 - level) / 2
    low, high = np.quantile(deltas, [tail, 1.0 - tail])
    far = int((deltas <= 0).sum()) if delta > 0 else int((deltas >= 0).sum())
    p_value = 1.0 if delta == 0 else min(1.0, 2 * (far + 1) / (samples + 1))
    return Bootstrap(delta, float(low), float(high), p_value, level, samples, len(a))


def compare_scores(path_a: str | Path, path_b: str | Path, samples: int = DEFAULT_SAMPLES,
                   seed: int = 0, level: float = 0.95) -> Bootstrap:
    """The paired bootstrap of two systems' ``scores.json`` files on one test set: the
    word tables they name (``ref``, ``hyp``, relative to the working directory, as the
    stage driver writes them) are read again and scored per utterance with the non-speech
    map they were scored with; the sums must give the micro counts each file recorded."""
    doc_a, doc_b = load_scores([path_a])[0], load_scores([path_b])[0]
    for doc in (doc_a, doc_b):  # files written before the key was recorded: the default
        doc["nonspeech"] = doc.get("nonspeech") or DEFAULT_MAP
    for key in ("ref", "label_set", "nonspeech"):
        if doc_a.get(key) != doc_b.get(key):
            raise PunctInputError(f"{path_a} and {path_b} differ in {key}: "
                                  f"{doc_a.get(key)!r} against {doc_b.get(key)!r}")
    if not doc_a.get("ref") or not doc_a.get("hyp") or not doc_b.get("hyp"):
        raise PunctInputError(f"{path_a} or {path_b} does not name its ref and hyp word tables")
    ref = read_word_table(doc_a["ref"])
    counts = []
    for path, doc in ((path_a, doc_a), (path_b, doc_b)):
        utt = utterance_counts(ref, read_word_table(doc["hyp"]), doc["label_set"],
                               doc["nonspeech"])
        micro = doc["metrics"]["all"]["punct"]["micro"]
        if tuple(utt.sum(0)) != (micro["tp"], micro["fp"], micro["fn"]):
            raise PunctInputError(f"{path}: the word tables it names ({doc['hyp']}) score "
                                  f"TP/FP/FN {tuple(utt.sum(0).tolist())}, the file says "
                                  f"{(micro['tp'], micro['fp'], micro['fn'])} (stale scores?)")
        counts.append(utt)
    return paired_bootstrap(counts[0], counts[1], samples, seed, level)
