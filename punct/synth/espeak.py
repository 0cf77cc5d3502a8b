"""A ctypes binding of the eSpeak NG C API (speak_lib.h), synchronous synthesis only.

The library and its data come from the ``espeakng-loader`` wheel. eSpeak NG keeps
global state and is not re-entrant, so one engine is initialised per process
(``get_engine()``) and every call holds a lock. ``Engine.synthesize`` returns the
22,050 Hz 16-bit samples together with the synthesiser's events (sentence, word,
phoneme, clause end) with their sample positions and 0-based character offsets.

Determinism: eSpeak NG carries state from one synthesis to the next (the waveform
generator's phase and noise), so the same text gives slightly different audio
depending on what was spoken before, and re-initialising does not reset it. To make
every utterance depend only on its own text and settings, ``synthesize`` forks a
child process from the freshly initialised engine for each call (the engine in the
parent never speaks); the child speaks and sends the result back through a pipe.
eSpeak also seeds its noise generator (breath noise of variants like ``+f3``) from
the clock at initialisation; every call re-seeds it from a hash of its arguments.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import threading
import traceback
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from punct.errors import PunctInputError
from punct.extras import require

# espeak_EVENT_TYPE
EVENT_LIST_TERMINATED = 0
EVENT_WORD = 1
EVENT_SENTENCE = 2
EVENT_MARK = 3
EVENT_PLAY = 4
EVENT_END = 5
EVENT_MSG_TERMINATED = 6
EVENT_PHONEME = 7
EVENT_SAMPLERATE = 8
EVENT_NAMES = {
    EVENT_WORD: "word",
    EVENT_SENTENCE: "sentence",
    EVENT_MARK: "mark",
    EVENT_PLAY: "play",
    EVENT_END: "end",
    EVENT_MSG_TERMINATED: "msg_terminated",
    EVENT_PHONEME: "phoneme",
    EVENT_SAMPLERATE: "samplerate",
}

# espeak_AUDIO_OUTPUT
AUDIO_OUTPUT_SYNCHRONOUS = 2
# espeak_POSITION_TYPE
POS_CHARACTER = 1
# espeak_Initialize options
INITIALIZE_PHONEME_EVENTS = 0x0001
INITIALIZE_DONT_EXIT = 0x8000
# espeak_Synth flags
CHARS_UTF8 = 1
# espeak_PARAMETER
PARAM_RATE = 1
PARAM_VOLUME = 2
PARAM_PITCH = 3
PARAM_RANGE = 4
PARAM_PUNCTUATION = 5
PARAM_WORDGAP = 7
# espeak_ERROR
EE_OK = 0

SAMPLE_RATE = 22050
RATE_RANGE = (80, 450)  # words per minute accepted by eSpeak NG
PITCH_RANGE = (0, 100)


_LIBC = ctypes.CDLL(None)  # rand() is used by some eSpeak code paths
_LIBC.srand.argtypes = [ctypes.c_uint]
_LIBC.srand.restype = None


class EspeakError(RuntimeError):
    """The eSpeak NG library refused a call or is unusable."""


class _EventId(ctypes.Union):
    _fields_ = [
        ("number", ctypes.c_int),
        ("name", ctypes.c_char_p),
        ("string", ctypes.c_char * 8),
    ]


class EspeakEvent(ctypes.Structure):
    """``espeak_EVENT`` from speak_lib.h."""

    _fields_ = [
        ("type", ctypes.c_int),
        ("unique_identifier", ctypes.c_uint),
        ("text_position", ctypes.c_int),
        ("length", ctypes.c_int),
        ("audio_position", ctypes.c_int),
        ("sample", ctypes.c_int),
        ("user_data", ctypes.c_void_p),
        ("id", _EventId),
    ]


SynthCallback = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(EspeakEvent)
)


@dataclass(frozen=True)
class SynthEvent:
    """One synthesiser event.

    ``sample`` is the position in the 22,050 Hz output, ``audio_ms`` the library's
    millisecond position, ``char_pos`` the 0-based character offset into the text
    (eSpeak's ``text_position`` minus one), ``length`` the length in characters
    (words only), ``number`` the word/sentence number and ``phoneme`` the phoneme
    mnemonic (phoneme events only, else "").
    """

    kind: str
    sample: int
    audio_ms: int
    char_pos: int
    length: int
    number: int
    phoneme: str

    @property
    def time(self) -> float:
        """Position in seconds."""
        return self.sample / SAMPLE_RATE


@dataclass(frozen=True)
class SynthResult:
    """Audio (int16, mono) and events of one synthesis call."""

    samples: np.ndarray
    sample_rate: int
    events: tuple[SynthEvent, ...]

    @property
    def duration(self) -> float:
        return len(self.samples) / self.sample_rate


def library_paths() -> tuple[str, str]:
    """(shared library path, data directory) of the ``espeakng-loader`` wheel."""
    # optional extra: the GPL eSpeak NG library, loaded only when speech is synthesised
    espeakng_loader = require("espeakng_loader", "speech", "eSpeak NG")
    return espeakng_loader.get_library_path(), espeakng_loader.get_data_path()


class Engine:
    """The process-wide initialised eSpeak NG instance (use ``get_engine()``)."""

    def __init__(self, lib_path: str, data_path: str):
        self._lib = ctypes.CDLL(lib_path)
        self._declare()
        rate = self._lib.espeak_Initialize(
            AUDIO_OUTPUT_SYNCHRONOUS,
            200,
            data_path.encode(),
            INITIALIZE_PHONEME_EVENTS | INITIALIZE_DONT_EXIT,
        )
        if rate != SAMPLE_RATE:
            raise EspeakError(f"espeak_Initialize failed or gave rate {rate} (data {data_path})")
        self.sample_rate = rate
        self.version = self._lib.espeak_Info(None).decode()
        self._chunks: list[np.ndarray] = []
        self._events: list[SynthEvent] = []
        self._callback = SynthCallback(self._on_audio)  # keep a reference alive
        self._lib.espeak_SetSynthCallback(self._callback)
        self._lock = threading.Lock()
        self._synth_lock = threading.Lock()
        self._used = False

    def _declare(self) -> None:
        lib = self._lib
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_Initialize.restype = ctypes.c_int
        lib.espeak_SetSynthCallback.argtypes = [SynthCallback]
        lib.espeak_SetSynthCallback.restype = None
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetVoiceByName.restype = ctypes.c_int
        lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.espeak_SetParameter.restype = ctypes.c_int
        lib.espeak_GetParameter.argtypes = [ctypes.c_int, ctypes.c_int]
        lib.espeak_GetParameter.restype = ctypes.c_int
        lib.espeak_Synth.argtypes = [
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_uint,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.c_uint,
            ctypes.POINTER(ctypes.c_uint),
            ctypes.c_void_p,
        ]
        lib.espeak_Synth.restype = ctypes.c_int
        lib.espeak_Synchronize.argtypes = []
        lib.espeak_Synchronize.restype = ctypes.c_int
        lib.espeak_Info.argtypes = [ctypes.c_void_p]
        lib.espeak_Info.restype = ctypes.c_char_p
        lib.espeak_ng_SetRandSeed.argtypes = [ctypes.c_long]
        lib.espeak_ng_SetRandSeed.restype = None

    def _on_audio(self, wav, numsamples, events) -> int:
        """The synth callback: collect samples and events; 0 means go on."""
        if numsamples > 0 and wav:
            self._chunks.append(np.ctypeslib.as_array(wav, shape=(numsamples,)).copy())
        i = 0
        while events[i].type != EVENT_LIST_TERMINATED:
            ev = events[i]
            kind = EVENT_NAMES.get(ev.type, str(ev.type))
            phoneme = ""
            number = 0
            if ev.type == EVENT_PHONEME:
                phoneme = bytes(ev.id.string).split(b"\0", 1)[0].decode("ascii", "replace")
            elif ev.type in (EVENT_WORD, EVENT_SENTENCE, EVENT_END, EVENT_SAMPLERATE):
                number = ev.id.number
            self._events.append(
                SynthEvent(
                    kind=kind,
                    sample=ev.sample,
                    audio_ms=ev.audio_position,
                    char_pos=ev.text_position - 1,
                    length=ev.length,
                    number=number,
                    phoneme=phoneme,
                )
            )
            i += 1
        return 0

    def _check(self, code: int, what: str) -> None:
        if code != EE_OK:
            raise EspeakError(f"{what} failed with eSpeak error {code}")

    def synthesize(self, text: str, voice: str, rate: int = 175, pitch: int = 50) -> SynthResult:
        """Speak ``text`` with ``voice`` (e.g. "en-us+f3") at ``rate`` wpm and ``pitch`` 0-100.

        Runs in a forked child of the pristine engine, so the result depends only on
        the arguments (byte-identical on every call, in any order).
        """
        _check_settings(rate, pitch)
        with self._lock:
            if self._used:
                raise EspeakError("this engine has spoken in-process; its state is not pristine")
            return _in_child(lambda: self.synthesize_here(text, voice, rate, pitch))

    def synthesize_here(
        self, text: str, voice: str, rate: int = 175, pitch: int = 50
    ) -> SynthResult:
        """Speak in this process (changes the engine state: later output differs slightly)."""
        _check_settings(rate, pitch)
        data = text.encode("utf-8") + b"\0"
        buf = ctypes.create_string_buffer(data, len(data))
        with self._synth_lock:
            self._used = True
            self._check(self._lib.espeak_SetVoiceByName(voice.encode()), f"voice {voice!r}")
            self._check(self._lib.espeak_SetParameter(PARAM_RATE, rate, 0), "set rate")
            self._check(self._lib.espeak_SetParameter(PARAM_PITCH, pitch, 0), "set pitch")
            self._check(self._lib.espeak_SetParameter(PARAM_WORDGAP, 0, 0), "set word gap")
            # the breath noise of some variants (+f2, +f3) comes from eSpeak's generator,
            # which espeak_Initialize seeds with the clock: seed it from the request
            seed = zlib.crc32(f"{voice}|{rate}|{pitch}|{text}".encode())
            self._lib.espeak_ng_SetRandSeed(seed)
            _LIBC.srand(seed)
            self._chunks = []
            self._events = []
            code = self._lib.espeak_Synth(
                buf, len(data), 0, POS_CHARACTER, 0, CHARS_UTF8, None, None
            )
            self._check(code, "espeak_Synth")
            self._check(self._lib.espeak_Synchronize(), "espeak_Synchronize")
            chunks, events = self._chunks, self._events
            self._chunks, self._events = [], []
        samples = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int16)
        return SynthResult(samples.astype(np.int16), self.sample_rate, tuple(events))


def _check_settings(rate: int, pitch: int) -> None:
    if not RATE_RANGE[0] <= rate <= RATE_RANGE[1]:
        raise PunctInputError(f"rate {rate} outside {RATE_RANGE}")
    if not PITCH_RANGE[0] <= pitch <= PITCH_RANGE[1]:
        raise PunctInputError(f"pitch {pitch} outside {PITCH_RANGE}")


def _in_child(work: Callable[[], SynthResult]) -> SynthResult:
    """Run ``work`` in a forked child and return its result (or raise its error)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns
        status = 0
        try:
            os.close(read_fd)
            try:
                payload = pickle.dumps(("ok", work()), protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException as err:
                msg = f"{type(err).__name__}: {err}\n{traceback.format_exc()}"
                payload = pickle.dumps(("error", msg))
            with os.fdopen(write_fd, "wb") as out:
                out.write(payload)
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as inp:
        data = inp.read()
    _, status = os.waitpid(pid, 0)
    if not data or os.waitstatus_to_exitcode(status) != 0:
        raise EspeakError(f"synthesis child process failed (status {status})")
    kind, value = pickle.loads(data)
    if kind == "error":
        raise EspeakError(f"synthesis failed in the child process: {value}")
    return value


_ENGINE: Engine | None = None
_ENGINE_LOCK = threading.Lock()


def get_engine() -> Engine:
    """The process's single initialised engine (created on first use)."""
    global _ENGINE
    with _ENGINE_LOCK:
        if _ENGINE is None:
            _ENGINE = Engine(*library_paths())
        return _ENGINE
