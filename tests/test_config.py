"""The typed configuration: one pass from YAML to typed sections, errors at the key's line."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from punct.config import (
    Config,
    DecodeSection,
    OptimizerSection,
    TrainSection,
    apply_overrides,
    load_config,
    resolve_config,
    save_config,
)
from punct.errors import MissingDataError, PunctInputError
from punct.models.base import Registry

ROOT = Path(__file__).resolve().parents[1]


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def error_of(path: Path, overrides: list[str] | None = None) -> PunctInputError:
    with pytest.raises(PunctInputError) as err:
        load_config(path, overrides)
    return err.value


def test_typed_sections_with_overrides_and_defaults() -> None:
    cfg = resolve_config({"family": "brnn"}, ["train.epochs=3", "train.optimizer.lr=0.5",
                                              "decode.bf16=true"])
    assert isinstance(cfg, Config) and isinstance(cfg.train, TrainSection)
    assert isinstance(cfg.train.optimizer, OptimizerSection)
    assert cfg.train.epochs == 3 and cfg.train.optimizer.lr == 0.5
    assert cfg.train.optimizer.name == "adamw"  # default kept beside the override
    assert cfg.decode.bf16 is True and cfg.label_set == "full13" and cfg.init_from is None
    # every default lives in the section dataclasses: an empty config is all of them
    bare = resolve_config({"family": "brnn"})
    assert bare.train == TrainSection() and bare.decode == DecodeSection()
    assert bare.decode.bf16 == "auto"  # the engine's default too (no second default)
    with pytest.raises(PunctInputError, match=r"key\.path=value"):
        apply_overrides({}, ["train.epochs"])
    with pytest.raises(PunctInputError, match="not a section"):
        apply_overrides({"family": "brnn"}, ["family.x=1"])
    with pytest.raises(PunctInputError, match="family"):
        resolve_config({})


def test_ints_are_taken_as_floats_and_exponents_as_numbers(tmp_path: Path) -> None:
    path = write(tmp_path / "c.yaml", "family: brnn\ntrain:\n  optimizer: {name: adam, lr: 1e-4}\n"
                                      "  warmup_epochs: 1\n")
    cfg = load_config(path)
    assert cfg.train.optimizer.lr == pytest.approx(1e-4)
    assert isinstance(cfg.train.warmup_epochs, float) and cfg.train.warmup_epochs == 1.0
    cfg = load_config(path, ["train.optimizer.lr=2e-3"])
    assert cfg.train.optimizer.lr == pytest.approx(2e-3)


def test_unknown_key_names_file_line_key_and_the_allowed_keys(tmp_path: Path) -> None:
    path = write(tmp_path / "c.yaml", "family: brnn\ntrain:\n  epochs: 2\n  optimizer:\n"
                                      "    name: adam\n    lrate: 0.1\n")
    err = error_of(path)
    assert err.path == str(path) and err.line == 6
    assert "train.optimizer.lrate" in err.message
    assert "allowed: alpha, amsgrad, betas" in err.message and "lr," in err.message
    top = error_of(write(tmp_path / "t.yaml", "family: brnn\n\ntrian: {}\n"))
    assert top.line == 3 and "trian" in top.message and "train" in top.message


@pytest.mark.parametrize("text, line, words", [
    ("train:\n  epochs: three\n", 3, ["train.epochs", "int"]),
    ("train:\n  epochs: 0\n", 3, ["train.epochs", "outside [1"]),
    ("train:\n  precision: bf17\n", 3, ["train.precision", "auto, bf16, fp16, fp32"]),
    ("train:\n  optimizer: {name: rmsprop}\n", 3, ["train.optimizer.name", "lookahead_radam"]),
    ("train:\n  optimizer: {name: adam, momentum: 0.9}\n", 3, ["train.optimizer.momentum",
                                                               "only sgd"]),
    ("train:\n  window: 8\n  stride: 16\n", 4, ["train.stride", "exceeds"]),
    ("decode:\n  aggregate: median\n", 3, ["decode.aggregate", "mean, sum"]),
    ("decode:\n  combinations: some\n", 3, ["decode.combinations", "'seen'"]),
    ("decode:\n  thresholds: {COMMA: high}\n", 3, ["decode.thresholds", "dict[str, float]"]),
    ("decode:\n  window: 8\n  stride: 16\n", 4, ["decode.stride", "exceeds the decoding"]),
    ("train:\n  augment: {sub_rate: 0.9}\n", 3, ["train.augment.sub_rate", "outside"]),
    ("train: [1, 2]\n", 2, ["train: must be a mapping"]),
])
def test_wrong_values_are_named_at_their_line(tmp_path: Path, text: str, line: int,
                                              words: list[str]) -> None:
    err = error_of(write(tmp_path / "c.yaml", "family: brnn\n" + text))
    assert err.line == line, err
    for word in words:
        assert word in err.message, err


def test_base_chain_and_overrides_name_where_the_key_was_written(tmp_path: Path) -> None:
    base = write(tmp_path / "base.yaml", "family: brnn\ntrain:\n  epochs: 2\n  patience: -1\n")
    child = write(tmp_path / "child.yaml", "base: base.yaml\n\ndecode:\n  window: 16\n")
    err = error_of(child)
    assert err.path == str(base) and err.line == 4 and "train.patience" in err.message
    write(base, "family: brnn\ntrain:\n  epochs: 2\n")
    assert load_config(child).decode.window == 16
    err = error_of(child, ["train.batch_size=0"])
    assert err.path == "--set train.batch_size=0" and "train.batch_size" in err.message


def test_saved_config_reads_back_equal_and_older_files_take_defaults(tmp_path: Path) -> None:
    cfg = resolve_config({"family": "brnn", "label_set": "iwslt4",
                          "train": {"epochs": 2, "optimizer": {"name": "lookahead_radam",
                                                               "k": 5}},
                          "decode": {"combinations": [["COMMA"], ["PERIOD"]],
                                     "thresholds": {"COMMA": 0.4}}})
    save_config(cfg, tmp_path / "config.yaml")
    again = load_config(tmp_path / "config.yaml")
    assert again == cfg and again.to_dict() == cfg.to_dict()
    # an experiment written before a key existed still loads, the key at its default
    old = write(tmp_path / "old.yaml", "family: brnn\ntrain: {epochs: 2}\n")
    assert load_config(old).train.prefetch_batches is None
    nested = cfg.replace(init_config=resolve_config({"family": "brnn"}))
    save_config(nested, tmp_path / "nested.yaml")
    assert load_config(tmp_path / "nested.yaml").init_config == nested.init_config


def test_sections_are_values_not_shared_state() -> None:
    a, b = resolve_config({"family": "brnn"}), resolve_config({"family": "brnn"})
    assert a.train.optimizer is not b.train.optimizer
    changed = a.replace(decode=dataclasses.replace(a.decode, threshold=0.3))
    assert a.decode.threshold == 0.5 and changed.decode.threshold == 0.3


def test_missing_and_broken_files(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.yaml", "family: brnn\ntrain: [1,\n")
    err = error_of(bad)
    assert err.path == str(bad) and err.line is not None
    with pytest.raises(MissingDataError):
        load_config(tmp_path / "none.yaml")
    loop = write(tmp_path / "loop.yaml", "base: loop.yaml\nfamily: brnn\n")
    assert "circular" in error_of(loop).message
    unknown = error_of(write(tmp_path / "f.yaml", "family: brnnn\n"))
    assert unknown.line == 1 and "brnnn" in unknown.message


def test_every_family_declares_its_sections() -> None:
    for name in Registry.names():
        family = Registry.get(name)
        assert dataclasses.is_dataclass(family.options), name
        assert dataclasses.is_dataclass(family.featurizer_options) or callable(
            family.featurizer_options), name
        required = {"unipunc": {"featurizer": {"streams": ["fbank"]}}}.get(name, {})
        cfg = resolve_config({"family": name, **required})
        assert isinstance(cfg.model, family.options)
