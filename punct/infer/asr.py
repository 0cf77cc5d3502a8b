"""Speech input of ``restore --asr-model``: audio files -> ESPnet ASR -> ``Document`` stream.

Each audio file (anything soundfile reads; channels averaged) is one document, its id
the file name without the extension. An ESPnet ``Speech2Text`` decodes it; the
hypothesis words are then timed by CTC segmentation with the same model, so the pauses
between them reach the restoring model exactly as from a CTM (with
``timings=False``, or for a hypothesis of no words, the words come untimed).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from punct.align.espnet_model import EspnetAsr, EspnetCtc
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


class SpeechInput:
    """Transcribes audio files with an ESPnet model and times the words (see module doc)."""

    def __init__(self, model: str | Path, device: str = "cpu", beam_size: int = 10,
                 timings: bool = True):
        self.asr = EspnetAsr(model, device, beam_size)
        self.ctc = EspnetCtc(model, device) if timings else None

    def document(self, path: Path) -> Document:
        """One audio file's restored-to-be document."""
        samples, rate = read_audio(path)
        words = self.asr.transcribe(samples, rate)
        doc_id = path.stem
        if self.ctc is None or not words:
            return Document(doc_id, [InputWord(w) for w in words])
        timed = self.ctc.align_words(samples, rate, words, f"audio {path.name}",
                                     (str(path), None))
        duration = len(samples) / rate
        return Document(doc_id, list(with_pauses(timed, duration, f"audio {doc_id}", path)))

    def documents(self, paths: Iterable[str | Path]) -> Iterator[Document]:
        """Documents of ``paths``, one at a time (``-``, stdin, is refused)."""
        for name in paths:
            if str(name) == "-":
                raise PunctInputError("--asr-model reads audio files, not stdin: name them")
            yield self.document(Path(name))
