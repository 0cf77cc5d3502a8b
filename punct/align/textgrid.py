"""The ``textgrid`` aligner: word timings from Praat TextGrids (read by
:mod:`punct.data.textgrid`), one file per utterance or recording."""

from __future__ import annotations

from pathlib import Path

from punct.align.base import AlignRequest, AlignResult
from punct.align.ctm import TableAligner, words_for_request
from punct.data.nonspeech import NonSpeechMap, load_nonspeech_map
from punct.data.textgrid import textgrid_words
from punct.errors import MissingDataError, PunctInputError


class TextGridAligner(TableAligner):
    """Timings from ``<source>/<utt>.TextGrid`` or ``<source>/<reco>.TextGrid`` (tier ``tier``)."""

    name = "textgrid"

    def __init__(self, source: str | Path | None = None, tier: str = "words",
                 nonspeech: NonSpeechMap | str | None = None, **_: object):
        if source is None:
            raise PunctInputError("the textgrid aligner needs --source DIR (TextGrid files)")
        self.nonspeech = load_nonspeech_map(nonspeech)
        self.source = Path(source)
        self.tier = tier
        if not self.source.is_dir():
            raise MissingDataError("TextGrid directory not found", self.source)

    def align(self, request: AlignRequest) -> AlignResult | None:
        for key in dict.fromkeys((request.utt_id, request.recording)):
            path = self.source / f"{key}.TextGrid"
            if path.is_file():
                words = textgrid_words(path, self.tier)
                return self._result(request, words_for_request({key: words}, request), path)
        return None
