"""Kaldi CTM files (``<reco> <chan> <start> <dur> <word> [<conf>]``) and CTM-backed aligners.

- :func:`read_ctm` / :func:`write_ctm`: validated reading (errors name file:line) and
  atomic writing.
- :func:`words_for_request`: one utterance's words out of a table keyed by utterance id
  (times relative to the utterance) or by recording id (times relative to the
  recording; cut to the utterance's segment and shifted).
- aligners ``reference`` (a directory of ``<utt>.ctm`` / ``<reco>.ctm`` files, e.g. the
  synthesis timings of egs/mini) and ``ctm`` (one CTM file).
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from punct.align.base import Aligner, AlignRequest, AlignResult, speech_words
from punct.align.pauses import match_words
from punct.data.ctm import ctm_lines
from punct.data.nonspeech import NonSpeechMap, load_nonspeech_map
from punct.data.timed import OVERLAP_TOLERANCE, TimedWord
from punct.errors import MissingDataError, PunctInputError

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


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to a temporary file next to ``path`` and rename it over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def words_for_request(
    table: Mapping[str, Sequence[TimedWord]], request: AlignRequest
) -> list[TimedWord] | None:
    """The request's words from a table keyed by utterance or recording id (or None).

    A recording-keyed table with a segment is cut to the words whose midpoint lies in
    the segment, shifted to the segment start and clipped to it.
    """
    if request.utt_id in table:
        return list(table[request.utt_id])
    reco = request.recording
    if reco not in table:
        return None
    words = list(table[reco])
    if request.seg_start is None:
        return words
    s0 = request.seg_start
    s1 = math.inf if request.seg_end is None or request.seg_end < 0 else request.seg_end
    out = []
    for w in words:
        if s0 <= (w.start + w.end) / 2 < s1:
            out.append(TimedWord(
                w.word, max(0.0, w.start - s0), min(s1, w.end) - s0, w.line
            ))
    return out


class TableAligner(Aligner):
    """Shared logic: look the utterance up in a word table, check it, add the duration.

    Non-speech intervals (``<breath>``, ``[noise]``: the ``nonspeech`` map) are dropped
    before the words are matched to the transcript; their time becomes pause."""

    nonspeech: NonSpeechMap | None = None

    def _result(
        self, request: AlignRequest, words: list[TimedWord] | None, source: Path
    ) -> AlignResult | None:
        if words is None:
            return None
        words = speech_words(words, self.nonspeech)
        match_words(request.words, words, source, request.utt_id)
        words = [TimedWord(r, w.start, w.end, w.line)
                 for r, w in zip(request.words, words, strict=True)]
        return AlignResult(words, request.duration())


class CtmAligner(TableAligner):
    """Timings from one CTM file (``source``), keyed by utterance or recording id."""

    name = "ctm"

    def __init__(self, source: str | Path | None = None,
                 nonspeech: NonSpeechMap | str | None = None, **_: object):
        if source is None:
            raise ValueError("the ctm aligner needs --source PATH (a CTM file)")
        self.nonspeech = load_nonspeech_map(nonspeech)
        self.source = Path(source)
        self._table: dict[str, list[TimedWord]] | None = None

    def align(self, request: AlignRequest) -> AlignResult | None:
        if self._table is None:
            self._table = read_ctm(self.source)
        return self._result(request, words_for_request(self._table, request), self.source)


class ReferenceAligner(TableAligner):
    """Timings from ``<source>/<utt>.ctm`` (or ``<source>/<reco>.ctm``), e.g. downloads/mini/ref."""

    name = "reference"

    def __init__(self, source: str | Path | None = None,
                 nonspeech: NonSpeechMap | str | None = None, **_: object):
        if source is None:
            raise ValueError("the reference aligner needs --reference-dir DIR (or --source)")
        self.nonspeech = load_nonspeech_map(nonspeech)
        self.source = Path(source)
        if not self.source.is_dir():
            raise MissingDataError("reference directory not found", self.source)

    def align(self, request: AlignRequest) -> AlignResult | None:
        for key in dict.fromkeys((request.utt_id, request.recording)):
            path = self.source / f"{key}.ctm"
            if path.is_file():
                table = read_ctm(path)
                words = words_for_request(table, request)
                if words is None and len(table) == 1:  # one recording under another name
                    words = next(iter(table.values()))
                return self._result(request, words, path)
        return None
