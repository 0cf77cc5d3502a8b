"""``pocketsphinx``: offline English forced alignment with PocketSphinx's bundled en-US model.

The words are decoded against a grammar that allows only the transcript (with optional
silences and fillers between words; ``Decoder.set_align_text``) at 16 kHz, 10 ms
frames. When the search does not reach the end of the transcript it is repeated with
the next setting of ``attempts``: wider beams, then 5 ms frames (the 3-state phone
HMMs need 30 ms per phone at 10 ms frames, too slow for fast speech; wider beams alone
are not always better, PocketSphinx's search then sometimes ends early).
A word's time is its segment's first frame to the end of its last frame; silence and
filler segments become the pauses.

Words missing from the CMU dictionary get a pronunciation from eSpeak NG (en-us): the
phonemes eSpeak speaks for the word, mapped to the model's ARPAbet phones
(:data:`ESPEAK_TO_ARPABET`). A token of the non-speech map's *unintelligible* class
(``(())``, ``<unk>``: a word nobody could make out) gets :data:`UNINTELLIGIBLE_PHONES`, a
neutral vowel that the phone HMM's self-loops stretch over whatever was said. Any other
word that maps to no phone is an error naming it.

Mismatch: when the decoder cannot reach the end of the transcript (it does not fit the
audio), or when the words' mean acoustic log-score per frame (relative to the best
senone of each frame, so 0 is a perfect fit) is below ``min_score_per_frame``, or the
word durations are implausible (:func:`~punct.align.base.check_plausible`), the
utterance fails with a PunctInputError naming it (``on_mismatch="error"``) or is skipped
with a warning (``"skip"``).
"""

from __future__ import annotations

import math
import os
import re
import sys
import threading
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from punct.align.base import Aligner, AlignRequest, AlignResult, check_plausible
from punct.data.nonspeech import NonSpeechMap, load_nonspeech_map
from punct.data.timed import TimedWord
from punct.errors import PunctInputError
from punct.extras import require
from punct.features.resample import resample_int16
from punct.synth.espeak import get_engine

SAMPLE_RATE = 16000
#: Pronunciation of an unintelligible token (``(())``, ``<unk>``): one neutral vowel,
#: under a dictionary name PocketSphinx accepts (it rejects brackets and parentheses).
UNINTELLIGIBLE_PHONES: tuple[str, ...] = ("AH",)
UNINTELLIGIBLE_ENTRY = "unintelligible_word"
FRAME_RATE = 100

#: eSpeak NG (en) phoneme mnemonics -> CMU/ARPAbet phones (stress marks stripped first).
ESPEAK_TO_ARPABET: dict[str, tuple[str, ...]] = {
    "a": ("AE",), "a#": ("AH",), "aa": ("AA",), "A:": ("AA",), "A@": ("AA", "R"),
    "A": ("AA",), "aI": ("AY",), "aI@": ("AY", "ER"), "aI3": ("AY", "ER"), "aU": ("AW",),
    "aU@": ("AW", "ER"), "@": ("AH",), "@2": ("AH",), "@5": ("AH",), "@L": ("AH", "L"),
    "@r": ("ER",), "3": ("ER",), "3:": ("ER",), "E": ("EH",), "E2": ("EH",),
    "e@": ("EH", "R"), "eI": ("EY",), "I": ("IH",), "I2": ("IH",), "I#": ("IH",),
    "i": ("IY",), "i:": ("IY",), "i@": ("IY", "ER"), "i@3": ("IY", "ER"), "O": ("AO",),
    "O:": ("AO",), "O@": ("AO", "R"), "o@": ("AO", "R"), "OI": ("OY",), "oU": ("OW",),
    "0": ("AA",), "U": ("UH",), "u:": ("UW",), "U@": ("UH", "R"), "V": ("AH",),
    "p": ("P",), "b": ("B",), "t": ("T",), "t#": ("T",), "d": ("D",), "d#": ("D",),
    "k": ("K",), "g": ("G",), "f": ("F",), "v": ("V",), "T": ("TH",), "D": ("DH",),
    "s": ("S",), "z": ("Z",), "S": ("SH",), "Z": ("ZH",), "h": ("HH",), "x": ("HH",),
    "m": ("M",), "n": ("N",), "n-": ("N",), "N": ("NG",), "l": ("L",), "l-": ("L",),
    "r": ("R",), "r-": ("R",), "w": ("W",), "W": ("W",), "j": ("Y",), "tS": ("CH",),
    "dZ": ("JH",), "?": (), "_": (), "_:": (), "_!": (),
}


@dataclass(frozen=True)
class PocketsphinxConfig:
    """Decoder settings (frames per second, beam, wbeam, pbeam), tried in order until
    the search covers the transcript, and the mismatch limit."""

    attempts: tuple[tuple[int, float, float, float], ...] = (
        (100, 1e-48, 1e-40, 1e-48), (100, 1e-100, 1e-80, 1e-100), (200, 1e-48, 1e-40, 1e-48))
    # mean ln acoustic score per word frame, at least: matching transcripts gave -1.0 to
    # -3.5 (MFA and mini English), other utterances' transcripts -4.0 to -5.0
    min_score_per_frame: float = -3.8
    languages: tuple[str, ...] = ("en",)  # utt2lang codes this model serves
    on_mismatch: str = "error"


def espeak_phones(word: str) -> list[str]:
    """ARPAbet phones for ``word`` from eSpeak NG's en-us phonemes ([] if none map)."""
    result = get_engine().synthesize(word, "en-us", 175, 50)
    phones: list[str] = []
    for ev in result.events:
        if ev.kind != "phoneme" or not ev.phoneme:
            continue
        name = ev.phoneme.lstrip("',")
        for key in (name, name.rstrip("#-0123456789"), name[:1]):
            if key in ESPEAK_TO_ARPABET:
                phones.extend(ESPEAK_TO_ARPABET[key])
                break
    return phones


def _is_speech_word(name: str) -> bool:
    return not (name.startswith("<") or name.startswith("[") or name.startswith("+")
                or name in ("", "sil"))


def _base_word(name: str) -> str:
    return re.sub(r"\(\d+\)$", "", name)


def _ln(x: float) -> float:
    return math.log(x) if x > 0 else -745.0  # below the smallest double: off the scale


class _Decoder:
    """One PocketSphinx decoder per process (loading the model takes a while)."""

    _lock = threading.Lock()
    _shared: ClassVar[dict[tuple, Any]] = {}

    @classmethod
    def get(cls, key: tuple[int, float, float, float]) -> Any:
        # optional extra: pocketsphinx is imported only when its aligner runs
        pocketsphinx = require("pocketsphinx", "speech", "the pocketsphinx aligner")

        with cls._lock:
            if key not in cls._shared:
                model = os.path.join(pocketsphinx.get_model_path(), "en-us")
                cls._shared[key] = pocketsphinx.Decoder(
                    hmm=os.path.join(model, "en-us"),
                    dict=os.path.join(model, "cmudict-en-us.dict"),
                    lm=None, samprate=SAMPLE_RATE, frate=key[0], loglevel="FATAL",
                    beam=key[1], wbeam=key[2], pbeam=key[3],
                )
            return cls._shared[key]


class PocketsphinxAligner(Aligner):
    """Forced alignment with PocketSphinx's en-US model (see the module docstring)."""

    name = "pocketsphinx"

    def __init__(self, config: PocketsphinxConfig | None = None,
                 nonspeech: NonSpeechMap | str | None = None, **_: object):
        self.config = config or PocketsphinxConfig()
        self.nonspeech = load_nonspeech_map(nonspeech)
        if self.config.on_mismatch not in ("error", "skip"):
            raise PunctInputError(f"on_mismatch must be 'error' or 'skip', not "
                                  f"{self.config.on_mismatch!r}")

    def _error(self, request: AlignRequest, message: str) -> PunctInputError:
        return PunctInputError(f"utterance {request.utt_id}: {message}", request.wav_scp,
                               request.wav_line)

    def _spoken(self, request: AlignRequest) -> list[str]:
        """The dictionary entries of the request's words (unintelligible tokens: one entry)."""
        return [UNINTELLIGIBLE_ENTRY if self.nonspeech.is_unintelligible(w) else w
                for w in request.words]

    def _ensure_words(self, decoder: Any, request: AlignRequest) -> None:
        if decoder.lookup_word(UNINTELLIGIBLE_ENTRY) is None:
            decoder.add_word(UNINTELLIGIBLE_ENTRY, " ".join(UNINTELLIGIBLE_PHONES), True)
        for i, word in enumerate(self._spoken(request)):
            if decoder.lookup_word(word) is not None:
                continue
            phones = espeak_phones(word)
            if not phones:
                raise self._error(request, f"word {i + 1} {word!r} is not in the CMU "
                                           "dictionary and eSpeak NG gives it no phones")
            decoder.add_word(word, " ".join(phones), True)

    def align(self, request: AlignRequest) -> AlignResult | None:
        lang = (request.lang or "en").lower()
        if lang not in self.config.languages:
            raise self._error(request, f"pocketsphinx has an English model only, not "
                                       f"{lang!r} (use --aligner dtw or auto)")
        samples, rate = request.load_audio()
        duration = len(samples) / rate
        if not request.words:
            return AlignResult([], duration)
        pcm = np.clip(np.rint(samples * 32767.0), -32768, 32767).astype(np.int16)
        if rate != SAMPLE_RATE:
            pcm = resample_int16(pcm, rate, SAMPLE_RATE)
        segs, frate = None, FRAME_RATE
        for attempt in self.config.attempts:
            segs, frate = self._decode(_Decoder.get(attempt), request, pcm), attempt[0]
            if segs is not None:
                break
        if segs is None:
            return self._mismatch(request, "the decoder cannot reach the end of the "
                                           "transcript in the audio")
        frames = sum(s.end_frame - s.start_frame + 1 for s in segs)
        per_frame = sum(_ln(s.ascore) for s in segs) / max(1, frames)
        if per_frame < self.config.min_score_per_frame:
            return self._mismatch(request, f"mean acoustic log-score {per_frame:.2f} per frame "
                                           f"(at least {self.config.min_score_per_frame:g})")
        words = [TimedWord(w, round(min(s.start_frame / frate, duration), 4),
                             round(min((s.end_frame + 1) / frate, duration), 4))
                 for w, s in zip(request.words, segs, strict=True)]
        check_plausible(request, words, duration)
        return AlignResult(words, duration)

    def _decode(self, decoder: Any, request: AlignRequest, pcm: np.ndarray) -> list | None:
        """The transcript words' segments, or None when the search did not cover them."""
        self._ensure_words(decoder, request)
        try:
            decoder.set_align_text(" ".join(self._spoken(request)))
        except RuntimeError as err:
            raise self._error(request, f"pocketsphinx rejects the transcript: {err}") from err
        decoder.start_utt()
        decoder.process_raw(pcm.tobytes(), full_utt=True)
        decoder.end_utt()
        if decoder.hyp() is None:
            return None
        segs = [s for s in decoder.seg() if _is_speech_word(s.word)]
        if [_base_word(s.word) for s in segs] != self._spoken(request):
            return None  # the search ended early in the grammar
        return segs

    def _mismatch(self, request: AlignRequest, why: str) -> None:
        message = f"transcript does not fit the audio: {why}"
        if self.config.on_mismatch == "error":
            raise self._error(request, message)
        print(f"warning: utterance {request.utt_id}: {message}; no timings", file=sys.stderr)
        return None
