"""The aligner interface: one utterance's audio + words in, word timings out.

An aligner sees an :class:`AlignRequest` (the utterance's audio location, its optional
segment and its unpunctuated lower-case words) and returns an :class:`AlignResult` with
one :class:`AlignedWord` per transcript word, times in seconds relative to the
utterance start (Kaldi's utterance-level CTM convention), or ``None`` when it has no
timings for that utterance (e.g. a reference file is missing). Aligners are registered
by name (``vad``, ``dtw``, ``pocketsphinx``, ``ctc``, ``auto``, ``reference``, ``ctm``,
``textgrid``) and built with :func:`get_aligner`. :func:`check_plausible` is the
generic "transcript does not fit the audio" check on an alignment's word durations.
"""

from __future__ import annotations

import abc
import io
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from punct.errors import MissingDataError, PunctInputError


@dataclass(frozen=True)
class AlignedWord:
    """A word with its start and end time in seconds (``line``: source line, if any)."""

    word: str
    start: float
    end: float
    line: int | None = field(default=None, compare=False)

    @property
    def duration(self) -> float:
        """End minus start, in seconds."""
        return self.end - self.start


@dataclass(frozen=True)
class AlignRequest:
    """One utterance to align.

    ``wav`` is the wav.scp value of its recording (a path, or a command ending in ``|``);
    ``seg_start``/``seg_end`` its segment in seconds (None: the whole recording; a
    negative ``seg_end`` means "to the end", as in Kaldi). ``wav_scp``/``wav_line`` name
    the wav.scp line for error messages; ``lang`` is the utt2lang code, if known.
    """

    utt_id: str
    words: tuple[str, ...]
    wav: str = ""
    reco_id: str = ""
    seg_start: float | None = None
    seg_end: float | None = None
    wav_scp: str | None = None
    wav_line: int | None = None
    lang: str | None = None

    @property
    def recording(self) -> str:
        """The recording id (the utterance id when there is no segments file)."""
        return self.reco_id or self.utt_id

    def _error(self, message: str, missing: bool = False) -> PunctInputError:
        cls = MissingDataError if missing else PunctInputError
        return cls(f"utterance {self.utt_id}: {message}", self.wav_scp, self.wav_line)

    def load_audio(self) -> tuple[np.ndarray, int]:
        """Read the utterance's samples (mono float32, channels averaged) and rate."""
        import soundfile

        src = self.wav.strip()
        if not src:
            raise self._error("no audio (empty wav.scp entry)", missing=True)
        try:
            if src.endswith("|"):
                proc = subprocess.run(
                    src[:-1], shell=True, capture_output=True, check=False
                )
                if proc.returncode != 0:
                    raise self._error(
                        f"wav.scp command failed with exit code {proc.returncode}: "
                        + proc.stderr.decode(errors="replace").strip()[-300:]
                    )
                data, rate = soundfile.read(io.BytesIO(proc.stdout), dtype="float32",
                                            always_2d=True)
            else:
                if not Path(src).is_file():
                    raise self._error(f"audio file not found: {src}", missing=True)
                data, rate = soundfile.read(src, dtype="float32", always_2d=True)
        except PunctInputError:
            raise
        except Exception as err:  # soundfile raises several types for bad audio
            raise self._error(f"unreadable audio {src!r}: {err}") from err
        samples = data.mean(axis=1) if data.shape[1] > 1 else data[:, 0]
        return self._cut(samples, rate), rate

    def _cut(self, samples: np.ndarray, rate: int) -> np.ndarray:
        if self.seg_start is None:
            return samples
        total = len(samples) / rate
        end = total if self.seg_end is None or self.seg_end < 0 else self.seg_end
        if self.seg_start < 0 or end <= self.seg_start or self.seg_start >= total + 0.01:
            raise self._error(
                f"segment {self.seg_start:.3f}-{end:.3f} s outside the recording "
                f"({total:.3f} s)"
            )
        return samples[round(self.seg_start * rate): round(min(end, total) * rate)]

    def duration(self) -> float:
        """The utterance's duration in seconds (reads only the header when it can)."""
        if self.seg_start is not None and self.seg_end is not None and self.seg_end >= 0:
            return self.seg_end - self.seg_start
        src = self.wav.strip()
        if src and not src.endswith("|"):
            import soundfile

            if not Path(src).is_file():
                raise self._error(f"audio file not found: {src}", missing=True)
            try:
                info = soundfile.info(src)
            except Exception as err:
                raise self._error(f"unreadable audio {src!r}: {err}") from err
            total = info.frames / info.samplerate
            return total - (self.seg_start or 0.0)
        samples, rate = self.load_audio()
        return len(samples) / rate


@dataclass
class AlignResult:
    """Word timings for one utterance plus the utterance's duration (seconds)."""

    words: list[AlignedWord]
    duration: float


class Aligner(abc.ABC):
    """Base class: ``align`` one utterance; ``None`` means "no timings available"."""

    name: ClassVar[str] = ""

    @abc.abstractmethod
    def align(self, request: AlignRequest) -> AlignResult | None:
        """Return timings for every word of ``request`` (in order) or None."""


@dataclass(frozen=True)
class Plausibility:
    """Limits on an alignment's word durations (seconds) beyond which it is a mismatch."""

    min_word: float = 0.02          # a word shorter than this is "crammed"
    max_short_share: float = 0.3    # ... and at most this share of the words may be
    max_words_per_s: float = 8.0    # words per second of the aligned span, at most
    min_words: int = 5              # utterances with fewer words are not checked


def check_plausible(request: AlignRequest, words: Sequence[AlignedWord], duration: float,
                    limits: Plausibility = Plausibility()) -> None:
    """Raise PunctInputError (naming the utterance and wav.scp line) when the words are
    crammed into implausible durations: a sign that the transcript is not what the
    audio says, or far longer."""
    if len(words) < limits.min_words:
        return
    short = sum(1 for w in words if w.duration < limits.min_word - 1e-9)
    why = None
    if short > limits.max_short_share * len(words):
        why = (f"{short} of {len(words)} words are shorter than "
               f"{limits.min_word * 1000:.0f} ms")
    else:
        span = max(words[-1].end - words[0].start, 1e-3)
        rate = len(words) / span
        if rate > limits.max_words_per_s:
            why = (f"{len(words)} words in {span:.2f} s ({rate:.1f} words/s, "
                   f"at most {limits.max_words_per_s:g})")
    if why:
        raise PunctInputError(f"utterance {request.utt_id}: transcript does not fit the "
                              f"audio ({duration:.2f} s): {why}", request.wav_scp,
                              request.wav_line)


_REGISTRY: dict[str, Callable[..., Aligner]] = {}


def register_aligner(name: str) -> Callable[[Callable[..., Aligner]], Callable[..., Aligner]]:
    """Class decorator registering an aligner factory under ``name``."""

    def deco(factory: Callable[..., Aligner]) -> Callable[..., Aligner]:
        if name in _REGISTRY and _REGISTRY[name] is not factory:
            raise ValueError(f"aligner {name!r} registered twice")
        _REGISTRY[name] = factory
        return factory

    return deco


def available_aligners() -> list[str]:
    """Registered aligner names, sorted."""
    _load_builtin()
    return sorted(_REGISTRY)


def get_aligner(name: str, **options: Any) -> Aligner:
    """Build the aligner registered as ``name`` with keyword ``options``."""
    _load_builtin()
    if name not in _REGISTRY:
        raise ValueError(f"unknown aligner {name!r}; known: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name](**options)


def _load_builtin() -> None:
    # Importing the modules registers the built-in aligners.
    from punct.align import (  # noqa: F401
        auto,
        ctc_aligner,
        ctm,
        dtw_aligner,
        pocketsphinx_aligner,
        textgrid,
        vad_aligner,
    )

