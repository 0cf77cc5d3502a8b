"""Log-mel filterbank features (80 bands, 25 ms windows every 10 ms) computed with torch.

Framing follows :mod:`punct.features.mfcc` (and the VAD frames): frame ``t`` is centred
on ``[t * shift, (t + 1) * shift)``, so it describes the time ``t * shift`` seconds from
the start of the utterance, and there are ``ceil(duration / shift)`` frames. Unlike the
MFCC framing the hop is exact in time at any rate (frame ``t`` starts at sample
``round(t * shift * rate)``): at 22.05 kHz an integer hop of 220 samples would drift
by 9 frames over 40 s against the word times the frames are cut by. The triangular mel filters are
:func:`punct.features.mfcc.mel_filterbank` (defined in Hz, so 16 kHz and 22.05 kHz audio
give comparable features while ``high_hz`` stays below both Nyquist rates); the
power spectrum is computed with ``torch.fft.rfft`` in chunks of frames (bounded memory on
long audio). The MFCCs of the same settings are these log energies times a DCT matrix.

Features are written raw (no normalisation): the UniPunc featurizer normalises them with
mean and variance estimated on the training set only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from punct.features.mfcc import mel_filterbank


@dataclass(frozen=True)
class FbankConfig:
    """Filterbank settings (seconds, Hz)."""

    n_mels: int = 80
    frame_length: float = 0.025
    frame_shift: float = 0.01
    low_hz: float = 20.0
    high_hz: float = 7600.0
    preemphasis: float = 0.97
    floor: float = 1e-10
    chunk_frames: int = 4096


def n_frames_of(n_samples: int, rate: int, frame_shift: float = 0.01) -> int:
    """Number of frames of ``n_samples`` samples at ``rate`` Hz: ``ceil(duration / shift)``."""
    if n_samples <= 0:
        return 0
    return max(1, math.ceil(round(n_samples / (rate * frame_shift), 6)))


def log_mel_fbank(samples: np.ndarray, rate: int, config: FbankConfig = FbankConfig()
                  ) -> np.ndarray:
    """Log mel energies ``(n_frames, n_mels)`` (float32) of mono ``samples`` at ``rate`` Hz."""
    if rate <= 0:
        raise ValueError(f"bad sample rate {rate}")
    samples = np.asarray(samples)
    if samples.ndim != 1:
        raise ValueError(f"expected mono samples (1-D), got shape {samples.shape}")
    hop = rate * config.frame_shift  # samples per frame, not necessarily an integer
    n_frames = n_frames_of(len(samples), rate, config.frame_shift)
    if n_frames == 0:
        return np.zeros((0, config.n_mels), dtype=np.float32)
    win = max(round(hop), round(rate * config.frame_length))
    n_fft = 1 << int(np.ceil(np.log2(win)))
    x = torch.from_numpy(samples.astype(np.float64))
    x = x - x.mean()
    if config.preemphasis:
        x = torch.cat((x[:1], x[1:] - config.preemphasis * x[:-1]))
    pad_left = (win - round(hop)) // 2
    starts = torch.from_numpy(np.round(np.arange(n_frames) * hop).astype(np.int64))
    pad_right = max(0, int(starts[-1]) + win - len(x) - pad_left)
    padded = torch.nn.functional.pad(x, (pad_left, pad_right))
    frames = padded[starts[:, None] + torch.arange(win)[None, :]]
    window = torch.hamming_window(win, periodic=False, dtype=torch.float64)
    high = min(config.high_hz, rate / 2)
    mel = torch.from_numpy(mel_filterbank(rate, n_fft, config.n_mels, config.low_hz, high))
    out = torch.empty(n_frames, config.n_mels, dtype=torch.float64)
    step = max(1, config.chunk_frames)
    for s in range(0, n_frames, step):
        spectrum = torch.fft.rfft(frames[s: s + step] * window, n=n_fft, dim=1)
        power = spectrum.real ** 2 + spectrum.imag ** 2
        out[s: s + step] = torch.log(power @ mel.T + config.floor)
    return out.numpy().astype(np.float32)
