"""The CTM-backed aligners: ``reference`` (a directory of ``<utt>.ctm`` / ``<reco>.ctm``
files, e.g. the synthesis timings of egs/mini) and ``ctm`` (one CTM file).

:func:`words_for_request` takes one utterance's words out of a table keyed by utterance
id (times relative to the utterance) or by recording id (times relative to the
recording; cut to the utterance's segment and shifted). Reading and writing CTM files is
:mod:`punct.data.ctm`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from punct.align.base import Aligner, AlignRequest, AlignResult, speech_words
from punct.align.pauses import match_words
from punct.data.ctm import read_ctm
from punct.data.nonspeech import NonSpeechMap, load_nonspeech_map
from punct.data.timed import TimedWord
from punct.errors import MissingDataError, PunctInputError


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
            raise PunctInputError("the ctm aligner needs --source PATH (a CTM file)")
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
            raise PunctInputError("the reference aligner needs --reference-dir DIR (or --source)")
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
