"""Stage 2: word timings from audio (pluggable aligners), pauses, alignment evaluation.

The package imports nothing on its own (some aligners need optional extras); import the
module you need:

- :mod:`punct.align.base`: ``AlignResult``, ``Aligner``, ``get_aligner`` and
  ``available_aligners`` (names from :mod:`punct.registry`).
- :mod:`punct.align.ctm` / :mod:`punct.align.textgrid`: the ``ctm``, ``reference`` and
  ``textgrid`` aligners (the file readers are :mod:`punct.data.ctm` and
  :mod:`punct.data.textgrid`).
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
