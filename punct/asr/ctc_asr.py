"""Speech recognition with a CTC model (wav2vec2, MMS, HuBERT-CTC: anything
``transformers.AutoModelForCTC`` loads, a local directory or a Hugging Face id).

:class:`CtcRecognizer` computes the model's frame log-probabilities with the windowing of
the CTC aligner (:class:`punct.asr.ctc_model.CtcModel`) and decodes them greedily
(best path, no language model), :func:`greedy_words`:

- the most likely token of every frame; runs of one token collapse to one, blanks
  separate repeats and are dropped;
- the model's word delimiter (``|`` in wav2vec2 vocabularies; a space where the
  vocabulary has one instead) ends a word; special tokens (``<unk>``, ``<s>``, ...)
  are dropped; words come out lower-cased, as the restoring models read them;
- a word's start is the first frame of its first token, its end the frame after the
  last frame of its last token (frame ``k`` covers ``k * shift .. (k + 1) * shift``,
  ``shift`` = the model's total convolution stride over its sample rate, 20 ms for
  wav2vec2); ends are clipped to the audio's duration.

Greedy decoding is what CTC models fine-tuned without a language model are evaluated
with; it is the model's own 1-best, so the WER is the model's. Audio is resampled to
the model's rate (the ``align`` extra's scipy).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from punct.asr.ctc_model import CtcModel
from punct.data.timed import TimedWord
from punct.errors import PunctInputError
from punct.features.resample import resample

#: Tokens that stand for a word boundary, whichever the vocabulary uses.
DELIMITER_TOKENS = ("|", " ", "▁")


def _special(token: str) -> bool:
    """Whether a vocabulary token is a special symbol (``<unk>``, ``<s>``, ``[PAD]``)."""
    return len(token) > 1 and ((token[0] == "<" and token[-1] == ">")
                               or (token[0] == "[" and token[-1] == "]"))


def greedy_words(log_probs: torch.Tensor, id_to_token: Mapping[int, str], blank: int,
                 frame_seconds: float, duration: float) -> list[TimedWord]:
    """Best-path words of (T, V) frame scores with their times (see the module doc)."""
    best = log_probs.argmax(dim=-1).numpy() if len(log_probs) else np.zeros(0, np.int64)
    words: list[TimedWord] = []
    letters: list[str] = []
    first = last = -1

    def close() -> None:
        nonlocal first, last
        if letters:
            start = min(first * frame_seconds, duration)
            end = min((last + 1) * frame_seconds, duration)
            words.append(TimedWord("".join(letters).lower(), round(start, 4), round(end, 4)))
            letters.clear()
        first = last = -1

    previous = -1
    for frame, token_id in enumerate(best.tolist()):
        if token_id == previous:
            if first >= 0 and token_id != blank:
                last = frame  # the token's run goes on
            continue
        previous = token_id
        if token_id == blank:
            continue
        token = id_to_token.get(token_id, "")
        if token in DELIMITER_TOKENS:
            close()
            continue
        if _special(token) or not token:
            continue
        if first < 0:
            first = frame
        last = frame
        letters.append(token.replace("▁", ""))
    close()
    return words


class CtcRecognizer:
    """A CTC model's greedy transcription, timed by its frames (see the module doc).

    ``language``: the utt2lang code of the utterances it decodes in the ASR stage (None:
    every utterance)."""

    name = "ctc"

    def __init__(self, model: str, device: str = "cpu", language: str | None = None,
                 chunk_seconds: float = 20.0, context_seconds: float = 1.0,
                 ctc_model: CtcModel | None = None):
        self.model = ctc_model if ctc_model is not None else CtcModel(model, device)
        self.language = language
        self.chunk_seconds = chunk_seconds
        self.context_seconds = context_seconds
        self.id_to_token = {i: t for t, i in self.model.vocab.items()}

    def transcribe(self, samples: np.ndarray, rate: int, name: str = "audio"
                   ) -> list[TimedWord]:
        """Words of mono float ``samples`` at ``rate`` Hz with their times in seconds."""
        if samples.ndim != 1:
            raise PunctInputError(f"{name}: expected mono audio, got shape {samples.shape}")
        if rate <= 0:
            raise PunctInputError(f"{name}: sample rate {rate} Hz")
        duration = len(samples) / rate
        x = resample(samples, rate, self.model.sample_rate)
        if len(x) < self.model.stride * 2:
            return []  # shorter than two frames: nothing to recognise
        emissions = self.model.emissions(x, self.chunk_seconds, self.context_seconds)
        shift = self.model.stride / self.model.sample_rate
        return greedy_words(emissions, self.id_to_token, self.model.blank, shift, duration)
