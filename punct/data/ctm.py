"""Kaldi CTM files: ``<reco> <chan> <start> <dur> <word> [<conf>]``, times in seconds.

- :func:`read_ctm` / :func:`parse_ctm_fields`: validated reading (errors name file:line);
- :func:`ctm_lines`: the one writer of CTM lines (alignment outputs, the mini corpus'
  reference timings); :func:`write_ctm` writes a whole table atomically
  (:func:`atomic_write_text`).

The CTM-backed aligners (``ctm``, ``reference``) are :mod:`punct.align.ctm`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from punct.atomic import atomic_write_text
from punct.data.timed import OVERLAP_TOLERANCE, TimedWord
from punct.errors import MissingDataError, PunctInputError


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


#: Tokens that mark silence or epsilon in CTMs written by ASR/alignment tools.
SILENCE_TOKENS = frozenset({"<eps>", "<sil>", "<sp>", "!sil", "<silence>"})


def _number(text: str, what: str, path: str | Path | None, line: int) -> float:
    try:
        value = float(text)
    except ValueError:
        raise PunctInputError(f"{what} {text!r} is not a number", path, line) from None
    if not math.isfinite(value):
        raise PunctInputError(f"{what} {text!r} is not a finite number", path, line)
    return value


def parse_ctm_fields(text: str, path: str | Path | None, line: int
                     ) -> tuple[str, str, float, float]:
    """``(reco, word, start, duration)`` of one non-blank, non-comment CTM line.

    Errors (with file:line): wrong field count, non-numeric, non-finite or negative times,
    a non-numeric confidence.
    """
    fields = text.split()
    if len(fields) not in (5, 6):
        raise PunctInputError(
            f"expected 5 or 6 fields '<reco> <chan> <start> <dur> <word> [<conf>]', "
            f"found {len(fields)}: {text!r}", path, line)
    reco, _chan, start_s, dur_s, word = fields[:5]
    start = _number(start_s, "start time", path, line)
    dur = _number(dur_s, "duration", path, line)
    if len(fields) == 6:
        _number(fields[5], "confidence", path, line)
    if start < 0 or dur < 0:
        raise PunctInputError(
            f"negative {'start time' if start < 0 else 'duration'} in {text!r}", path, line)
    return reco, word, start, dur


def read_ctm(
    path: str | Path, drop_silence: bool = True
) -> dict[str, list[TimedWord]]:
    """Read a CTM into ``{reco: [TimedWord, ...]}`` (file order).

    Blank lines and ``;;`` comments are skipped; with ``drop_silence`` the tokens in
    :data:`SILENCE_TOKENS` are too. Errors (with file:line): wrong field count,
    non-numeric or negative times, a recording's words out of order or overlapping
    (more than 1 ms), a recording split over several blocks.
    """
    path = Path(path)
    if not path.is_file():
        raise MissingDataError("CTM file not found", path)
    out: dict[str, list[TimedWord]] = {}
    last_reco: str | None = None
    with open(path, encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, 1):
            text = raw.strip()
            if not text or text.startswith(";;"):
                continue
            reco, word, start, dur = parse_ctm_fields(text, path, lineno)
            if reco != last_reco and reco in out:
                raise PunctInputError(
                    f"recording {reco!r} appears again after other recordings "
                    "(a CTM must be grouped by recording and sorted by start time)",
                    path,
                    lineno,
                )
            last_reco = reco
            if drop_silence and word.lower() in SILENCE_TOKENS:
                out.setdefault(reco, [])
                continue
            words = out.setdefault(reco, [])
            cur = TimedWord(word, start, round(start + dur, 9), lineno)
            if words:
                prev = words[-1]
                if start < prev.start:
                    raise PunctInputError(
                        f"word {word!r} starts at {start:.3f} s, before the previous word "
                        f"{prev.word!r} (line {prev.line}, {prev.start:.3f} s): not sorted",
                        path,
                        lineno,
                    )
                if start < prev.end - OVERLAP_TOLERANCE:
                    raise PunctInputError(
                        f"word {word!r} starts at {start:.3f} s, before the previous word "
                        f"{prev.word!r} (line {prev.line}) ends at {prev.end:.3f} s: overlap",
                        path,
                        lineno,
                    )
            words.append(cur)
    return out


def write_ctm(
    path: str | Path, table: Mapping[str, Sequence[TimedWord]], digits: int = 3
) -> None:
    """Write ``{reco: words}`` as a CTM (recordings in mapping order), atomically."""
    path = Path(path)
    lines: list[str] = []
    for reco, words in table.items():
        lines.extend(ctm_lines(reco, words, digits))
    atomic_write_text(path, "".join(lines))
