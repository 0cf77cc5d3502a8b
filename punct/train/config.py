"""Experiment configuration: one YAML file per system variant, defaults, ``--set`` overrides.

A resolved configuration is a plain nested dict (defaults merged with the file and the
overrides) and is written as ``config.yaml`` into the experiment directory, so that
decoding rebuilds exactly the trained system.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from punct.errors import MissingDataError, PunctInputError
from punct.train.optim import OPTIMIZER_NAMES

DEFAULTS: dict[str, Any] = {
    "family": None,
    "label_set": "full13",
    "featurizer": {},
    "model": {},
    "train": {
        "epochs": 10,
        "batch_size": 32,
        "optimizer": {"name": "adamw", "lr": 1e-3, "weight_decay": 0.0},
        "warmup_epochs": 0,
        "grad_clip": 0.0,
        "patience": 3,
        "min_epochs": 0,
        "seed": 1234,
        "window": 64,
        "stride": 64,
        "early_stopping": "micro_f1",
        "max_steps_per_epoch": None,
    },
    "decode": {
        "window": None,
        "stride": None,
        "batch_size": 32,
        "bf16": "auto",
        "aggregate": "mean",
        "threshold": 0.5,
    },
    "init_from": None,
}
"""Defaults of every configuration key; ``decode.window``/``stride`` None = train's."""

BF16_SETTINGS = (True, False, "auto", "on", "off")
EARLY_STOPPING = ("micro_f1", "loss")
AGGREGATES = ("mean", "sum")


def deep_merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """Return ``base`` updated recursively by ``update`` (dicts merge, other values replace)."""
    out = copy.deepcopy(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def parse_override(text: str) -> tuple[list[str], Any]:
    """Parse ``a.b.c=value`` into (["a", "b", "c"], value); the value is read as YAML."""
    if "=" not in text:
        raise PunctInputError(f"override {text!r} is not of the form key.path=value")
    key, raw = text.split("=", 1)
    parts = [p for p in key.strip().split(".")]
    if not key.strip() or any(not p for p in parts):
        raise PunctInputError(f"override {text!r} has an empty key")
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as err:
        raise PunctInputError(f"override {text!r}: value is not valid YAML ({err})") from err
    return parts, value


def apply_overrides(config: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``key.path=value`` overrides; intermediate dicts are created as needed."""
    out = copy.deepcopy(config)
    for text in overrides:
        parts, value = parse_override(text)
        node = out
        for part in parts[:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            elif not isinstance(child, dict):
                raise PunctInputError(f"override {text!r}: {part!r} is not a section")
            node = child
        node[parts[-1]] = value
    return out


def validate_config(config: dict[str, Any], path: str | Path | None = None) -> None:
    """Check the keys every family relies on; raise PunctInputError naming the file."""
    unknown = sorted(set(config) - set(DEFAULTS) - {"init_config"})
    if unknown:
        raise PunctInputError(
            f"unknown top-level config keys {unknown}; expected {sorted(DEFAULTS)}", path
        )
    if not config.get("family"):
        raise PunctInputError("config has no 'family' (e.g. family: brnn)", path)
    train = config["train"]
    for key in ("epochs", "batch_size", "window", "stride"):
        if not isinstance(train.get(key), int) or train[key] < 1:
            raise PunctInputError(f"train.{key} must be a positive integer, got {train.get(key)!r}",
                                  path)
    if train["stride"] > train["window"]:
        raise PunctInputError("train.stride must not exceed train.window", path)
    name = str(train["optimizer"].get("name", "")).lower()
    if name not in OPTIMIZER_NAMES:
        raise PunctInputError(f"train.optimizer.name {name!r} not in {OPTIMIZER_NAMES}", path)
    if train["early_stopping"] not in EARLY_STOPPING:
        raise PunctInputError(
            f"train.early_stopping {train['early_stopping']!r} not in {EARLY_STOPPING}", path
        )
    dec = config["decode"]
    if dec.get("aggregate", "mean") not in AGGREGATES:
        raise PunctInputError(f"decode.aggregate {dec.get('aggregate')!r} not in {AGGREGATES}",
                              path)
    if dec.get("bf16", "auto") not in BF16_SETTINGS:
        raise PunctInputError(f"decode.bf16 {dec.get('bf16')!r} must be one of "
                              "true, false, auto, on, off", path)
    window, stride = decode_window(config)
    if stride > window:
        raise PunctInputError("decode.stride must not exceed decode.window", path)


def decode_window(config: dict[str, Any]) -> tuple[int, int]:
    """The (window, stride) used for decoding (falls back to the training values)."""
    dec = config.get("decode") or {}
    window = dec.get("window") or config["train"]["window"]
    stride = dec.get("stride") or min(config["train"]["stride"], window)
    return int(window), int(stride)


def resolve_config(raw: dict[str, Any], overrides: list[str] | None = None,
                   path: str | Path | None = None) -> dict[str, Any]:
    """Merge ``raw`` over DEFAULTS, apply overrides, validate."""
    if not isinstance(raw, dict):
        raise PunctInputError("config must be a YAML mapping", path)
    config = deep_merge(DEFAULTS, raw)
    config = apply_overrides(config, overrides or [])
    validate_config(config, path)
    return config


def read_raw_config(path: str | Path, _seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """Read a YAML config; ``base: other.yaml`` (relative to this file) is read first and
    this file's keys are merged over it, so recipe configs only state what differs."""
    path = Path(path)
    if not path.is_file():
        raise MissingDataError(f"config file not found: {path}", path)
    if path.resolve() in _seen:
        raise PunctInputError("circular 'base:' chain", path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        line = None
        mark = getattr(err, "problem_mark", None)
        if mark is not None:
            line = mark.line + 1
        raise PunctInputError(f"invalid YAML: {err}", path, line) from err
    if not isinstance(raw, dict):
        raise PunctInputError("config must be a YAML mapping", path)
    base = raw.pop("base", None)
    if base is None:
        return raw
    parent = read_raw_config(path.parent / str(base), (*_seen, path.resolve()))
    return deep_merge(parent, raw)


def load_config(path: str | Path, overrides: list[str] | None = None) -> dict[str, Any]:
    """Read a YAML config file (following ``base:``) and resolve it."""
    return resolve_config(read_raw_config(path), overrides, path)


def save_config(config: dict[str, Any], path: str | Path) -> None:
    """Write a resolved config as YAML (keys in insertion order)."""
    Path(path).write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
