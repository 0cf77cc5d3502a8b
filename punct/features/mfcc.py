"""Mel-frequency cepstral coefficients on 25 ms windows every 10 ms, in numpy.

Framing matches :func:`punct.align.vad.frame_log_energy`: frame ``t`` is centred on
``[t * shift, (t + 1) * shift)`` and there are ``ceil(len(samples) / hop)`` frames, so
feature frames and VAD frames share indices. The filterbank is defined in Hz (not in
FFT bins), so signals at different sample rates (e.g. 16 kHz speech and 22.05 kHz
eSpeak output) give comparable features when ``high_hz`` is below both Nyquist rates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MfccConfig:
    """MFCC settings (seconds, Hz)."""

    frame_length: float = 0.025
    frame_shift: float = 0.01
    n_mels: int = 40
    n_ceps: int = 13
    low_hz: float = 60.0
    high_hz: float = 7600.0
    preemphasis: float = 0.97
    lifter: float = 22.0
    floor: float = 1e-10
    chunk_frames: int = 4096  # frames per FFT batch (bounded memory on long audio)


def _hz_to_mel(hz: np.ndarray | float) -> np.ndarray:
    return 1127.0 * np.log1p(np.asarray(hz, dtype=np.float64) / 700.0)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    return 700.0 * np.expm1(mel / 1127.0)


def mel_filterbank(
    rate: int, n_fft: int, n_mels: int, low_hz: float, high_hz: float
) -> np.ndarray:
    """Triangular mel filters, shape ``(n_mels, n_fft // 2 + 1)``, peak 1 each."""
    if not 0 <= low_hz < high_hz <= rate / 2 + 1e-6:
        raise ValueError(f"bad band {low_hz}-{high_hz} Hz for rate {rate}")
    freqs = np.fft.rfftfreq(n_fft, 1.0 / rate)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(low_hz), _hz_to_mel(high_hz), n_mels + 2))
    lo, mid, hi = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    up = (freqs[None, :] - lo) / (mid - lo)
    down = (hi - freqs[None, :]) / (hi - mid)
    return np.clip(np.minimum(up, down), 0.0, None)


def _dct_matrix(n_in: int, n_out: int) -> np.ndarray:
    """Orthonormal DCT-II basis, shape ``(n_in, n_out)``."""
    k = np.arange(n_out)[None, :]
    n = np.arange(n_in)[:, None]
    basis = np.cos(np.pi / n_in * (n + 0.5) * k) * np.sqrt(2.0 / n_in)
    basis[:, 0] /= np.sqrt(2.0)
    return basis


def mfcc(samples: np.ndarray, rate: int, config: MfccConfig = MfccConfig()) -> np.ndarray:
    """MFCCs ``(n_frames, n_ceps)`` (c0 first) of mono ``samples`` at ``rate`` Hz."""
    if rate <= 0:
        raise ValueError(f"bad sample rate {rate}")
    hop = max(1, round(rate * config.frame_shift))
    n_frames = int(np.ceil(len(samples) / hop)) if len(samples) else 0
    if n_frames == 0:
        return np.zeros((0, config.n_ceps))
    win = max(hop, round(rate * config.frame_length))
    n_fft = 1 << int(np.ceil(np.log2(win)))
    x = np.asarray(samples, dtype=np.float64)
    x = x - x.mean()
    if config.preemphasis:
        x = np.concatenate((x[:1], x[1:] - config.preemphasis * x[:-1]))
    pad_left = (win - hop) // 2
    padded = np.pad(x, (pad_left, n_frames * hop + win - len(x) - pad_left))
    frames = np.lib.stride_tricks.sliding_window_view(padded, win)[::hop][:n_frames]
    window = np.hamming(win)
    high = min(config.high_hz, rate / 2)
    fbank = mel_filterbank(rate, n_fft, config.n_mels, config.low_hz, high)
    dct = _dct_matrix(config.n_mels, config.n_ceps)
    if config.lifter:
        dct = dct * (1.0 + config.lifter / 2.0
                     * np.sin(np.pi * np.arange(config.n_ceps) / config.lifter))[None, :]
    out = np.empty((n_frames, config.n_ceps))
    step = max(1, config.chunk_frames)
    for s in range(0, n_frames, step):
        chunk = frames[s: s + step] * window
        power = np.abs(np.fft.rfft(chunk, n_fft, axis=1)) ** 2
        out[s: s + step] = np.log(power @ fbank.T + config.floor) @ dct
    return out


def add_deltas(feats: np.ndarray, width: int = 2, order: int = 1) -> np.ndarray:
    """``feats`` with ``order`` regression-delta blocks appended (window ``±width``)."""
    blocks = [np.asarray(feats, dtype=np.float64)]
    ks = np.arange(1, width + 1)
    denom = 2.0 * float((ks ** 2).sum())
    for _ in range(order):
        cur = blocks[-1]
        if len(cur) == 0:
            blocks.append(cur.copy())
            continue
        padded = np.pad(cur, ((width, width), (0, 0)), mode="edge")
        n = len(cur)
        delta = sum(k * (padded[width + k: width + k + n] - padded[width - k: width - k + n])
                    for k in ks)
        blocks.append(delta / denom)
    return np.concatenate(blocks, axis=1)


def cmvn(feats: np.ndarray, mask: np.ndarray | None = None, eps: float = 1e-8) -> np.ndarray:
    """Per-utterance mean/variance normalisation; statistics over ``mask`` frames if given
    (all frames when the mask selects fewer than two)."""
    feats = np.asarray(feats, dtype=np.float64)
    if len(feats) == 0:
        return feats.copy()
    ref = feats
    if mask is not None and int(np.count_nonzero(mask)) >= 2:
        ref = feats[np.asarray(mask, dtype=bool)]
    mean = ref.mean(axis=0)
    std = ref.std(axis=0)
    return (feats - mean) / np.maximum(std, eps)
