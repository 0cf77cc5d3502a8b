"""Sliding windows over sequences: ``window`` positions, ``stride`` apart.

With ``stride = window / N`` every position away from the edges of a sequence is
covered by N windows (N predictions per token); the first and last ``window - stride``
positions are covered fewer times. The last window may be shorter than ``window``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

from punct.errors import PunctInputError

T = TypeVar("T")


def window_spans(length: int, window: int, stride: int) -> list[tuple[int, int]]:
    """Half-open spans ``[start, end)`` covering ``range(length)``.

    Starts are 0, stride, 2*stride, ... up to the first window that reaches the end.
    """
    if window < 1 or stride < 1 or stride > window:
        raise PunctInputError(f"need 1 <= stride <= window, got window={window} stride={stride}")
    spans: list[tuple[int, int]] = []
    start = 0
    while start < length:
        end = min(start + window, length)
        spans.append((start, end))
        if end == length:
            break
        start += stride
    return spans


def coverage(length: int, window: int, stride: int) -> list[int]:
    """How many windows cover each position (for checks and plots)."""
    counts = [0] * length
    for start, end in window_spans(length, window, stride):
        for i in range(start, end):
            counts[i] += 1
    return counts


def batched(items: Sequence[T], batch_size: int) -> Iterator[list[T]]:
    """Consecutive chunks of at most ``batch_size`` items."""
    if batch_size < 1:
        raise PunctInputError(f"batch size must be >= 1, got {batch_size}")
    for i in range(0, len(items), batch_size):
        yield list(items[i:i + batch_size])


def stride_for(window: int, per_token: int) -> int:
    """The stride giving ``per_token`` predictions per token: ``window // per_token``.

    ``window`` is in the family's own units (words for BRNN, sub-word pieces with the
    special tokens for the transformer families); away from the edges of a sequence every
    unit is then covered by ``per_token`` windows (exactly when ``per_token`` divides
    ``window``, else by ``per_token`` or ``per_token + 1``).
    """
    if window < 1:
        raise PunctInputError(f"window must be >= 1, got {window}")
    if per_token < 1 or per_token > window:
        raise PunctInputError(f"predictions per token must be in 1..{window} (the window), "
                         f"got {per_token}")
    return window // per_token
