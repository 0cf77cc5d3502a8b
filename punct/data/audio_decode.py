"""Compressed audio that libsndfile cannot read (m4a/AAC, mp4), decoded without torchaudio.

Two decoders, tried in this order: the PyAV package (``pip install av``, the ``align``
extra; it bundles the ffmpeg libraries) and an ``ffmpeg`` program on ``PATH`` (with
``ffprobe`` for durations). When neither is there, :class:`AudioDecoderMissing` names the
file and says what to install. Samples come back as mono float32 (channels averaged) at
the file's own sample rate.
"""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import numpy as np

from punct.errors import MissingDataError, PunctInputError
from punct.extras import require

DECODED_SUFFIXES = (".m4a", ".mp4", ".aac")
"""File name endings read through a decoder instead of libsndfile."""

INSTALL_HINT = ("install PyAV (pip install av, part of the 'align' extra) or put ffmpeg on "
                "PATH (Debian: apt-get install ffmpeg)")


class AudioDecoderMissing(MissingDataError):
    """No decoder for a compressed audio file is installed."""


def needs_decoder(path: str | Path) -> bool:
    """True when ``path`` is a format read through PyAV or ffmpeg (m4a, mp4, aac)."""
    return str(path).lower().endswith(DECODED_SUFFIXES)


def _have_pyav() -> bool:
    try:
        import av  # noqa: F401  # optional extra: PyAV (align), decodes m4a when installed
    except ImportError:
        return False
    return True


def decoder_name() -> str | None:
    """``"pyav"``, ``"ffmpeg"`` or None: the decoder this machine would use."""
    if _have_pyav():
        return "pyav"
    return "ffmpeg" if shutil.which("ffmpeg") else None


def _decode_pyav(path: Path) -> tuple[np.ndarray, int]:
    av = require("av", "align", "decoding m4a/mp4/aac")  # optional extra: PyAV

    chunks: list[np.ndarray] = []
    with av.open(str(path)) as container:
        if not container.streams.audio:
            raise PunctInputError("no audio stream in the file", path)
        stream = container.streams.audio[0]
        rate = int(stream.codec_context.sample_rate or stream.rate)
        for frame in container.decode(stream):
            data = frame.to_ndarray()
            if not frame.format.is_planar:  # interleaved: (1, samples * channels)
                data = data.reshape(-1, len(frame.layout.channels)).T
            chunks.append(to_float(data).mean(axis=0))
    samples = np.concatenate(chunks) if chunks else np.zeros(0, np.float32)
    return samples.astype(np.float32), rate


def to_float(data: np.ndarray) -> np.ndarray:
    """Samples as float32 in [-1, 1]: integer PCM (e.g. ALAC in m4a) is scaled by its range."""
    if np.issubdtype(data.dtype, np.integer):
        info = np.iinfo(data.dtype)
        half = (int(info.max) - int(info.min) + 1) / 2  # 32768 for int16, 128 for uint8
        centre = int(info.min) + half  # 0 for signed, 128 for uint8
        return ((data.astype(np.float64) - centre) / half).astype(np.float32)
    return data.astype(np.float32)


def _decode_ffmpeg(path: Path) -> tuple[np.ndarray, int]:
    proc = subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-i", str(path), "-f", "wav", "-acodec",
         "pcm_f32le", "-"], capture_output=True, check=False)
    if proc.returncode != 0:
        raise PunctInputError("ffmpeg could not decode the file: "
                              + proc.stderr.decode(errors="replace").strip()[-300:], path)
    soundfile = require("soundfile", "align", "reading audio")  # optional extra: audio I/O
    data, rate = soundfile.read(io.BytesIO(proc.stdout), dtype="float32", always_2d=True)
    return data.mean(axis=1).astype(np.float32), int(rate)


def decode_audio(path: str | Path) -> tuple[np.ndarray, int]:
    """The samples (mono float32) and sample rate of a compressed audio file."""
    path = Path(path)
    if not path.is_file():
        raise MissingDataError("audio file not found", path)
    which = decoder_name()
    if which is None:
        raise AudioDecoderMissing(f"cannot decode {path.suffix} audio: {INSTALL_HINT}", path)
    try:
        return _decode_pyav(path) if which == "pyav" else _decode_ffmpeg(path)
    except PunctInputError:
        raise
    except Exception as err:  # PyAV raises its own error types for damaged files
        raise PunctInputError(f"unreadable audio ({which}): {err}", path) from err


def audio_duration(path: str | Path) -> float:
    """Duration in seconds of a compressed audio file (container header when it has one)."""
    path = Path(path)
    if not path.is_file():
        raise MissingDataError("audio file not found", path)
    if decoder_name() == "pyav":
        av = require("av", "align", "decoding m4a/mp4/aac")  # optional extra: PyAV

        try:
            with av.open(str(path)) as container:
                if container.duration is not None:
                    return float(container.duration) / 1e6  # av.time_base: microseconds
        except Exception as err:
            raise PunctInputError(f"unreadable audio (pyav): {err}", path) from err
    samples, rate = decode_audio(path)
    return len(samples) / rate
