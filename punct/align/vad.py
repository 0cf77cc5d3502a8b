"""Energy-based speech/silence detection on 10 ms frames.

The detector works on band-limited log energy (default 150-5000 Hz, which removes
rumble and hum below the voice and most hiss above it), sets its threshold relative to
the recording's peak and its noise floor, applies hysteresis, drops clicks and fills
short gaps, so what remains as silence are pauses of at least ``min_pause`` seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FRAME_SHIFT = 0.01


@dataclass(frozen=True)
class VadConfig:
    """Detector settings (dB are relative to the peak / noise-floor percentiles)."""

    low_hz: float = 150.0
    high_hz: float = 5000.0
    window: float = 0.025
    peak_percentile: float = 99.0
    floor_percentile: float = 10.0
    max_range_db: float = 40.0      # speech threshold at least peak - max_range_db
    floor_margin_db: float = 6.0    # ... and at least noise floor + floor_margin_db
    floor_share: float = 0.3        # ... or floor + share * (peak - floor), if lower
    hysteresis_db: float = 3.0
    min_pause: float = 0.12
    min_speech: float = 0.05


def frame_log_energy(
    samples: np.ndarray, rate: int, config: VadConfig = VadConfig()
) -> np.ndarray:
    """Band-limited log energy (dB) per 10 ms frame; frame t covers [t*10ms, (t+1)*10ms)."""
    hop = max(1, round(rate * FRAME_SHIFT))
    n_frames = int(np.ceil(len(samples) / hop)) if len(samples) else 0
    if n_frames == 0:
        return np.zeros(0)
    win = max(hop, round(rate * config.window))
    n_fft = 1 << int(np.ceil(np.log2(win)))
    x = np.asarray(samples, dtype=np.float64)
    x = x - x.mean()
    pad_left = (win - hop) // 2
    padded = np.pad(x, (pad_left, n_frames * hop + win - len(x) - pad_left))
    frames = np.lib.stride_tricks.sliding_window_view(padded, win)[::hop][:n_frames]
    window = np.hanning(win + 2)[1:-1]
    energy = np.empty(n_frames)
    freqs = np.fft.rfftfreq(n_fft, 1.0 / rate)
    band = (freqs >= config.low_hz) & (freqs <= min(config.high_hz, rate / 2))
    if not band.any():
        band[:] = True
    for s in range(0, n_frames, 4096):  # bounded memory on long recordings
        spec = np.abs(np.fft.rfft(frames[s: s + 4096] * window, n_fft, axis=1)) ** 2
        energy[s: s + 4096] = spec[:, band].sum(axis=1) / win
    return 10.0 * np.log10(energy + 1e-12)


def thresholds(energy: np.ndarray, config: VadConfig = VadConfig()) -> tuple[float, float]:
    """(enter, leave) speech thresholds in dB for an energy contour."""
    peak = float(np.percentile(energy, config.peak_percentile))
    floor = float(np.percentile(energy, config.floor_percentile))
    span = max(peak - floor, 0.0)
    margin = min(config.floor_margin_db, config.floor_share * span)
    enter = max(peak - config.max_range_db, floor + margin)
    leave = max(enter - config.hysteresis_db, floor + 0.5 * margin)
    return enter, min(leave, enter)


def runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) frame runs where ``mask`` is True."""
    if mask.size == 0:
        return []
    d = np.diff(np.concatenate(([0], mask.astype(np.int8), [0])))
    return list(zip(np.flatnonzero(d == 1).tolist(), np.flatnonzero(d == -1).tolist(), strict=True))


def speech_mask(energy: np.ndarray, config: VadConfig = VadConfig()) -> np.ndarray:
    """Frame-level speech decision with hysteresis, click removal and gap filling."""
    n = energy.size
    mask = np.zeros(n, dtype=bool)
    if n == 0:
        return mask
    enter, leave = thresholds(energy, config)
    speaking = False
    for t in range(n):
        e = energy[t]
        speaking = e > leave if speaking else e > enter
        mask[t] = speaking
    # hysteresis backwards too, so a region's onset is found as early as its offset
    for t in range(n - 2, -1, -1):
        if not mask[t] and mask[t + 1] and energy[t] > leave:
            mask[t] = True
    min_pause = round(config.min_pause / FRAME_SHIFT)
    min_speech = round(config.min_speech / FRAME_SHIFT)
    for s, e in runs(mask):  # clicks
        if e - s < min(min_speech, 3):
            mask[s:e] = False
    for s, e in runs(~mask):  # short gaps inside speech
        if 0 < s and e < n and e - s < min_pause:
            mask[s:e] = True
    for s, e in runs(mask):  # short isolated bursts
        if e - s < min_speech:
            mask[s:e] = False
    return mask


@dataclass(frozen=True)
class NucleiConfig:
    """Syllable-nucleus detection: peaks of the smoothed 300-2500 Hz energy."""

    low_hz: float = 300.0
    high_hz: float = 2500.0
    smooth_frames: int = 5
    prominence_db: float = 2.0
    min_distance: float = 0.08


def syllable_nuclei(
    samples: np.ndarray,
    rate: int,
    speech: np.ndarray,
    config: NucleiConfig = NucleiConfig(),
) -> np.ndarray:
    """Frame indices of likely syllable nuclei inside ``speech`` (a frame mask)."""
    from scipy.signal import find_peaks  # optional extra: scipy (align)

    band = frame_log_energy(samples, rate, VadConfig(low_hz=config.low_hz,
                                                     high_hz=config.high_hz))
    if band.size == 0:
        return np.zeros(0, dtype=np.int64)
    k = max(1, config.smooth_frames)
    smooth = np.convolve(band, np.ones(k) / k, mode="same")
    peaks, _ = find_peaks(
        smooth,
        prominence=config.prominence_db,
        distance=max(1, round(config.min_distance / FRAME_SHIFT)),
    )
    n = min(len(speech), len(smooth))
    peaks = peaks[peaks < n]
    return peaks[speech[peaks]]
