"""Offline English speech recognition with the ``pocketsphinx`` wheel's en-US model.

:class:`PocketsphinxRecognizer` decodes audio with the acoustic model, the trigram
language model (``en-us.lm.bin``) and the CMU dictionary that the wheel ships, and
returns the recognised words with their times (one :class:`~punct.data.timed.TimedWord`
a word, seconds from the start of the audio). Fillers (``[NOISE]``, ``<sil>``), sentence
markers and pronunciation variants (``word(2)``) are mapped to plain lower-case words or
left out. The ASR stage (``punct.bin.recognize``) and ``punct-restore --asr pocketsphinx``
both decode through here.

Audio of any integer sample rate of at least 8 kHz is resampled to the model's 16 kHz
(channels are averaged by the reader). Long recordings are decoded in chunks of at most
:data:`MAX_CHUNK_S` seconds, each cut at the quietest 10 ms frame of its last
:data:`CUT_SEARCH_S` seconds, so that memory stays bounded and the decoder's cepstral
mean normalisation follows the recording.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from punct.data.timed import TimedWord
from punct.errors import PunctInputError
from punct.extras import require
from punct.features.resample import resample_int16

SAMPLE_RATE = 16000
MIN_SAMPLE_RATE = 8000
FRAME_RATE = 100  # the decoder's frames per second (10 ms)
MAX_CHUNK_S = 40.0
CUT_SEARCH_S = 10.0
#: The cheap search of :meth:`PocketsphinxRecognizer.replay` (one keyphrase, no language model).
REPLAY_SEARCH = "replay"
REPLAY_KEYPHRASE = "oh"


@dataclass(frozen=True)
class PocketsphinxAsrConfig:
    """Decoder settings: beams as PocketSphinx takes them, the language-model weight."""

    beam: float = 1e-48
    wbeam: float = 7e-29
    lw: float = 6.5


def _word(name: str) -> str | None:
    """The plain word of a PocketSphinx segment name, or None for silence and fillers."""
    if not name or name[0] in "<[+" or name == "sil":
        return None
    return re.sub(r"\(\d+\)$", "", name).lower()


def to_pcm16k(samples: np.ndarray, rate: int, name: str) -> np.ndarray:
    """Mono float samples in [-1, 1] at ``rate`` Hz as 16 kHz int16 (errors name ``name``)."""
    if samples.ndim != 1:
        raise PunctInputError(f"{name}: expected mono audio, got shape {samples.shape}")
    if rate < MIN_SAMPLE_RATE:
        raise PunctInputError(f"{name}: sample rate {rate} Hz is below {MIN_SAMPLE_RATE} Hz, "
                              "too low for the recogniser")
    pcm = np.clip(np.rint(samples.astype(np.float64) * 32767.0), -32768, 32767).astype(np.int16)
    return pcm if rate == SAMPLE_RATE else resample_int16(pcm, rate, SAMPLE_RATE)


def chunk_bounds(pcm: np.ndarray, max_s: float = MAX_CHUNK_S,
                 search_s: float = CUT_SEARCH_S) -> list[tuple[int, int]]:
    """Sample ranges covering ``pcm`` (16 kHz) in chunks of at most ``max_s`` seconds,
    each cut at the quietest 10 ms frame within ``search_s`` seconds of its end."""
    frame = SAMPLE_RATE // FRAME_RATE
    limit, search = int(max_s * SAMPLE_RATE), int(search_s * SAMPLE_RATE)
    bounds, start = [], 0
    while len(pcm) - start > limit:
        lo = start + limit - search
        window = pcm[lo:start + limit].astype(np.float64)
        n = len(window) // frame
        energy = (window[:n * frame].reshape(n, frame) ** 2).sum(axis=1)
        cut = lo + int(np.argmin(energy)) * frame + frame // 2
        bounds.append((start, cut))
        start = cut
    bounds.append((start, len(pcm)))
    return bounds


class PocketsphinxRecognizer:
    """Transcribes 16-bit audio into timed words (see the module docstring)."""

    name = "pocketsphinx"
    language = "en"

    def __init__(self, config: PocketsphinxAsrConfig | None = None):
        self.config = config or PocketsphinxAsrConfig()
        self._decoder: Any = None
        self._replay_ready = False

    def _get_decoder(self) -> Any:
        if self._decoder is None:
            pocketsphinx = require("pocketsphinx", "speech", "the pocketsphinx recogniser")
            model = os.path.join(pocketsphinx.get_model_path(), "en-us")
            self._decoder = pocketsphinx.Decoder(
                hmm=os.path.join(model, "en-us"), lm=os.path.join(model, "en-us.lm.bin"),
                dict=os.path.join(model, "cmudict-en-us.dict"), samprate=SAMPLE_RATE,
                loglevel="FATAL", beam=self.config.beam, wbeam=self.config.wbeam,
                lw=self.config.lw)
        return self._decoder

    def transcribe(self, samples: np.ndarray, rate: int, name: str = "audio") -> list[TimedWord]:
        """The recognised words of mono ``samples`` at ``rate`` Hz, timed in seconds."""
        pcm = to_pcm16k(samples, rate, name)
        decoder = self._get_decoder()
        words: list[TimedWord] = []
        for lo, hi in chunk_bounds(pcm):
            _process(decoder, pcm[lo:hi])
            offset = lo / SAMPLE_RATE
            for seg in decoder.seg():
                word = _word(seg.word)
                if word is None:
                    continue
                start = round(offset + seg.start_frame / FRAME_RATE, 3)
                end = round(offset + (seg.end_frame + 1) / FRAME_RATE, 3)
                words.append(TimedWord(word, start, end))
        return words

    def replay(self, samples: np.ndarray, rate: int, name: str = "audio") -> None:
        """Pass audio through the decoder as :meth:`transcribe` does, for the state it
        leaves behind only (the live cepstral mean carries from one utterance to the
        next), with a one-keyphrase search instead of the language model (about 5x faster).

        A job that decodes some utterances of a set replays the others before them, so
        that each of its utterances is decoded exactly as in one pass over the whole set.
        """
        pcm = to_pcm16k(samples, rate, name)
        decoder = self._get_decoder()
        search = decoder.current_search()
        if not self._replay_ready:
            decoder.add_keyphrase(REPLAY_SEARCH, REPLAY_KEYPHRASE)
            self._replay_ready = True
        decoder.activate_search(REPLAY_SEARCH)
        try:
            for lo, hi in chunk_bounds(pcm):
                _process(decoder, pcm[lo:hi])
        finally:
            decoder.activate_search(search)


def _process(decoder: Any, pcm: np.ndarray) -> None:
    """Decode one chunk of 16 kHz int16 audio as one PocketSphinx utterance."""
    decoder.start_utt()
    decoder.process_raw(pcm.tobytes(), full_utt=True)
    decoder.end_utt()
