"""punct.bin.pack_encoder (float16 copies of an encoder for a size-limited transfer) and
$PUNCT_ENCODER_DIR (the default encoder from another directory)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from helpers.tinybert import build_tiny_bert
from safetensors.torch import load_file

from punct.bin import pack_encoder
from punct.errors import MissingDataError
from punct.models.encoders import default_encoder_path, load_encoder


def test_pack_then_unpack_keeps_the_weights_up_to_fp16_rounding(tmp_path: Path) -> None:
    src = build_tiny_bert(tmp_path / "enc")
    assert pack_encoder.main(["--src", str(src), "--out", str(tmp_path / "packed")]) == 0
    assert pack_encoder.main(["--src", str(tmp_path / "packed"), "--out",
                              str(tmp_path / "back"), "--unpack"]) == 0
    original = load_file(str(Path(src) / "model.safetensors"))
    packed = load_file(str(tmp_path / "packed" / "model.safetensors"))
    back = load_file(str(tmp_path / "back" / "model.safetensors"))
    assert set(original) == set(packed) == set(back)
    for key, value in original.items():
        if value.is_floating_point():
            assert packed[key].dtype == torch.float16, key
            assert back[key].dtype == torch.float32, key
            assert torch.equal(back[key], value.to(torch.float16).float()), key
        else:  # integer buffers travel unchanged
            assert torch.equal(packed[key], value) and torch.equal(back[key], value), key
    names = {p.name for p in Path(src).iterdir()}
    assert names == {p.name for p in (tmp_path / "back").iterdir()}
    packed_size = (tmp_path / "packed" / "model.safetensors").stat().st_size
    assert packed_size < 0.6 * (Path(src) / "model.safetensors").stat().st_size


def test_encoder_dir_variable_names_the_default_encoder(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    src = build_tiny_bert(tmp_path / "enc")
    monkeypatch.setenv("PUNCT_ENCODER_DIR", str(src))
    assert default_encoder_path() == Path(src)
    assert load_encoder("default").config.hidden_size == 32
    monkeypatch.setenv("PUNCT_ENCODER_DIR", str(tmp_path))
    with pytest.raises(MissingDataError, match="PUNCT_ENCODER_DIR"):
        default_encoder_path()


def test_pack_refuses_a_directory_without_weights(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert pack_encoder.main(["--src", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "no model.safetensors in" in capsys.readouterr().err
