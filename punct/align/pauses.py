"""Word timings -> pauses: match an alignment to the word table and fill start/end/pause_after.

The pauses come from the one formula, :func:`punct.data.timed.pauses`: ``start(i+1) -
end(i)`` inside the utterance, :data:`~punct.data.timed.END_OF_DOCUMENT_PAUSE` after its
last word; overlaps within 1 ms are clipped to 0, larger ones are errors naming the
utterance, never silently repaired.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from punct.data.timed import TimedWord, pauses
from punct.errors import PunctInputError


def _replace(row: Any, **changes: Any) -> Any:
    if dataclasses.is_dataclass(row):
        return dataclasses.replace(row, **changes)
    return row._replace(**changes)


def match_words(
    expected: Sequence[str],
    aligned: Sequence[TimedWord],
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
    rows: Sequence[Any], aligned_words: Sequence[TimedWord], path: str | Path | None = None
) -> list[Any]:
    """Copy start/end from ``aligned_words`` onto the word-table ``rows`` of one utterance.

    The aligned word sequence must equal the rows' words (case-insensitive), else a
    PunctInputError names ``path``, the line/position and the first mismatching word.
    ``pause_after`` is left untouched (see :func:`compute_pauses`).
    """
    utt_id = rows[0].utt_id if rows else ""
    match_words([r.word for r in rows], aligned_words, path, utt_id)
    return [_replace(r, start=a.start, end=a.end) for r, a in zip(rows, aligned_words, strict=True)]


def compute_pauses(
    rows: Sequence[Any], utterance_end: float | None, path: str | Path | None = None
) -> list[Any]:
    """Return ``rows`` (one utterance) with ``pause_after`` set by :func:`pauses`.

    Every row must have timings. ``utterance_end`` (seconds, same origin as the times)
    is the end of the utterance's audio: the last word may not end after it. The last
    word's pause is the end-of-document pause whether or not the end is known.
    """
    if not rows:
        return []
    utt_id = rows[0].utt_id
    for r in rows:
        if r.start is None or r.end is None:
            raise PunctInputError(
                f"utterance {utt_id}: word {r.idx} {r.word!r} has no timings", path
            )
    values = pauses([TimedWord(r.word, r.start, r.end) for r in rows], utterance_end,
                    f"utterance {utt_id}", path)
    return [_replace(r, pause_after=p) for r, p in zip(rows, values, strict=True)]
