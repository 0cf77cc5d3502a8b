"""The CTM line format (Kaldi): ``<reco> <chan> <start> <dur> <word>``, times in seconds.

:func:`ctm_lines` is the one writer of CTM lines (alignment outputs, the mini corpus'
reference timings); reading and validating CTM files is :mod:`punct.align.ctm`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol


class Timed(Protocol):
    """Anything with a word and its start and end time in seconds."""

    word: str
    start: float
    end: float


def ctm_lines(reco: str, words: Iterable[Timed], digits: int = 3) -> list[str]:
    """CTM lines (with newline) for one recording, channel 1; ``dur`` is the rounded end
    minus the rounded start (never negative), so start + dur gives the rounded end."""
    lines = []
    for w in words:
        start = round(w.start, digits)
        dur = max(0.0, round(w.end, digits) - start)
        lines.append(f"{reco} 1 {start:.{digits}f} {dur:.{digits}f} {w.word}\n")
    return lines
