"""The acoustic side of UniPunc's windows: which frames a window carries, or none.

``AudioSpans`` is shared by both lexical front ends (sub-word and BRNN). For a window over
words ``a..b`` of an utterance with the stream (``WordSeq.feats[stream]``, frames every
``frame_shift`` seconds) and word times (``WordSeq.times``), it cuts the frames from
``start(a) - context_s`` to ``end(b) + context_s`` and normalises them with the mean and
standard deviation of the training frames. A window has no audio (the model then uses
its virtual embedding) when the utterance lacks the stream, when it is withheld, or when
none of its words has a time. Longer spans than ``max_frames`` are subsampled evenly.

Every window also gets ``token_times`` (T,): for each position the end time of its word,
in seconds from the first frame of the window's audio (positions that predict nothing
take the time of the closest word position before them, the leading ones 0), and
``audio_times`` (F,): the time of each frame from the same origin. The bootstrapper's
optional time encoding uses them to align words with frames.

Withholding: ``withhold_audio`` (a share) of the utterances passed to ``fit`` (the
training set), chosen by a seeded hash of the utterance id
(:mod:`punct.data.withhold`), never get audio, so the virtual embedding is
trained on real text while the same sentences' neighbours keep theirs.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from punct.config import Config, OptionError, option
from punct.data.withhold import select_withheld
from punct.errors import PunctInputError
from punct.models.base import ListPlan, Window, WindowPlan, WordSeq

STATE_FILE = "unipunc_audio.json"


@dataclass
class AudioOptions:
    """The audio options of a unipunc ``featurizer:`` section (besides its lexical
    featurizer's): the one acoustic stream and how windows take its frames."""

    streams: list[str] | None = None  # exactly one stream: [fbank] or [w2v]
    frame_shift: float = 0.01  # seconds between frames
    withhold_audio: float = option(0.0, low=0.0, high=1.0)  # share of training utterances
    withhold_seed: int = 1
    audio_context_s: float = option(0.2, low=0.0)  # frames before and after the words
    max_audio_frames: int = option(4000, low=1)  # longer spans are subsampled

    def check(self) -> None:
        if self.streams is not None and len(self.streams) != 1:
            raise OptionError("streams", "unipunc needs exactly one acoustic stream (e.g. "
                                         f"[fbank] or [w2v]), got {self.streams!r}")
        if self.frame_shift <= 0:
            raise OptionError("frame_shift", f"must be positive, got {self.frame_shift}")


@dataclass
class AudioSpans:
    """Frames per window of one acoustic stream, normalised with training statistics."""

    stream: str
    frame_shift: float = 0.01
    withhold: float = 0.0
    seed: int = 1
    context_s: float = 0.2
    max_frames: int = 4000
    dim: int = 0
    mean: np.ndarray | None = None
    std: np.ndarray | None = None
    withheld: set[str] = field(default_factory=set)

    @classmethod
    def from_config(cls, opts: AudioOptions) -> AudioSpans:
        """From the featurizer's audio options (``streams`` names exactly one stream)."""
        streams = opts.streams
        if streams is None or len(streams) != 1:
            raise PunctInputError("unipunc needs featurizer.streams with exactly one acoustic "
                                  f"stream (e.g. [fbank] or [w2v]), got {streams!r}")
        return cls(streams[0], opts.frame_shift, opts.withhold_audio, opts.withhold_seed,
                   opts.audio_context_s, opts.max_audio_frames)

    # -- fitting
    def fit(self, train: list[WordSeq]) -> None:
        """Choose the withheld training utterances; frame statistics over the others."""
        self.withheld = select_withheld([s.utt_id for s in train], self.withhold, self.seed)
        total = sq = None
        count = 0
        for seq in train:
            feats = seq.feats.get(self.stream)
            if feats is None or seq.utt_id in self.withheld or len(feats) == 0:
                continue
            x = np.asarray(feats, dtype=np.float64)
            total = x.sum(axis=0) if total is None else total + x.sum(axis=0)
            sq = (x ** 2).sum(axis=0) if sq is None else sq + (x ** 2).sum(axis=0)
            count += len(x)
        if total is None or sq is None:
            raise PunctInputError(f"no training utterance has audio in the {self.stream!r} "
                                  "stream (compute it first, or lower withhold_audio)")
        mean = total / count
        self.dim = int(mean.shape[0])
        self.mean = mean.astype(np.float32)
        self.std = np.sqrt(np.maximum(sq / count - mean ** 2, 1e-8)).astype(np.float32)

    # -- windows
    def frames_of(self, seq: WordSeq, first: int, last: int) -> tuple[np.ndarray, float] | None:
        """Normalised frames for words ``first..last`` (inclusive) and the time of the
        first frame (seconds from the utterance start), or None without audio."""
        feats = seq.feats.get(self.stream)
        if feats is None or seq.utt_id in self.withheld or seq.times is None or not len(feats):
            return None
        if self.mean is None or self.std is None:
            raise RuntimeError("AudioSpans.fit must run before windows are made")
        if feats.shape[1] != self.dim:
            raise PunctInputError(f"utterance {seq.utt_id!r}: {self.stream} frames have "
                                  f"{feats.shape[1]} dims, the training set {self.dim}")
        times = np.asarray(seq.times[first:last + 1], dtype=np.float64)
        if not np.isfinite(times).any():
            return None
        t0 = float(np.nanmin(times)) - self.context_s
        t1 = float(np.nanmax(times)) + self.context_s
        f0 = max(0, math.floor(t0 / self.frame_shift))
        f1 = min(len(feats), math.ceil(t1 / self.frame_shift))
        if f1 <= f0:
            return None
        frames = (np.asarray(feats[f0:f1], dtype=np.float32) - self.mean) / self.std
        return frames, f0 * self.frame_shift

    def attach(self, window: Window, seq: WordSeq) -> Window:
        """Add ``audio``/``audio_times`` (when the window has audio) and ``token_times``."""
        word_ids = window["word_ids"]
        local = word_ids[word_ids >= 0] - seq.offset
        token_times = np.zeros(len(word_ids), dtype=np.float32)
        span = self.frames_of(seq, int(local.min()), int(local.max())) if len(local) else None
        if span is not None:
            frames, origin = span
            ends = np.full(len(word_ids), np.nan)
            pos = np.flatnonzero(word_ids >= 0)
            ends[pos] = seq.times[word_ids[pos] - seq.offset, 1] - origin
            token_times = _forward_fill(ends).astype(np.float32)
            frame_times = np.arange(len(frames), dtype=np.float64) * self.frame_shift
            if len(frames) > self.max_frames:
                keep = np.linspace(0, len(frames) - 1, self.max_frames).round().astype(int)
                frames, frame_times = frames[keep], frame_times[keep]
            window["audio"] = frames
            window["audio_times"] = frame_times.astype(np.float32)
        window["token_times"] = token_times
        return window

    def collate(self, windows: list[Window], length: int) -> dict[str, torch.Tensor]:
        """``audio`` (B, F, D), ``audio_mask`` (B, F) true on frames, ``has_audio`` (B,),
        ``audio_times`` (B, F) and ``token_times`` (B, length)."""
        size = len(windows)
        n_frames = max([len(w["audio"]) for w in windows if "audio" in w] or [1])
        audio = np.zeros((size, n_frames, self.dim), dtype=np.float32)
        mask = np.zeros((size, n_frames), dtype=bool)
        audio_times = np.zeros((size, n_frames), dtype=np.float32)
        token_times = np.zeros((size, length), dtype=np.float32)
        for i, win in enumerate(windows):
            token_times[i, : len(win["token_times"])] = win["token_times"]
            if "audio" in win:
                n = len(win["audio"])
                audio[i, :n] = win["audio"]
                mask[i, :n] = True
                audio_times[i, :n] = win["audio_times"]
        return {"audio": torch.from_numpy(audio), "audio_mask": torch.from_numpy(mask),
                "has_audio": torch.from_numpy(mask.any(axis=1)),
                "audio_times": torch.from_numpy(audio_times),
                "token_times": torch.from_numpy(token_times)}

    # -- persistence
    def save(self, directory: Path) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        state = {"stream": self.stream, "frame_shift": self.frame_shift,
                 "withhold": self.withhold, "seed": self.seed, "context_s": self.context_s,
                 "max_frames": self.max_frames, "dim": self.dim,
                 "mean": None if self.mean is None else self.mean.tolist(),
                 "std": None if self.std is None else self.std.tolist(),
                 "withheld": sorted(self.withheld)}
        (directory / STATE_FILE).write_text(json.dumps(state) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, directory: Path) -> AudioSpans:
        path = Path(directory) / STATE_FILE
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as err:
            raise PunctInputError("no saved unipunc audio state", path) from err
        except json.JSONDecodeError as err:
            raise PunctInputError(f"bad JSON: {err.msg}", path, err.lineno) from err
        spans = cls(state["stream"], state["frame_shift"], state["withhold"], state["seed"],
                    state["context_s"], state["max_frames"], state["dim"])
        if state["mean"] is not None:
            spans.mean = np.asarray(state["mean"], dtype=np.float32)
            spans.std = np.asarray(state["std"], dtype=np.float32)
        spans.withheld = set(state["withheld"])
        return spans


class AudioFeaturizerMixin:
    """The audio side of a unipunc featurizer, mixed in before its lexical featurizer
    (AutoPunct's or the BRNN's): every window carries the frames of its span (or none)."""

    audio: AudioSpans | None = None
    #: the batch tensor whose second dimension is the padded window length
    TOKENS_KEY = "input_ids"

    def _spans(self) -> AudioSpans:
        if self.audio is None:
            raise PunctInputError("unipunc featurizer without featurizer.streams")
        return self.audio

    def fit(self, train: list[WordSeq]) -> None:
        super().fit(train)  # type: ignore[misc]
        self._spans().fit(train)

    def windows(self, seqs: list[WordSeq], window: int, stride: int) -> list[Window]:
        spans = self._spans()
        out: list[Window] = []
        for seq in seqs:  # one sequence at a time: each window needs its utterance
            lexical = super().windows([seq], window, stride)  # type: ignore[misc]
            out.extend(spans.attach(w, seq) for w in lexical)
        return out

    def plan(self, seqs: list[WordSeq], window: int, stride: int) -> WindowPlan:
        """Windows with their frames, made one by one (``windows`` + ``collate``)."""
        return ListPlan(self.windows(seqs, window, stride), self.collate)

    def collate(self, windows: list[Window]) -> dict[str, torch.Tensor]:
        batch = super().collate(windows)  # type: ignore[misc]
        batch.update(self._spans().collate(windows, batch[self.TOKENS_KEY].shape[1]))
        return batch

    def save(self, directory: Path) -> None:
        super().save(directory)  # type: ignore[misc]
        self._spans().save(directory)

    @classmethod
    def load(cls, directory: Path, config: Config) -> Any:
        feat = super().load(directory, config)  # type: ignore[misc]
        assert isinstance(feat, cls)
        feat.audio = AudioSpans.load(directory)
        return feat


def _forward_fill(values: np.ndarray) -> np.ndarray:
    """NaNs take the last finite value before them (0 before the first one)."""
    out = np.asarray(values, dtype=np.float64).copy()
    last = 0.0
    for i, v in enumerate(out):
        if np.isfinite(v):
            last = v
        else:
            out[i] = last
    return out
