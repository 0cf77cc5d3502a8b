"""``train.compile``: the training loss through torch.compile (punct.train.compiled).

The trainings use torch's ``aot_eager`` backend: the same graph capture as the default
backend (Dynamo, and AOTAutograd for the backward), without its code generation, which
takes minutes on two cores. With torch's dropout it draws the same masks as eager mode,
so a compiled run must reproduce an eager one exactly.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from helpers.tiny import VOCAB  # noqa: F401  (the tiny_dir fixture reads the module's VOCAB)
from helpers.tiny import nagy_raw as raw
from helpers.tiny import write_marked_set as write_set

import punct.train.compiled as compiled
from punct.config import Config, resolve_config
from punct.engine.decode import load_experiment
from punct.errors import PunctInputError
from punct.models.nagy import NagyModel, make_featurizer, make_model
from punct.train.trainer import train_experiment


def nagy_config(encoder: Path, mode: str | bool) -> Config:
    return resolve_config({
        **raw(encoder, hidden=32, dropout=0.1, encoder_lr=1e-3),
        "train": {"epochs": 2, "batch_size": 16, "window": 24, "stride": 12,
                  "optimizer": {"name": "adamw", "lr": 3e-3}, "seed": 3, "grad_clip": 1.5,
                  "dropout_masks": "torch", "compile": mode},
    })


def test_off_is_the_models_own_loss(tiny_dir: Path) -> None:
    cfg = nagy_config(tiny_dir, "off")
    model = make_model(cfg, make_featurizer(cfg))
    assert compiled.loss_function(model, "off") == model.loss


def test_modes_off_and_on_as_yaml_reads_them_and_unknown_ones(tiny_dir: Path) -> None:
    assert nagy_config(tiny_dir, False).train.compile == "off"  # YAML's off
    assert nagy_config(tiny_dir, True).train.compile == "default"  # YAML's on
    assert nagy_config(tiny_dir, "reduce-overhead").train.compile == "reduce-overhead"
    with pytest.raises(PunctInputError, match=r"reduce-overhead"):
        nagy_config(tiny_dir, "fast")


def test_compiled_training_equals_eager_and_keeps_the_checkpoint_format(
        tiny_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiled, "BACKEND", "aot_eager")
    calls: list[str] = []
    real_compile = torch.compile

    def spy_compile(fn, **kwargs):
        calls.append(kwargs.get("backend", "inductor"))
        return real_compile(fn, **kwargs)

    monkeypatch.setattr(compiled.torch, "compile", spy_compile)
    write_set(tmp_path / "train", 160, 1)
    write_set(tmp_path / "dev", 30, 2)
    summaries, states = {}, {}
    for mode in ("off", "default"):
        exp = tmp_path / f"exp_{mode}"
        summaries[mode] = train_experiment(nagy_config(tiny_dir, mode), tmp_path / "train",
                                           tmp_path / "dev", exp, threads=1, quiet=True)
        states[mode] = torch.load(exp / "last.pt", weights_only=False)["model"]
    assert calls == ["aot_eager"]  # the eager run compiled nothing
    assert "train.compile: default" in (tmp_path / "exp_default" / "train.log").read_text()
    # the same state dict (keys and values): nothing of torch.compile in the checkpoint
    assert list(states["off"]) == list(states["default"])
    for key, value in states["off"].items():
        torch.testing.assert_close(states["default"][key], value, rtol=1e-5, atol=1e-6)
    assert summaries["default"]["dev_micro_f1"] == pytest.approx(
        summaries["off"]["dev_micro_f1"])
    assert summaries["off"]["dev_micro_f1"] > 0.5  # it learned (all-O gives 0)
    exp = load_experiment(tmp_path / "exp_default")  # decodes as any experiment
    assert isinstance(exp.model, NagyModel)
