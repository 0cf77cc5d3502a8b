"""Resampling of mono audio between integer sample rates (polyphase, deterministic): float32
samples for the recognisers and aligners, 16-bit PCM for synthesis."""

from __future__ import annotations

from math import gcd

import numpy as np

from punct.extras import require


def polyphase(samples: np.ndarray, rate_in: int, rate_out: int, extra: str = "align"
              ) -> np.ndarray:
    """``samples`` (mono) at ``rate_in`` Hz resampled to ``rate_out`` Hz, in float64;
    ``extra``: the optional extra named when scipy is missing."""
    if samples.ndim != 1:
        raise ValueError("expected mono samples")
    signal = require("scipy.signal", extra, "resampling audio")  # optional extra: scipy
    g = gcd(rate_in, rate_out)
    return signal.resample_poly(samples.astype(np.float64), rate_out // g, rate_in // g)


def resample(samples: np.ndarray, rate: int, target: int, extra: str = "align") -> np.ndarray:
    """Float32 ``samples`` at ``rate`` Hz resampled to ``target`` Hz."""
    if rate == target:
        return samples.astype(np.float32, copy=False)
    return polyphase(samples, rate, target, extra).astype(np.float32)


def resample_int16(samples: np.ndarray, rate_in: int, rate_out: int) -> np.ndarray:
    """``samples`` (int16, mono) at ``rate_in`` Hz resampled to ``rate_out`` Hz, as int16.

    22,050 -> 16,000 Hz uses up/down factors 320/441. The output has
    ``ceil(len * rate_out / rate_in)`` samples; values are rounded and clipped.
    """
    if samples.ndim != 1:
        raise ValueError("expected mono samples")
    if rate_in == rate_out:
        return samples.astype(np.int16, copy=True)
    y = polyphase(samples, rate_in, rate_out)
    return np.clip(np.rint(y), -32768, 32767).astype(np.int16)
