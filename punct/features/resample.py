"""Resampling of 16-bit PCM between integer sample rates (polyphase, deterministic)."""

from __future__ import annotations

from math import gcd

import numpy as np

from punct.extras import require


def resample_int16(samples: np.ndarray, rate_in: int, rate_out: int) -> np.ndarray:
    """``samples`` (int16, mono) at ``rate_in`` Hz resampled to ``rate_out`` Hz, as int16.

    22,050 -> 16,000 Hz uses up/down factors 320/441. The output has
    ``ceil(len * rate_out / rate_in)`` samples; values are rounded and clipped.
    """
    if samples.ndim != 1:
        raise ValueError("expected mono samples")
    if rate_in == rate_out:
        return samples.astype(np.int16, copy=True)
    g = gcd(rate_in, rate_out)
    up, down = rate_out // g, rate_in // g
    x = samples.astype(np.float64)
    signal = require("scipy.signal", "align", "resampling audio")  # optional extra: scipy
    y = signal.resample_poly(x, up, down)
    return np.clip(np.rint(y), -32768, 32767).astype(np.int16)
