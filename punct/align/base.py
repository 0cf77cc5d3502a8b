"""The aligner interface: one utterance's audio + words in, word timings out.

An aligner sees an :class:`AlignRequest` (the utterance's audio location, its optional
segment and its unpunctuated lower-case words) and returns an :class:`AlignResult` with
one :class:`TimedWord` per transcript word, times in seconds relative to the
utterance start (Kaldi's utterance-level CTM convention), or ``None`` when it has no
timings for that utterance (e.g. a reference file is missing). Aligners are registered
by name (``vad``, ``dtw``, ``pocketsphinx``, ``ctc``, ``auto``, ``reference``, ``ctm``,
``textgrid``) in the ``aligner`` table of :mod:`punct.registry` and built with
:func:`get_aligner`. :func:`check_plausible` is the
generic "transcript does not fit the audio" check on an alignment's word durations.

Aligners see speech words only: non-speech tokens of the corpus' map
(:mod:`punct.data.nonspeech`) are no words of the word table, :func:`speech_request`
takes them out of a request built elsewhere, and the file aligners drop them from
CTMs and TextGrids, so their time falls into the pause between the words around them.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from punct.data.audio import AlignRequest
from punct.data.nonspeech import NonSpeechMap, load_nonspeech_map
from punct.data.timed import TimedWord
from punct.errors import PunctInputError
from punct.registry import UnknownNameError, lookup, names


@dataclass
class AlignResult:
    """Word timings for one utterance plus the utterance's duration (seconds)."""

    words: list[TimedWord]
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


def check_plausible(request: AlignRequest, words: Sequence[TimedWord], duration: float,
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


def speech_request(request: AlignRequest,
                   nonspeech: NonSpeechMap | str | None = None) -> AlignRequest:
    """``request`` without its non-speech tokens (``nonspeech``: a map, a shipped name or
    a YAML path; None: the default map): what every aligner is given."""
    ns_map = load_nonspeech_map(nonspeech)
    words = tuple(w for w in request.words if not ns_map.is_nonspeech(w))
    return request if len(words) == len(request.words) else replace(request, words=words)


def speech_words(words: Sequence[TimedWord], nonspeech: NonSpeechMap | str | None = None
                 ) -> list[TimedWord]:
    """Timed words without the non-speech ones (CTM/TextGrid intervals such as
    ``<breath>``): the pause formula then spans their time."""
    ns_map = load_nonspeech_map(nonspeech)
    return [w for w in words if not ns_map.is_nonspeech(w.word)]


def available_aligners() -> list[str]:
    """Registered aligner names (the ``aligner`` table of :mod:`punct.registry`), sorted."""
    return names("aligner")


def get_aligner(name: str, **options: Any) -> Aligner:
    """Build the aligner registered as ``name`` with keyword ``options``.

    ValueError naming the known aligners for an unknown ``name``.
    """
    try:
        factory = lookup("aligner", name)
    except UnknownNameError as err:
        raise PunctInputError(str(err)) from None
    return factory(**options)
