"""The decoding batch per device: ``decode.batch_size`` windows, and on CUDA at least
``decode.gpu_batch_tokens // window`` (a GPU is bound by kernel launches at 32 windows)."""

from __future__ import annotations

import pytest
from helpers.trainset import TINY

from punct.config import resolve_config
from punct.engine.decode import decode_settings, token_batch_size
from punct.models.base import Registry


def test_token_batch_size_rule() -> None:
    assert token_batch_size(32, 32768, 128) == 256
    assert token_batch_size(32, 32768, 512) == 64
    assert token_batch_size(32, None, 128) == 32
    assert token_batch_size(512, 32768, 128) == 512  # never below batch_size
    assert token_batch_size(8, 100, 128) == 8


def test_decode_settings_batch_per_device() -> None:
    config = resolve_config(TINY)  # decode window 16, batch_size 32
    assert decode_settings(config, "cpu").batch_size == 32
    assert decode_settings(config, "cuda", bf16=False).batch_size == 32768 // 16
    assert decode_settings(config, "cuda", bf16=False, batch_size=8).batch_size == 8
    assert decode_settings(config, "cuda", bf16=False, window=64).batch_size == 512
    plain = resolve_config(TINY, ["decode.gpu_batch_tokens=null"])
    assert decode_settings(plain, "cuda", bf16=False).batch_size == 32


def test_windows_with_frames_keep_their_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """A featurizer that reads acoustic streams (prosodic_pp's prosody, UniPunc's frames)
    or a family that needs them puts frames into its windows: no token rule for it."""
    config = resolve_config({"family": "prosodic_pp", "label_set": "full13"})
    assert config.streams
    assert decode_settings(config, "cuda", bf16=False).batch_size == config.decode.batch_size
    brnn = Registry.get("brnn")
    monkeypatch.setattr(brnn, "needs_streams", ("pitch",))
    assert decode_settings(resolve_config(TINY), "cuda", bf16=False).batch_size == 32
