"""Per-word confidences from the model's mark probabilities (API scores, JSONL output).

The engine hands out, for every restored word, the probability of every mark label of
the system (``Segment.probs``). A word's *confidence* is the probability of its least
certain mark decision: ``p`` for a mark it was given, ``1 - p`` for one it was not, the
minimum over the labels. 0.97 says every decision at that word was clear; 0.55 says
one of them was nearly a coin toss (e.g. a comma at 0.45 left out).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def confidence(probs: Mapping[str, float], marks: Sequence[str]) -> float:
    """The probability of the least certain of a word's mark decisions (1.0 without labels)."""
    chosen = set(marks)
    return min((p if label in chosen else 1.0 - p for label, p in probs.items()), default=1.0)


def rounded(probs: Mapping[str, float], digits: int = 4) -> dict[str, float]:
    """``probs`` rounded for output."""
    return {label: round(p, digits) for label, p in probs.items()}
