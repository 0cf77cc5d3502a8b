"""Is one system's micro-F1 above another's on the same test set beyond what the choice of
utterances explains? Paired tests over utterances.

Both systems are scored utterance by utterance as ``punct.score.metrics.score_tables``
scores them (the same word alignment, label mapping and non-speech rows), giving each
utterance its micro counts (TP, FP, FN over the marks); micro-F1 is always computed from
summed counts (F1 is not a mean of per-utterance figures).
- ``p_value``: paired approximate randomization (Noreen 1989; Riezler and Maxwell 2005):
  each draw swaps the two systems' counts on each utterance with probability 1/2, and p
  is the share of draws whose |difference| reaches the observed one, (count + 1) /
  (samples + 1). With at most ``samples`` distinct swaps (2^U, U utterances) every swap
  is enumerated and p is exact. Its floor is 2^(1 - U): three utterances can never give
  p below 0.25, whatever the figures.
- ``low``/``high``: the paired bootstrap percentile interval (Koehn 2004) of the
  difference at ``level`` (95 %): each draw takes U utterances with replacement, the same
  ones for both systems. Below ``MIN_INTERVAL_UTTERANCES`` utterances the draws cannot
  show the spread (one utterance always gives [d, d]) and the interval is None.

The utterance is the unit because it is what a data dir holds as one independent piece
(a talk, a recording); words of one utterance are not independent draws. With few
utterances (the mini test set has 12) both figures are coarse.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from punct.data.nonspeech import DEFAULT_MAP
from punct.errors import MissingDataError, PunctInputError
from punct.labels import LabelSet
from punct.score.metrics import check_comparable, score_tables
from punct.score.tables import load_scores
from punct.wordtable import WordRow, read_word_table

DEFAULT_SAMPLES = 1000
MIN_INTERVAL_UTTERANCES = 5
CHUNK = 100  # draws built at once (memory: CHUNK x utterances)


@dataclass(frozen=True)
class Comparison:
    """The difference a - b of micro-F1 (in points), its interval and p-value."""

    delta: float
    low: float | None
    high: float | None
    p_value: float
    level: float
    samples: int
    utterances: int

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, floats rounded to 4 places."""
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def utterance_counts(ref: Mapping[str, Sequence[WordRow]],
                     hyp: Mapping[str, Sequence[WordRow]], label_set: LabelSet | str,
                     nonspeech: str | Path | None = None) -> np.ndarray:
    """(U, 3) int64: the micro TP, FP, FN of every utterance of ``ref``, in its order
    (``nonspeech``: the map of rows that are no slots, as ``score_tables`` takes it)."""
    check_comparable(ref, hyp)
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


def _swaps(n: int, samples: int, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """Rows of 0/1 (1: swap that utterance): all 2^n of them when that many fit in
    ``samples`` (exact), else ``samples`` random ones."""
    if n < 20 and 2**n <= samples:
        return np.array(list(itertools.product((0, 1), repeat=n)), dtype=np.int64), True
    return rng.integers(0, 2, size=(samples, n)), False


def randomization_p(a: np.ndarray, b: np.ndarray, samples: int, rng: np.random.Generator
                    ) -> float:
    """Two-sided p-value of micro-F1(a) - micro-F1(b) by paired approximate
    randomization (module docstring)."""
    observed = abs(float(micro_f1(a.sum(0)) - micro_f1(b.sum(0))))
    swaps, exact = _swaps(len(a), samples, rng)
    diff = b - a
    sum_a = a.sum(0)
    sum_b = b.sum(0)
    reached = 0
    for lo in range(0, len(swaps), CHUNK):
        part = swaps[lo:lo + CHUNK]
        moved = part @ diff  # what the swapped utterances move from b to a
        deltas = micro_f1(sum_a + moved) - micro_f1(sum_b - moved)
        reached += int((np.abs(deltas) >= observed - 1e-9).sum())
    if exact:
        return reached / len(swaps)
    return (reached + 1) / (len(swaps) + 1)


def bootstrap_interval(a: np.ndarray, b: np.ndarray, samples: int, level: float,
                       rng: np.random.Generator) -> tuple[float, float]:
    """The paired bootstrap percentile interval of micro-F1(a) - micro-F1(b)."""
    n = len(a)
    deltas = []
    for lo in range(0, samples, CHUNK):
        draws = rng.integers(0, n, size=(min(CHUNK, samples - lo), n))
        weights = np.stack([np.bincount(row, minlength=n) for row in draws])
        deltas.append(micro_f1(weights @ a) - micro_f1(weights @ b))
    tail = (1.0 - level) / 2
    low, high = np.quantile(np.concatenate(deltas), [tail, 1.0 - tail])
    return float(low), float(high)


def compare_counts(a: np.ndarray, b: np.ndarray, samples: int = DEFAULT_SAMPLES,
                   seed: int = 0, level: float = 0.95) -> Comparison:
    """Micro-F1 of ``a`` minus ``b`` (per-utterance counts, same utterances), its
    bootstrap interval and randomization p-value (module docstring)."""
    if a.shape != b.shape or a.ndim != 2 or a.shape[1] != 3:
        raise PunctInputError(f"paired counts must both be (U, 3), got {a.shape} and {b.shape}")
    if len(a) == 0:
        raise PunctInputError("no utterances to compare")
    if samples < 1 or not 0.0 < level < 1.0:
        raise PunctInputError(f"need samples >= 1 and 0 < level < 1, got {samples}, {level}")
    rng = np.random.default_rng(seed)
    delta = float(micro_f1(a.sum(0)) - micro_f1(b.sum(0)))
    p_value = randomization_p(a, b, samples, rng)
    low = high = None
    if len(a) >= MIN_INTERVAL_UTTERANCES:
        low, high = bootstrap_interval(a, b, samples, level, rng)
    return Comparison(delta, low, high, p_value, level, samples, len(a))


def table_path(recorded: str, scores: Path) -> Path:
    """A word table a scores file names: as recorded when it exists from here, else
    relative to the recipe directory of ``exp/<system>/decode_<set>/scores.json``."""
    path = Path(recorded)
    if path.is_absolute() or path.exists():
        return path
    recipe = scores.resolve().parents[3] if len(scores.resolve().parents) > 3 else Path.cwd()
    if (recipe / path).exists():
        return recipe / path
    raise MissingDataError(f"word table {recorded} named by {scores} not found (from here "
                           f"or from {recipe})")


def compare_documents(doc_a: Mapping[str, Any], doc_b: Mapping[str, Any], path_a: Path,
                      path_b: Path, samples: int = DEFAULT_SAMPLES, seed: int = 0,
                      level: float = 0.95) -> Comparison:
    """``compare_counts`` of two loaded scores documents (``compare_scores``)."""
    nonspeech = [d.get("nonspeech") or DEFAULT_MAP for d in (doc_a, doc_b)]
    if not all(d.get("ref") and d.get("hyp") for d in (doc_a, doc_b)):
        raise PunctInputError(f"{path_a} or {path_b} does not name its ref and hyp word tables")
    refs = [table_path(d["ref"], p).resolve() for d, p in ((doc_a, path_a), (doc_b, path_b))]
    differ = {"ref": refs, "test_set": [doc_a.get("test_set"), doc_b.get("test_set")],
              "label_set": [doc_a["label_set"], doc_b["label_set"]], "nonspeech": nonspeech}
    for key, (one, two) in differ.items():
        if one != two:
            raise PunctInputError(f"{path_a} and {path_b} differ in {key}: {str(one)!r} "
                                  f"against {str(two)!r}")
    ref = read_word_table(refs[0])
    counts = []
    for path, doc in ((path_a, doc_a), (path_b, doc_b)):
        hyp_path = table_path(doc["hyp"], path)
        utt = utterance_counts(ref, read_word_table(hyp_path), doc["label_set"], nonspeech[0])
        micro = doc["metrics"]["all"]["punct"]["micro"]
        if tuple(utt.sum(0)) != (micro["tp"], micro["fp"], micro["fn"]):
            raise PunctInputError(f"{path}: the word tables it names ({hyp_path}) score "
                                  f"TP/FP/FN {tuple(utt.sum(0).tolist())}, the file says "
                                  f"{(micro['tp'], micro['fp'], micro['fn'])} (stale scores?)")
        counts.append(utt)
    return compare_counts(counts[0], counts[1], samples, seed, level)


def compare_scores(path_a: str | Path, path_b: str | Path, samples: int = DEFAULT_SAMPLES,
                   seed: int = 0, level: float = 0.95) -> Comparison:
    """Two systems' ``scores.json`` files on one test set: the word tables they name are
    read again (``table_path``) and scored per utterance with the non-speech map they were
    scored with; the sums must give the micro counts each file recorded."""
    path_a, path_b = Path(path_a), Path(path_b)
    return compare_documents(load_scores([path_a])[0], load_scores([path_b])[0], path_a,
                             path_b, samples, seed, level)
