"""``ctc``: forced alignment with a wav2vec2 / MMS CTC model (Hugging Face id or local dir).

1. **Emissions.** The utterance is resampled to the model's rate, normalised like the
   model's feature extractor does, and run through ``AutoModelForCTC`` in windows of
   ``chunk_seconds`` plus ``context_seconds`` on each side; only each window's central
   frames are kept, so memory grows with the window, not with the recording. Window
   starts are whole multiples of the model's frame stride, so frame k of every window
   is the same global frame as in a single pass.
2. **Tokens.** Each word is spelled in the model's vocabulary: the vocabulary's case,
   then accents stripped (NFKD) when only the base letter is known; punctuation and
   symbols the vocabulary lacks (apostrophes, hyphens) are dropped; any other unknown
   character is a :class:`~punct.errors.PunctInputError` naming the utterance and the
   word. The model's word delimiter (``|``) goes between words when it has one.
3. **Viterbi** over the CTC trellis (:mod:`punct.align.ctc`); a word runs from the first
   frame of its first character to the end of the last frame of its last character.
4. **Mismatch.** ``gap_per_frame``, the forced path's log-probability per frame below the
   unconstrained best, is near 0 for audio that says the transcript; above
   ``max_gap_per_frame`` (or when the audio has too few frames for the characters) the
   utterance fails with a PunctInputError (``on_mismatch="error"``) or is skipped with a
   warning (``"skip"``).
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from typing import Any

from punct.align.base import Aligner, AlignRequest, AlignResult, check_plausible
from punct.align.ctc import CtcAlignError, CtcPath, viterbi, word_spans
from punct.asr.ctc_model import CtcModel
from punct.data.timed import TimedWord
from punct.errors import PunctInputError
from punct.features.resample import resample


@dataclass(frozen=True)
class CtcConfig:
    """Model, windowing and mismatch settings (seconds)."""

    model: str = ""                  # Hugging Face id or local directory
    device: str = "cpu"
    chunk_seconds: float = 20.0      # central part of each model window
    context_seconds: float = 1.0     # extra audio on each side of a window
    use_word_delimiter: bool = True  # put the model's "|" between words (if it has one)
    max_gap_per_frame: float = 1.5   # nats per frame below the free best: mismatch
    on_mismatch: str = "error"       # "error" or "skip"


class CtcAligner(Aligner):
    """CTC forced alignment with a wav2vec2/MMS model (see the module docstring)."""

    name = "ctc"

    def __init__(self, config: CtcConfig | None = None, ctc_model: str | None = None,
                 ctc_device: str | None = None, model: Any = None, **_: object):
        cfg = config or CtcConfig()
        if ctc_model:
            cfg = dataclasses.replace(cfg, model=ctc_model)
        if ctc_device:
            cfg = dataclasses.replace(cfg, device=ctc_device)
        if cfg.on_mismatch not in ("error", "skip"):
            raise PunctInputError(f"on_mismatch must be 'error' or 'skip', not "
                                  f"{cfg.on_mismatch!r}")
        self.config = cfg
        self.model = model if model is not None else CtcModel(cfg.model, cfg.device)

    def align(self, request: AlignRequest) -> AlignResult | None:
        samples, rate = request.load_audio()
        duration = len(samples) / rate
        if not request.words:
            return AlignResult([], duration)
        ids, counts, seps = self.model.tokens(request, self.config.use_word_delimiter)
        x = resample(samples, rate, self.model.sample_rate)
        em = self.model.emissions(x, self.config.chunk_seconds, self.config.context_seconds)
        try:
            path = viterbi(em, ids, self.model.blank)
        except CtcAlignError as err:
            return self._mismatch(request, str(err))
        if path.gap_per_frame > self.config.max_gap_per_frame:
            return self._mismatch(
                request, f"the forced path scores {path.gap_per_frame:.2f} nats per frame "
                         f"below the best free path (allowed {self.config.max_gap_per_frame:g})")
        words = self.timings(request, path, counts, seps, duration)
        check_plausible(request, words, duration)
        return AlignResult(words, duration)

    def timings(self, request: AlignRequest, path: CtcPath, counts: list[int],
                seps: list[int], duration: float) -> list[TimedWord]:
        """Frame spans -> seconds (frame k covers k * shift .. (k + 1) * shift)."""
        shift = self.model.stride / self.model.sample_rate
        return [TimedWord(w, round(min(s * shift, duration), 4),
                            round(min(e * shift, duration), 4))
                for w, (s, e) in zip(request.words, word_spans(path, counts, seps),
                                     strict=True)]

    def _mismatch(self, request: AlignRequest, why: str) -> None:
        message = f"utterance {request.utt_id}: transcript does not fit the audio: {why}"
        if self.config.on_mismatch == "error":
            raise PunctInputError(message, request.wav_scp, request.wav_line)
        print(f"warning: {message}; no timings", file=sys.stderr)
        return None
