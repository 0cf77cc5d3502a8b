"""Prosodic feature streams (F0 and intensity) at 10 ms, for the prosodic-phrase system.

Per utterance a ``(frames, dim)`` float32 matrix on the MFCC frame grid (frame ``t`` is
centred at ``(t + 0.5) * shift``; ``ceil(duration / shift)`` frames). Columns, in order
(``feature_names``):

- ``f0``: F0 in semitones re 100 Hz (Praat's autocorrelation pitch through parselmouth),
  linearly interpolated through unvoiced frames (held flat before the first and after
  the last voiced frame); ``voiced``: 1 where Praat found a pitch, else 0;
- ``int``: intensity in dB (Praat), floored at ``intensity_floor_db``;
- ``d<k>_f0``, ``d<k>_int``: regression deltas over ``k``-frame spans (short and long
  term tendencies), for every span in ``delta_spans``.

``f0`` and ``int`` are z-normalised per utterance (mean 0, standard deviation 1; a
constant column becomes 0); the deltas are divided by their per-utterance standard
deviation but not centred, so that 0 still means flat and the sign says rising/falling.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from punct.extras import require

SEMITONE_REF_HZ = 100.0


@dataclass(frozen=True)
class ProsodyConfig:
    """Prosody extraction settings (seconds, Hz, frames)."""

    frame_shift: float = 0.01
    pitch_floor: float = 60.0
    pitch_ceiling: float = 500.0
    intensity_floor_db: float = 20.0
    delta_spans: tuple[int, ...] = (3, 9, 25)


def feature_names(config: ProsodyConfig | None = None) -> list[str]:
    """Column names of the matrices of :func:`prosody_features`."""
    config = config or ProsodyConfig()
    names = ["f0", "voiced", "int"]
    for span in config.delta_spans:
        names += [f"d{span}_f0", f"d{span}_int"]
    return names


def n_frames(n_samples: int, rate: int, shift: float) -> int:
    """Frames of the 10 ms grid: ``ceil(duration / shift)``."""
    return int(np.ceil(n_samples / (rate * shift) - 1e-9))


def interpolate_unvoiced(values: np.ndarray, voiced: np.ndarray) -> np.ndarray:
    """Linear interpolation through unvoiced frames; constant extension at the edges.

    Without any voiced frame the result is all zeros.
    """
    values = np.asarray(values, dtype=np.float64)
    idx = np.flatnonzero(voiced)
    if idx.size == 0:
        return np.zeros_like(values)
    return np.interp(np.arange(len(values)), idx, values[idx])


def delta(x: np.ndarray, span: int) -> np.ndarray:
    """Regression slope per frame over a window of ``span`` frames (odd, >= 3).

    ``d_t = sum_k k (x_{t+k} - x_{t-k}) / (2 sum_k k^2)``, ``k = 1..span // 2``, with the
    edges repeated; a linear ramp of slope ``a`` gives ``a`` everywhere inside.
    """
    if span < 3 or span % 2 == 0:
        raise ValueError(f"delta span must be odd and >= 3, got {span}")
    half = span // 2
    padded = np.pad(np.asarray(x, dtype=np.float64), (half, half), mode="edge")
    n = len(x)
    out = np.zeros(n, dtype=np.float64)
    for k in range(1, half + 1):
        out += k * (padded[half + k:half + k + n] - padded[half - k:half - k + n])
    return out / (2.0 * sum(k * k for k in range(1, half + 1)))


def znorm(x: np.ndarray) -> np.ndarray:
    """Column-wise z-normalisation (constant columns -> 0)."""
    x = np.asarray(x, dtype=np.float64)
    std = x.std(axis=0)
    return (x - x.mean(axis=0)) / np.where(std > 1e-8, std, 1.0)


def _on_grid(times: np.ndarray, values: np.ndarray, centres: np.ndarray,
             fill: float) -> np.ndarray:
    """Sample a Praat track (frame times, values) at our frame centres (nearest frame)."""
    if len(times) == 0:
        return np.full(len(centres), fill)
    step = times[1] - times[0] if len(times) > 1 else 1.0
    idx = np.rint((centres - times[0]) / step).astype(np.int64)
    inside = (idx >= 0) & (idx < len(times))
    out = np.full(len(centres), fill)
    out[inside] = values[idx[inside]]
    return out


def f0_intensity(samples: np.ndarray, rate: int, config: ProsodyConfig | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Raw tracks on the frame grid: F0 in Hz (0 unvoiced), voicing flag, intensity dB."""
    parselmouth = require("parselmouth", "speech", "prosodic features")  # optional extra

    config = config or ProsodyConfig()
    samples = np.asarray(samples, dtype=np.float64)
    if samples.ndim != 1:
        raise ValueError(f"expected mono samples, got shape {samples.shape}")
    frames = n_frames(len(samples), rate, config.frame_shift)
    centres = (np.arange(frames) + 0.5) * config.frame_shift
    if frames == 0:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    sound = parselmouth.Sound(samples, sampling_frequency=rate)
    # Praat needs a few pitch periods of signal; shorter sounds are all unvoiced, silent.
    min_len = 3.0 / config.pitch_floor
    if len(samples) / rate < min_len + 0.01:
        floor = np.full(frames, config.intensity_floor_db)
        return np.zeros(frames), np.zeros(frames), floor
    pitch = sound.to_pitch(time_step=config.frame_shift, pitch_floor=config.pitch_floor,
                           pitch_ceiling=config.pitch_ceiling)
    hz = _on_grid(np.asarray(pitch.xs()), pitch.selected_array["frequency"], centres, 0.0)
    intensity = sound.to_intensity(minimum_pitch=config.pitch_floor,
                                   time_step=config.frame_shift)
    db = _on_grid(np.asarray(intensity.xs()), intensity.values[0], centres,
                  config.intensity_floor_db)
    db = np.maximum(np.nan_to_num(db, nan=config.intensity_floor_db), config.intensity_floor_db)
    return hz, (hz > 0).astype(np.float64), db


def prosody_features(samples: np.ndarray, rate: int, config: ProsodyConfig | None = None
                     ) -> np.ndarray:
    """The (frames, dim) prosody matrix of one utterance (see the module docstring)."""
    config = config or ProsodyConfig()
    hz, voiced, db = f0_intensity(samples, rate, config)
    semitones = np.zeros_like(hz)
    semitones[voiced > 0] = 12.0 * np.log2(hz[voiced > 0] / SEMITONE_REF_HZ)
    f0 = interpolate_unvoiced(semitones, voiced > 0)
    cols = [f0, voiced, db]
    for span in config.delta_spans:
        cols += [delta(f0, span), delta(db, span)]
    feats = np.stack(cols, axis=1) if len(hz) else np.zeros((0, len(cols)))
    if len(feats):
        feats[:, [0, 2]] = znorm(feats[:, [0, 2]])
        deltas = feats[:, 3:]
        std = deltas.std(axis=0)
        feats[:, 3:] = deltas / np.where(std > 1e-8, std, 1.0)
    return feats.astype(np.float32)
