"""Stage 2: word timings from audio (pluggable aligners), CTM/TextGrid I/O, pauses.

- :mod:`punct.align.base`: ``TimedWord``, ``AlignRequest``, ``AlignResult``, ``Aligner``,
  ``get_aligner`` and ``available_aligners`` (names from :mod:`punct.registry`).
- :mod:`punct.align.ctm` / :mod:`punct.align.textgrid`: file formats and the ``ctm``,
  ``reference`` and ``textgrid`` aligners.
- :mod:`punct.align.vad` + :mod:`punct.align.vad_aligner`: the offline ``vad`` aligner.
- :mod:`punct.align.dtw_aligner`: ``dtw``, MFCC DTW against eSpeak NG renderings (any
  language eSpeak speaks).
- :mod:`punct.align.pocketsphinx_aligner`: ``pocketsphinx`` (English, offline model).
- :mod:`punct.align.ctc` + :mod:`punct.align.ctc_aligner`: ``ctc``, Viterbi over the CTC
  emissions of a wav2vec2/MMS model.
- :mod:`punct.align.auto`: ``auto``, the aligner per language from conf/align.yaml, with
  fallbacks. ``base.check_plausible`` rejects alignments of a transcript that does not
  match the audio.
- :mod:`punct.align.pauses`: ``attach_timings`` and ``compute_pauses`` for the word table.
- :mod:`punct.align.evaluate`: boundary error and pause precision/recall/F1.
"""

from __future__ import annotations

from punct.align.base import Aligner, AlignRequest, AlignResult, available_aligners, get_aligner
from punct.align.ctm import read_ctm, write_ctm
from punct.align.evaluate import evaluate
from punct.align.pauses import attach_timings, compute_pauses
from punct.align.textgrid import read_textgrid, textgrid_silences, textgrid_words
from punct.data.timed import TimedWord

__all__ = [
    "AlignRequest",
    "AlignResult",
    "Aligner",
    "TimedWord",
    "attach_timings",
    "available_aligners",
    "compute_pauses",
    "evaluate",
    "get_aligner",
    "read_ctm",
    "read_textgrid",
    "textgrid_silences",
    "textgrid_words",
    "write_ctm",
]
