"""Acoustic features computed in numpy (no torchaudio): MFCCs, deltas, per-utterance CMVN.

- :mod:`punct.features.mfcc`: ``MfccConfig``, ``mel_filterbank``, ``mfcc``, ``add_deltas``,
  ``cmvn``.
- :mod:`punct.features.resample`: ``resample_int16`` (16-bit PCM between sample rates).
"""

from __future__ import annotations

from punct.features.mfcc import MfccConfig, add_deltas, cmvn, mel_filterbank, mfcc

__all__ = ["MfccConfig", "add_deltas", "cmvn", "mel_filterbank", "mfcc"]
