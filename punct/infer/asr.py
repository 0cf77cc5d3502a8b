"""Speech input of ``restore --asr``: audio files -> a recogniser -> ``Document`` stream.

Each audio file (anything soundfile reads; channels averaged; any sample rate the
recogniser resamples, see :func:`punct.asr.pocketsphinx_asr.to_pcm16k`) is one
document, its id the file name without the extension. Recognisers:

- ``pocketsphinx``: English, offline, the acoustic and language model of the
  ``pocketsphinx`` wheel; its own word times;
- ``espnet``: an ESPnet ``Speech2Text`` model (``--asr-model``); the hypothesis words are
  then timed by CTC segmentation with the same model;
- ``ctc``: a wav2vec2/MMS-style CTC model (``--asr-model``: a local directory or a
  Hugging Face id), greedy best path timed by its frames
  (:mod:`punct.asr.ctc_asr`).

The pauses between the timed words reach the restoring model exactly as from a CTM
(untimed words, e.g. ESPnet with ``timings=False``, come without pauses).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from punct.asr.ctc_asr import CtcRecognizer
from punct.asr.espnet_model import EspnetAsr, EspnetCtc
from punct.asr.pocketsphinx_asr import PocketsphinxRecognizer
from punct.data.timed import TimedWord
from punct.errors import MissingDataError, PunctInputError
from punct.extras import require
from punct.infer.inputs import with_pauses
from punct.infer.stream import Document, InputWord


def read_audio(path: Path) -> tuple[np.ndarray, int]:
    """Mono float32 samples and the rate of an audio file (errors name the file)."""
    if not path.is_file():
        raise MissingDataError("audio file not found", path)
    soundfile = require("soundfile", "align", "reading audio")  # optional extra: audio I/O
    try:
        data, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
    except Exception as err:  # soundfile raises several types for bad audio
        raise PunctInputError(f"unreadable audio: {err}", path) from err
    return (data.mean(axis=1) if data.shape[1] > 1 else data[:, 0]), int(rate)


class Recognizer(Protocol):
    """Audio -> words: timed (:class:`TimedWord`) or plain strings when it cannot time them."""

    def transcribe(self, samples: np.ndarray, rate: int, name: str = "audio"
                   ) -> Sequence[TimedWord] | Sequence[str]: ...


class EspnetRecognizer:
    """An ESPnet ``Speech2Text`` model, its words timed by CTC segmentation with the same
    model (``timings=False``: untimed words). ``language``: the utt2lang code of the
    utterances it serves in the ASR stage (None: all)."""

    name = "espnet"

    def __init__(self, model: str | Path, device: str = "cpu", beam_size: int = 10,
                 timings: bool = True, language: str | None = None):
        self.asr = EspnetAsr(model, device, beam_size)
        self.ctc = EspnetCtc(model, device) if timings else None
        self.language = language

    def transcribe(self, samples: np.ndarray, rate: int, name: str = "audio"
                   ) -> list[TimedWord] | list[str]:
        words = self.asr.transcribe(samples, rate)
        if self.ctc is None or not words:
            return words
        return self.ctc.align_words(samples, rate, words, name, (name, None))


def make_recognizer(asr: str, model: str | Path | None = None, device: str = "cpu",
                    beam_size: int = 10, language: str | None = None) -> Recognizer:
    """The recogniser named ``asr``: ``pocketsphinx`` (English, offline, the wheel's model),
    ``espnet`` (the ESPnet model dir ``model``) or ``ctc`` (the CTC model ``model``, a
    directory or a Hugging Face id); ``language``: the utt2lang code of the utterances
    an espnet or ctc recogniser serves in the ASR stage (None: every utterance)."""
    if asr == "pocketsphinx":
        if model is not None:
            raise PunctInputError("--asr pocketsphinx uses the model the pocketsphinx wheel "
                                  "ships: drop --asr-model")
        return PocketsphinxRecognizer()
    if asr == "espnet":
        if model is None:
            raise PunctInputError("--asr espnet needs --asr-model DIR (an ESPnet ASR model)")
        return EspnetRecognizer(model, device, beam_size, language=language)
    if asr == "ctc":
        if model is None:
            raise PunctInputError("--asr ctc needs --asr-model (a wav2vec2/MMS CTC model: "
                                  "a local directory or a Hugging Face id)")
        return CtcRecognizer(str(model), device, language=language)
    raise PunctInputError(f"unknown recogniser {asr!r} (known: {', '.join(RECOGNIZERS)})")


RECOGNIZERS = ("pocketsphinx", "espnet", "ctc")


def recognizer_language(asr: str, language: str | None = None) -> str | None:
    """The utt2lang code of the utterances recogniser ``asr`` serves (None: all), without
    loading it: English for pocketsphinx, else ``language``."""
    return PocketsphinxRecognizer.language if asr == "pocketsphinx" else language


class SpeechInput:
    """Transcribes audio files with a recogniser into documents (see module doc)."""

    def __init__(self, recognizer: Recognizer):
        self.recognizer = recognizer
        self.audio_seconds = 0.0

    def document(self, path: Path) -> Document:
        """One audio file's restored-to-be document."""
        samples, rate = read_audio(path)
        duration = len(samples) / rate
        self.audio_seconds += duration
        words = self.recognizer.transcribe(samples, rate, f"audio {path.name}")
        doc_id = path.stem
        timed = [w for w in words if isinstance(w, TimedWord)]
        if not timed:
            return Document(doc_id, [InputWord(str(w)) for w in words])
        return Document(doc_id, list(with_pauses(timed, duration, f"audio {doc_id}", path)))

    def documents(self, paths: Iterable[str | Path]) -> Iterator[Document]:
        """Documents of ``paths``, one at a time (``-``, stdin, is refused)."""
        for name in paths:
            if str(name) == "-":
                raise PunctInputError("speech input reads audio files, not stdin: name them")
            yield self.document(Path(name))
