"""Word timings -> pauses: match an alignment to the word table and fill start/end/pause_after.

``pause_after`` of word i is ``start(i+1) - end(i)``; for the last word it is the trailing
silence ``utterance_end - end``. Negative gaps of float noise (within 1 ms) are clipped to
0; larger overlaps are errors, never silently repaired.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from punct.align.base import AlignedWord
from punct.errors import PunctInputError

#: Overlaps up to this many seconds are float/rounding noise and are clipped to 0.
TOLERANCE = 0.001


def _replace(row: Any, **changes: Any) -> Any:
    if dataclasses.is_dataclass(row):
        return dataclasses.replace(row, **changes)
    return row._replace(**changes)


def match_words(
    expected: Sequence[str],
    aligned: Sequence[AlignedWord],
    path: str | Path | None = None,
    utt_id: str = "",
) -> None:
    """Raise PunctInputError unless ``aligned`` spells ``expected`` (case-insensitive).

    The message names the utterance, the word position, the expected and found word;
    the error's line is the aligned word's source line when known.
    """
    who = f"utterance {utt_id}: " if utt_id else ""
    for pos, (want, got) in enumerate(zip(expected, aligned, strict=False)):
        if want.lower() != got.word.lower():
            raise PunctInputError(
                f"{who}the alignment's words do not match the transcript at word {pos + 1}: "
                f"expected {want!r}, found {got.word!r}",
                path,
                got.line,
            )
    if len(expected) != len(aligned):
        if len(aligned) > len(expected):
            extra = aligned[len(expected)]
            detail = f"found extra word {extra.word!r} after the last transcript word"
            line = extra.line
        else:
            detail = f"missing words from {expected[len(aligned)]!r} on"
            line = aligned[-1].line if aligned else None
        raise PunctInputError(
            f"{who}the alignment has {len(aligned)} words but the transcript has "
            f"{len(expected)} ({detail})",
            path,
            line,
        )


def attach_timings(
    rows: Sequence[Any], aligned_words: Sequence[AlignedWord], path: str | Path | None = None
) -> list[Any]:
    """Copy start/end from ``aligned_words`` onto the word-table ``rows`` of one utterance.

    The aligned word sequence must equal the rows' words (case-insensitive), else a
    PunctInputError names ``path``, the line/position and the first mismatching word.
    ``pause_after`` is left untouched (see :func:`compute_pauses`).
    """
    utt_id = rows[0].utt_id if rows else ""
    match_words([r.word for r in rows], aligned_words, path, utt_id)
    return [_replace(r, start=a.start, end=a.end) for r, a in zip(rows, aligned_words, strict=True)]


def gaps(
    starts: Sequence[float],
    ends: Sequence[float],
    utterance_end: float | None,
    where: str = "",
    path: str | Path | None = None,
) -> list[float | None]:
    """Pauses after each word (seconds): next start - end, last: utterance_end - end."""
    out: list[float | None] = []
    n = len(starts)
    for i in range(n):
        if ends[i] < starts[i] - TOLERANCE:
            raise PunctInputError(
                f"{where}word {i + 1} ends ({ends[i]:.3f}) before it starts ({starts[i]:.3f})",
                path,
            )
        nxt = starts[i + 1] if i + 1 < n else utterance_end
        if nxt is None:
            out.append(None)
            continue
        gap = nxt - ends[i]
        if gap < 0:
            if gap < -TOLERANCE:
                what = f"word {i + 2} starts" if i + 1 < n else "the utterance ends"
                raise PunctInputError(
                    f"{where}{what} at {nxt:.3f} s, {-gap * 1000:.1f} ms before word {i + 1} "
                    f"ends ({ends[i]:.3f} s)",
                    path,
                )
            gap = 0.0
        out.append(gap)
    return out


def compute_pauses(
    rows: Sequence[Any], utterance_end: float | None, path: str | Path | None = None
) -> list[Any]:
    """Return ``rows`` with ``pause_after`` set from their start/end timings.

    Every row must have timings. ``utterance_end`` (seconds, same origin as the times)
    gives the last word's trailing pause; None leaves it None.
    """
    if not rows:
        return []
    utt_id = rows[0].utt_id
    for r in rows:
        if r.start is None or r.end is None:
            raise PunctInputError(
                f"utterance {utt_id}: word {r.idx} {r.word!r} has no timings", path
            )
    pauses = gaps(
        [r.start for r in rows], [r.end for r in rows], utterance_end,
        f"utterance {utt_id}: ", path,
    )
    return [_replace(r, pause_after=p) for r, p in zip(rows, pauses, strict=True)]


def word_pauses(words: Sequence[AlignedWord], utterance_end: float | None = None) -> list[float]:
    """Pauses after each aligned word; the last one is 0 when ``utterance_end`` is None."""
    out = gaps([w.start for w in words], [w.end for w in words], utterance_end)
    return [0.0 if p is None else p for p in out]
