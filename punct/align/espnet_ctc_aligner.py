"""``espnet_ctc``: word timings by ESPnet's CTC segmentation with a user's ESPnet ASR model.

``--ctc-model`` names the model (a directory with ``config.yaml`` and a ``.pth``, or the
``.pth``; see :func:`punct.asr.espnet_model.model_files`), ``--ctc-device`` its device.
Each transcript word is one segment of ``espnet2.bin.asr_align.CTCSegmentation``, so a
word runs from the first to the last CTC frame of its tokens; times are relative to the
utterance start and kept inside the audio. Audio too short for the transcript fails
with the utterance and its wav.scp line named; the generic plausibility check
(:func:`punct.align.base.check_plausible`) catches transcripts crammed into the audio.
Needs the optional ESPnet extra (``./setup.sh --with-espnet``).
"""

from __future__ import annotations

from typing import Any

from punct.align.base import Aligner, AlignRequest, AlignResult, check_plausible
from punct.asr.espnet_model import EspnetCtc
from punct.errors import MissingDataError


class EspnetCtcAligner(Aligner):
    """CTC segmentation of each utterance's words with an ESPnet ASR model."""

    name = "espnet_ctc"

    def __init__(self, ctc_model: str | None = None, ctc_device: str | None = None,
                 model: Any = None, **_: object):
        if model is None and not ctc_model:
            raise MissingDataError("the espnet_ctc aligner needs an ESPnet ASR model: "
                                   "--ctc-model <dir with config.yaml and a .pth>")
        self.model = model if model is not None else EspnetCtc(ctc_model or "",
                                                               ctc_device or "cpu")

    def align(self, request: AlignRequest) -> AlignResult | None:
        samples, rate = request.load_audio()
        duration = len(samples) / rate
        words = self.model.align_words(samples, rate, list(request.words),
                                       f"utterance {request.utt_id}",
                                       (request.wav_scp, request.wav_line))
        check_plausible(request, words, duration)
        return AlignResult(words, duration)
