"""One utterance's audio in a Kaldi data dir, and the data-dir reader of the audio tools.

:class:`AlignRequest` is an utterance's audio location (wav.scp value, optional segment)
with its unpunctuated words; :func:`load_requests` reads them from ``wav.scp``,
``segments``, ``utt2lang`` and ``words.tsv``. Alignment, feature extraction and the
aligner comparison all read a data dir's audio through here.
"""

from __future__ import annotations

import io
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from punct.data.audio_decode import audio_duration, decode_audio, needs_decoder
from punct.errors import MissingDataError, PunctInputError
from punct.extras import require
from punct.kaldi import c_sorted, read_segments, read_utt2lang, read_wav_scp
from punct.wordtable import read_word_table


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

    def error(self, message: str, missing: bool = False) -> PunctInputError:
        """An input error naming the utterance and its wav.scp line."""
        cls = MissingDataError if missing else PunctInputError
        return cls(f"utterance {self.utt_id}: {message}", self.wav_scp, self.wav_line)

    def load_audio(self) -> tuple[np.ndarray, int]:
        """Read the utterance's samples (mono float32, channels averaged) and rate."""
        src = self.wav.strip()
        if not src:
            raise self.error("no audio (empty wav.scp entry)", missing=True)
        soundfile = require("soundfile", "align", "reading audio")  # optional extra: audio I/O
        try:
            if src.endswith("|"):
                proc = subprocess.run(
                    src[:-1], shell=True, capture_output=True, check=False
                )
                if proc.returncode != 0:
                    raise self.error(
                        f"wav.scp command failed with exit code {proc.returncode}: "
                        + proc.stderr.decode(errors="replace").strip()[-300:]
                    )
                data, rate = soundfile.read(io.BytesIO(proc.stdout), dtype="float32",
                                            always_2d=True)
            else:
                if not Path(src).is_file():
                    raise self.error(f"audio file not found: {src}", missing=True)
                if needs_decoder(src):  # m4a/mp4/aac: PyAV or ffmpeg (audio_decode.py)
                    samples, rate = self._decode(src)
                    return self._cut(samples, rate), rate
                return self._read_segment(src)
        except PunctInputError:
            raise
        except Exception as err:  # soundfile raises several types for bad audio
            raise self.error(f"unreadable audio {src!r}: {err}") from err
        samples = data.mean(axis=1) if data.shape[1] > 1 else data[:, 0]
        return self._cut(samples, rate), rate

    def _decode(self, src: str) -> tuple[np.ndarray, int]:
        """A compressed file through the decoder, its errors naming this wav.scp line."""
        try:
            return decode_audio(src)
        except PunctInputError as err:
            raise self.error(f"{src}: {err.message}",
                             missing=isinstance(err, MissingDataError)) from err

    def _read_segment(self, src: str) -> tuple[np.ndarray, int]:
        """Read only the segment's samples of a file (talk-level recordings, e.g. mTEDx
        flac: seeking instead of decoding the whole talk for every utterance)."""
        soundfile = require("soundfile", "align", "reading audio")  # optional extra: audio I/O
        info = soundfile.info(src)
        rate = int(info.samplerate)
        start, stop = self._bounds(info.frames, rate)
        data, _ = soundfile.read(src, start=start, stop=stop, dtype="float32", always_2d=True)
        return (data.mean(axis=1) if data.shape[1] > 1 else data[:, 0]), rate

    def _bounds(self, n_samples: int, rate: int) -> tuple[int, int]:
        """The sample range of the segment in a recording of ``n_samples``."""
        if self.seg_start is None:
            return 0, n_samples
        total = n_samples / rate
        end = total if self.seg_end is None or self.seg_end < 0 else self.seg_end
        if self.seg_start < 0 or end <= self.seg_start or self.seg_start >= total + 0.01:
            raise self.error(
                f"segment {self.seg_start:.3f}-{end:.3f} s outside the recording "
                f"({total:.3f} s)"
            )
        return round(self.seg_start * rate), round(min(end, total) * rate)

    def _cut(self, samples: np.ndarray, rate: int) -> np.ndarray:
        start, stop = self._bounds(len(samples), rate)
        return samples[start:stop]

    def duration(self) -> float:
        """The utterance's duration in seconds (reads only the header when it can)."""
        if self.seg_start is not None and self.seg_end is not None and self.seg_end >= 0:
            return self.seg_end - self.seg_start
        src = self.wav.strip()
        if src and not src.endswith("|"):
            if not Path(src).is_file():
                raise self.error(f"audio file not found: {src}", missing=True)
            if needs_decoder(src):
                try:
                    return audio_duration(src) - (self.seg_start or 0.0)
                except PunctInputError as err:
                    raise self.error(f"{src}: {err.message}",
                                     missing=isinstance(err, MissingDataError)) from err
            soundfile = require("soundfile", "align", "reading audio")  # optional extra: audio I/O
            try:
                info = soundfile.info(src)
            except Exception as err:
                raise self.error(f"unreadable audio {src!r}: {err}") from err
            total = info.frames / info.samplerate
            return total - (self.seg_start or 0.0)
        samples, rate = self.load_audio()
        return len(samples) / rate


def audio_utt_ids(data_dir: str | Path) -> list[str]:
    """The utterances with audio, in the order of :func:`load_requests`: the C-sorted ids
    of ``segments``, else of ``wav.scp``."""
    data_dir = Path(data_dir)
    seg_path, wav_scp = data_dir / "segments", data_dir / "wav.scp"
    if seg_path.is_file():
        return c_sorted(read_segments(seg_path))
    if not wav_scp.is_file():
        raise MissingDataError("wav.scp not found: this data dir has no audio", wav_scp)
    return c_sorted(read_wav_scp(wav_scp))


def load_requests(data_dir: Path) -> list[AlignRequest]:
    """One request per utterance with audio, sorted (C order) by utterance id: the
    ``segments`` utterances, else the ``wav.scp`` recordings."""
    data_dir = Path(data_dir)
    wav_scp = data_dir / "wav.scp"
    if not wav_scp.is_file():
        raise MissingDataError("wav.scp not found: this data dir has no audio", wav_scp)
    wavs = read_wav_scp(wav_scp)
    table = read_word_table(data_dir / "words.tsv")
    langs = read_utt2lang(data_dir / "utt2lang", missing_ok=True)
    seg_path = data_dir / "segments"
    segs = read_segments(seg_path) if seg_path.is_file() else {}
    for reco, _start, _end, lineno in segs.values():
        if reco not in wavs:
            raise PunctInputError(f"recording {reco!r} is not in {wav_scp}", seg_path, lineno)
    requests = []
    for utt in c_sorted(segs if segs else wavs):
        reco, start, end = segs[utt][:3] if segs else (utt, None, None)
        wav, lineno = wavs[reco]
        rows = table.get(utt, [])
        requests.append(AlignRequest(
            utt, tuple(r.word for r in rows), wav, reco, start, end, str(wav_scp), lineno,
            langs.get(utt),
        ))
    return requests
