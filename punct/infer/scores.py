"""Per-word confidences from the model's mark probabilities (API scores, JSONL output).

The engine hands out, for every restored word, the probability of every mark label of
the system (``Segment.probs``). A word's *confidence* is the probability of its least
certain mark decision: ``p`` for a mark it was given, ``1 - p`` for one it was not, the
minimum over the labels. 0.97 says every decision at that word was clear; 0.55 says
one of them was nearly a coin toss (e.g. a comma at 0.45 left out).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

TIE_MARGIN = 1e-6
"""How near a rounding tie (in units of the last kept digit) ``rounded_rows`` leaves a
value to Python's ``round``: far above the scaling's error (1e-12 for values up to 1e4),
far below anything a probability needs."""


def confidence(probs: Mapping[str, float], marks: Sequence[str]) -> float:
    """The probability of the least certain of a word's mark decisions (1.0 without labels)."""
    chosen = set(marks)
    return min((p if label in chosen else 1.0 - p for label, p in probs.items()), default=1.0)


def rounded_rows(values: np.ndarray, digits: int = 4) -> list[list[float]]:
    """``round(v, digits)`` of every value of ``values`` (2-D), Python's correctly
    rounded results, by array operations: each value scaled, rounded to an integer and
    divided back (the nearest float to that decimal, as ``round`` returns), except the
    values within ``TIE_MARGIN`` of a tie and those too large for the scaled value's
    halves to be floats (2**52 / 10**digits and up, inf, NaN), which ``round`` itself
    rounds."""
    values = np.asarray(values, dtype=np.float64)
    scale = 10.0 ** digits
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = values * scale
        out = np.rint(scaled) / scale
        near = np.abs(scaled - np.floor(scaled) - 0.5) < TIE_MARGIN
        # exact only while the scaled value's halves are floats: larger, inf and NaN
        # values go to ``round`` too
        near |= ~(np.abs(values) < 2.0 ** 52 / scale)
    for i, j in zip(*np.nonzero(near), strict=True):
        out[i, j] = round(float(values[i, j]), digits)
    return out.tolist()


def confidences(values: np.ndarray, labels: Sequence[str],
                marks: Sequence[Sequence[str]]) -> list[float]:
    """``confidence`` of each row of ``values`` (rows: words, columns: ``labels``) given
    its ``marks``, by array operations; a row holding NaN or whose minimum is zero goes
    through ``confidence`` (Python's ``min`` and numpy's treat NaN and -0.0
    differently)."""
    values = np.asarray(values, dtype=np.float64)
    if values.shape[1] == 0:
        return [1.0] * len(values)
    index = {label: k for k, label in enumerate(labels)}
    chosen = np.zeros(values.shape, dtype=bool)
    for row, word_marks in enumerate(marks):
        for label in word_marks:
            k = index.get(label)
            if k is not None:
                chosen[row, k] = True
    lowest = np.where(chosen, values, 1.0 - values).min(axis=1)
    out = lowest.tolist()
    # NaN, and a minimum of zero (numpy and Python may pick 0.0 and -0.0 differently)
    odd = np.isnan(values).any(axis=1) | (lowest == 0)
    for row in np.flatnonzero(odd).tolist():
        out[row] = confidence(dict(zip(labels, values[row].tolist(), strict=True)),
                              marks[row])
    return out
