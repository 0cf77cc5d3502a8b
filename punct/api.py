"""The Python API: restore punctuation and casing in one call.

>>> from punct import Restorer
>>> r = Restorer.from_pretrained("exp/autopunct_text")      # or an exported dir, or a Hub id
>>> r.restore("hello mr smith how are you")                  # one document -> str
>>> r.restore(["first document", "second one"])              # list -> list
>>> r.restore_words(["hi", "there"], starts=[0.0, 0.9], ends=[0.4, 1.3])  # -> list[Word]
>>> r.restore_words(["hi", "there"], scores=True)[0].probability  # with mark probabilities
>>> r.restore_sentences("hi there how are you")             # -> list of sentences
>>> for line in r.restore_stream(open("big.txt")): ...      # lazily, bounded memory

It wraps the engine of ``punct.bin.restore`` (``punct.infer.stream``): the same word
splitting (symbols outside the label set pass through unchanged), the same sliding windows
and batching, and the same pause computation as the command's readers (JSONL with times),
so pause-aware systems get their pauses exactly as the command gives them. Non-speech
tokens (``<breath>``, ``[noise]``; ``Restorer(..., nonspeech="babel")`` picks the map,
see docs/NONSPEECH.md) pass through at their position and are not punctuated.

``keep_case`` (every ``restore*`` method but ``restore_audio``): True keeps the exact
form of words written with internal or all capitals (``USA``, ``iPhone``); None (the
default) does so when the input is already cased; False lets the model case every word
(``punct.infer.casing``).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from punct.data.nonspeech import NonSpeechMap, load_nonspeech_map
from punct.engine.decode import decode_settings, pick_device
from punct.engine.symbols import SymbolTally, cased_input, tally
from punct.errors import PunctInputError
from punct.export.backends import backend_model, check_backend, choose_backend
from punct.export.system import System, load_system
from punct.infer.asr import SpeechInput, make_recognizer
from punct.infer.casing import CaseKeeper
from punct.infer.inputs import record_words
from punct.infer.quiet import set_loading_verbosity
from punct.infer.scores import confidence
from punct.infer.stream import (
    Document,
    InputWord,
    Segment,
    default_batch_words,
    text_input_words,
)
from punct.infer.stream import Restorer as Engine
from punct.infer.subtitles import sentences
from punct.labels import CANONICAL, OPENING_LABELS
from punct.wordtable import WordRow, render_rows

PRECISIONS = {"auto": "auto", "fp32": "off", "bf16": "on"}


@dataclass(frozen=True)
class Word:
    """One restored word: ``form`` (cased), ``word`` (lower-cased input), ``punct`` (marks in
    reading order, opening marks first), ``cap`` (O/FIRST_CAP/ALL_CAPS) and the times.

    With ``restore_words(..., scores=True)`` also ``mark_probs`` (the model's probability
    of every mark label of the system) and ``probability`` (the confidence of the word's
    marks: the probability of its least certain mark decision, see
    ``punct.infer.scores``); None otherwise, and for non-speech tokens. Neither takes part
    in ``==``."""

    form: str
    word: str
    punct: tuple[str, ...]
    cap: str
    start: float | None = None
    end: float | None = None
    pause_after: float | None = None
    probability: float | None = field(default=None, compare=False)
    mark_probs: dict[str, float] | None = field(default=None, compare=False)

    @property
    def text(self) -> str:
        """The word with its marks, as in the restored text."""
        opening = "".join(CANONICAL[p] for p in self.punct if p in OPENING_LABELS)
        closing = "".join(CANONICAL[p] for p in self.punct if p not in OPENING_LABELS)
        return opening + self.form + closing


class Restorer:
    """A trained system ready to restore text, timed words or a stream of documents."""

    def __init__(self, system: System, *, device: str | torch.device = "auto",
                 precision: str | None = None, backend: str = "auto", checkpoint: str = "best",
                 batch_words: int | None = None, block_words: int = 512,
                 context_words: int | None = None,
                 nonspeech: NonSpeechMap | str | None = None, **decode: Any):
        if precision is not None and precision not in PRECISIONS:
            raise PunctInputError(f"precision must be one of {sorted(PRECISIONS)}, "
                                  f"got {precision!r}")
        check_backend(backend)
        if system.streams:
            raise PunctInputError(
                f"{system.source} needs acoustic feature streams {list(system.streams)}, which "
                "restore does not compute; decode a data dir with punct.bin.decode instead")
        self.system = system
        self.device = pick_device(str(device))
        bf16 = decode.pop("bf16", None)
        if precision is not None:
            bf16 = PRECISIONS[precision]
        if backend == "auto":  # bf16 where native, else what the backend record allows
            explicit = bf16 is not None and str(bf16).lower() != "auto"
            setting = system.config.decode.bf16
            backend = choose_backend(system, self.device, setting if bf16 is None else bf16,
                                     explicit, checkpoint).backend
        model = backend_model(system, backend)
        if backend != "torch":
            self.device = torch.device("cpu")
            bf16 = "off"
        self.backend = backend
        # per-mark thresholds: ``decode.thresholds`` of the loaded config (thresholds.json)
        self.settings = settings = decode_settings(system.config, self.device, bf16=bf16,
                                                   **decode)
        if batch_words is None:
            batch_words = default_batch_words(settings, self.device)
        self.engine = Engine(model, system.featurizer, system.label_set, settings, self.device,
                             batch_words, block_words, context_words)
        self.nonspeech = load_nonspeech_map(nonspeech)
        self.symbols = SymbolTally(nonspeech_map=self.nonspeech)
        self._speech: tuple[tuple[str, str | None, int], Any] | None = None  # restore_audio

    @classmethod
    def from_pretrained(cls, path_or_hub_id: str | Path, *, device: str = "auto",
                        precision: str | None = None, backend: str = "auto",
                        checkpoint: str = "best", revision: str | None = None,
                        verbose: bool = False, **options: Any) -> Restorer:
        """Load an experiment dir (``exp/X``), an exported dir (``punct-export``) or a Hub
        id (needs ``huggingface_hub``). ``precision``: None (the system's ``decode.bf16``),
        ``auto`` (bf16 where the hardware has it), ``fp32`` or ``bf16``; ``backend``:
        ``auto`` (the default: bf16 where the hardware has it, else the fastest backend
        that the system's ``backends.json`` found within 0.5 micro-F1 of fp32, else
        fp32; ``punct.export.backends``), ``torch``, ``torch-int8`` (dynamic int8 Linear
        layers, CPU), ``onnx`` or ``onnx-int8`` (onnxruntime on an exported dir with
        ``model.onnx`` / ``model.int8.onnx``); ``Restorer.backend`` says which runs.
        Other options:
        ``window``, ``stride``, ``per_token``, ``batch_size``, ``aggregate``,
        ``threshold``, ``constraints`` (False: no document rules), ``batch_words``
        (None: 2048, on CUDA at least a decoding batch, ``default_batch_words``),
        ``block_words``, ``context_words`` (see docs/RESTORE.md)."""
        set_loading_verbosity(verbose)
        system = load_system(path_or_hub_id, pick_device(device), checkpoint, revision)
        return cls(system, device=device, precision=precision, backend=backend,
                   checkpoint=checkpoint, **options)

    # ------------------------------------------------------------------ public API
    def restore(self, text: str | Sequence[str], *, keep_case: bool | None = None
                ) -> str | list[str]:
        """Punctuate and case one document (a str) or each of a list of documents."""
        if isinstance(text, str):
            return next(iter(self.restore_stream([text], keep_case=keep_case)))
        return list(self.restore_stream(text, keep_case=keep_case))

    def restore_stream(self, texts: Iterable[str], *, keep_case: bool | None = None
                       ) -> Iterator[str]:
        """Restore documents read lazily from ``texts`` (e.g. an open file: one per line);
        yields one restored string per document, in order, in bounded memory."""
        for rows in self._restored_texts(texts, keep_case):
            yield render_rows(rows)

    def restore_sentences(self, text: str | Sequence[str], *, keep_case: bool | None = None
                          ) -> list[str] | list[list[str]]:
        """The restored text of one document (a str) cut into sentences, after every
        sentence-final mark (the ``sentences`` of ``punct-restore``'s JSONL); a list of
        documents gives a list of sentence lists."""
        single = isinstance(text, str)
        docs = [text] if isinstance(text, str) else text
        out = [sentences(rows) for rows in self._restored_texts(docs, keep_case)]
        return out[0] if single else out

    def restore_words(self, words: Sequence[str], starts: Sequence[float] | None = None,
                      ends: Sequence[float] | None = None, lang: str | None = None, *,
                      keep_case: bool | None = None, scores: bool = False) -> list[Word]:
        """Restore a list of words, optionally with start/end times in seconds (pauses are
        computed from them exactly as the restore command does for timed JSONL). Marks on
        the input words are stripped; a word made only of marks gives no output word.
        ``scores``: fill ``Word.probability`` and ``Word.mark_probs``."""
        if (starts is None) != (ends is None):
            raise PunctInputError("give both starts and ends, or neither")
        if starts is not None and ends is not None and not len(starts) == len(ends) == len(words):
            raise PunctInputError(f"{len(words)} words but {len(starts)} starts, {len(ends)} ends")
        if starts is None or ends is None:
            record: dict[str, Any] = {"id": "words", "words": [str(w) for w in words]}
        else:
            record = {"id": "words", "words": [
                {"word": str(w), "start": _finite(s), "end": _finite(e)}
                for w, s, e in zip(words, starts, ends, strict=True)]}
        with tally(self.nonspeech) as counter, _casing(keep_case):
            doc = Document("words", record_words(record, "<words>", 1), lang)
        self._count(counter)
        out: list[Word] = []
        for seg in self._restore_cased([doc], keep_case):
            probs = seg.probs if scores else None
            if probs is None:
                probs = [None] * len(seg.rows)
            out.extend(_word(row, p) for row, p in zip(seg.rows, probs, strict=True))
        return out

    def restore_audio(self, audio: str | Path | Sequence[str | Path],
                      asr_model: str | Path | None = None, *, asr: str | None = None,
                      beam_size: int = 10, lang: str | None = None
                      ) -> list[Word] | list[list[Word]]:
        """Transcribe audio files and restore the words with the recogniser's pauses (as
        ``punct-restore --asr``). ``asr="pocketsphinx"`` (the default without
        ``asr_model``): English, offline, the speech extra; ``asr="espnet"`` (the default
        with ``asr_model``): the ESPnet model ``asr_model``, its words timed by CTC
        segmentation (``./setup.sh --with-espnet``); ``asr="ctc"``: the wav2vec2/MMS CTC
        model ``asr_model`` (a directory or a Hugging Face id), greedy, timed by its
        frames. One path gives its words; a list gives a list per file."""
        single = isinstance(audio, str | Path)
        paths = [audio] if single else list(audio)
        name = asr or ("espnet" if asr_model is not None else "pocketsphinx")
        key = (name, None if asr_model is None else str(asr_model), int(beam_size))
        if self._speech is None or self._speech[0] != key:
            device = "cuda" if self.device.type == "cuda" else "cpu"
            self._speech = (key, SpeechInput(make_recognizer(name, asr_model, device,
                                                             beam_size)))
        speech = self._speech[1]
        out: list[list[Word]] = []
        for path in paths:
            doc = speech.document(Path(path))
            doc.lang = doc.lang or lang
            out.append([_word(row) for seg in self.restore_documents([doc]) for row in seg.rows])
        return out[0] if single else out

    def restore_documents(self, docs: Iterable[Document]) -> Iterator[Segment]:
        """The engine: ``Document`` objects in, ``Segment`` objects (word rows) out."""
        with tally(self.nonspeech) as counter:
            try:
                yield from self.engine.restore(docs)
            finally:
                self._count(counter)

    def _restore_cased(self, docs: Iterable[Document], keep_case: bool | None
                       ) -> Iterator[Segment]:
        """``restore_documents`` with keep-case (docs split inside ``cased_input()``
        unless ``keep_case`` is False)."""
        if keep_case is False:
            yield from self.restore_documents(docs)
            return
        keeper = CaseKeeper(keep_case)
        yield from keeper.segments(self.restore_documents(keeper.documents(docs)))

    def _restored_texts(self, texts: Iterable[str], keep_case: bool | None
                        ) -> Iterator[list[WordRow]]:
        """The restored rows of each text document, lazily and in order."""
        docs = (Document(f"<{k}>", self._words(t, keep_case))
                for k, t in enumerate(texts, 1))
        rows: list[WordRow] = []
        for seg in self._restore_cased(docs, keep_case):
            rows.extend(seg.rows)
            if seg.last:
                yield rows
                rows = []

    def _count(self, counter: SymbolTally) -> None:
        """Add a call's pass-through words to ``self.symbols`` (the running total)."""
        self.symbols.merge(counter)

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _words(text: str, keep_case: bool | None = False) -> list[InputWord]:
        if not isinstance(text, str):
            raise TypeError(f"documents must be str, got {type(text).__name__}")
        with _casing(keep_case):
            return text_input_words(text)


def _finite(value: float) -> float:
    value = float(value)
    if not math.isfinite(value):
        raise PunctInputError(f"times must be finite, got {value}")
    return value


def _casing(keep_case: bool | None) -> contextlib.AbstractContextManager[None]:
    """Words keep their case while split (for ``CaseKeeper``) unless keep-case is off."""
    return contextlib.nullcontext() if keep_case is False else cased_input()


def _word(row: WordRow, probs: dict[str, float] | None = None) -> Word:
    return Word(row.form, row.word, tuple(row.punct), row.cap, row.start, row.end,
                row.pause_after, None if probs is None else confidence(probs, row.punct),
                probs)
