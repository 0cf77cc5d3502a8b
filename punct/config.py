"""Experiment configuration: one YAML file per system variant, typed sections, one
validation pass, ``--set`` overrides.

A config has the top-level keys ``family``, ``label_set``, ``featurizer``, ``model``,
``train``, ``decode`` and ``init_from``. ``train`` and ``decode`` are typed sections
(:class:`TrainSection`, :class:`DecodeSection`): their dataclass defaults are the only
place defaults live, every key is checked for its name and type, and an unknown key or
a wrong value is a :class:`PunctInputError` naming the file and the key. ``model`` keys
are declared by each family (``Family.model_keys``) and checked by the same pass;
nested option mappings (``model.head``, ``model.loss``) are checked by the families;
``train.augment`` is typed by :class:`AugmentSection` and checked here.

A resolved configuration is a plain nested dict (defaults merged with the file and the
overrides); it is written as ``config.yaml`` into the experiment directory, so that
decoding rebuilds exactly the trained system. ``train_section(config)`` and
``decode_section(config)`` give the typed views.

This module sits in the data layer: it imports nothing of the package but the errors
and, for a family's declared keys, the registry (families are imported on lookup).
"""

from __future__ import annotations

import copy
import dataclasses
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from punct.errors import MissingDataError, PunctInputError
from punct.registry import UnknownNameError, lookup

PRECISIONS = ("auto", "bf16", "fp16", "fp32")
LR_DECAYS = ("none", "linear", "cosine")
EARLY_STOPPING = ("micro_f1", "loss")
AGGREGATES = ("mean", "sum")
DROPOUT_MASKS = ("auto", "bytes", "torch")
BF16_SETTINGS = (True, False, "auto", "on", "off")
COMBINATION_RULES = ("all", "seen")
OPTIMIZER_BASES = ("adamw", "adam", "adagrad", "sgd", "radam")
LOOKAHEAD_PREFIX = "lookahead_"
OPTIMIZER_NAMES = (*OPTIMIZER_BASES, *(LOOKAHEAD_PREFIX + name for name in OPTIMIZER_BASES))
"""Every accepted ``train.optimizer.name`` (``punct.train.optim`` builds them)."""
AUGMENT_SOURCES = ("frequent", "confusable")
AUGMENT_MAX_RATE = 0.5
AUGMENT_MAX_PHONE_DISTANCE = 2


@dataclass
class AugmentSection:
    """``train.augment``: ASR-like word errors in the training words, drawn afresh each
    epoch (``punct.data.augment``; docs/TRAINING.md, "ASR-robust training"). Off while
    every rate is 0."""

    sub_rate: float = 0.0  # share of words replaced by another word
    del_rate: float = 0.0  # share of words deleted
    ins_rate: float = 0.0  # words inserted, per word of the utterance
    sub_source: str = "frequent"  # frequent (unigram) | confusable (CMU phones)
    max_phone_distance: int = 1  # confusable: phone edit distance of a neighbour
    seed_offset: int = 0  # added to train.seed for the augmentation draws

    @property
    def active(self) -> bool:
        """Whether any word is changed."""
        return max(self.sub_rate, self.del_rate, self.ins_rate) > 0


@dataclass
class TrainSection:
    """``train:``: the optimisation of one system (see docs/TRAINING.md)."""

    epochs: int = 10
    batch_size: int = 32
    optimizer: dict[str, Any] = field(
        default_factory=lambda: {"name": "adamw", "lr": 1e-3, "weight_decay": 0.0})
    warmup_epochs: float = 0
    warmup_steps: int | None = None  # when set, overrides warmup_epochs
    lr_decay: str = "none"  # none | linear | cosine, to 0 at the end of the run
    precision: str = "fp32"  # auto | bf16 | fp16 | fp32
    # dropout masks: bytes (8 per random draw, punct.train.byte_dropout) | torch | auto
    # (bytes on the CPU, where torch's per-element draws cost a third of a bf16 step)
    dropout_masks: str = "auto"
    grad_clip: float = 0.0
    patience: int = 3
    min_epochs: int = 0
    seed: int = 1234
    window: int = 64
    stride: int = 64
    early_stopping: str = "micro_f1"  # micro_f1 | loss
    max_steps_per_epoch: int | None = None
    # on CUDA: this batch size, every learning rate scaled by gpu_batch_size / batch_size
    # (the linear scaling rule; punct.train.batching.device_batch); None: batch_size
    gpu_batch_size: int | None = None
    # batches collated ahead in a background thread (0: in the training loop; None: 2 on
    # CUDA, where the device would wait for Python, 0 on the CPU, where the thread would
    # compete with the model for the same cores)
    prefetch_batches: int | None = None
    tune_thresholds: bool = True  # per-mark thresholds on dev (multi-label sets)
    # each epoch after the first cuts every training utterance at a random word below
    # train.stride, so windows start elsewhere and words get new contexts (text only)
    shift_windows: bool = False
    # ASR-like substitutions, deletions and insertions of training words (AugmentSection)
    augment: dict[str, Any] = field(
        default_factory=lambda: dataclasses.asdict(AugmentSection()))


@dataclass
class DecodeSection:
    """``decode:``: how a trained system is run (stage 6, restore, the sweep)."""

    window: int | None = None  # None: train.window
    stride: int | None = None  # None: train.stride (at most the window)
    batch_size: int = 32
    bf16: bool | str = "auto"  # true/false/on/off/auto (auto: where the hardware has it)
    aggregate: str = "mean"  # mean of probabilities | sum of activations
    threshold: float = 0.5  # multi-label sets: one threshold for every mark
    thresholds: dict[str, float] | None = None  # per mark, replaces threshold
    # multi-label sets: which sets of marks one word may get. "all": every mark at or
    # above its threshold; "seen": only the sets seen on a training word (the trainer
    # writes them into the experiment's config.yaml as a list of lists of marks)
    combinations: str | list | None = "all"
    # each document decoded as a whole under the document rules (paired quotes and ¿/¡,
    # capitals after sentence ends, a final mark at its end): punct.infer.constraints
    constraints: bool = True


SECTIONS: dict[str, type] = {"train": TrainSection, "decode": DecodeSection}

DEFAULTS: dict[str, Any] = {
    "family": None,
    "label_set": "full13",
    "featurizer": {},
    "model": {},
    "train": dataclasses.asdict(TrainSection()),
    "decode": dataclasses.asdict(DecodeSection()),
    "init_from": None,
}
"""Defaults of every configuration key (from the section dataclasses)."""


def deep_merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """Return ``base`` updated recursively by ``update`` (dicts merge, other values replace)."""
    out = copy.deepcopy(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


class ConfigLoader(yaml.SafeLoader):
    """YAML 1.1 safe loading, with YAML 1.2 floats: ``1e-4`` and ``3E+2`` are numbers (in
    YAML 1.1 a float needs a dot, so PyYAML reads ``lr: 1e-4`` as the string '1e-4')."""


ConfigLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"))


def load_yaml(text: str) -> Any:
    """Parse config YAML text (``ConfigLoader``)."""
    return yaml.load(text, Loader=ConfigLoader)


def parse_override(text: str) -> tuple[list[str], Any]:
    """Parse ``a.b.c=value`` into (["a", "b", "c"], value); the value is read as YAML."""
    if "=" not in text:
        raise PunctInputError(f"override {text!r} is not of the form key.path=value")
    key, raw = text.split("=", 1)
    parts = [p for p in key.strip().split(".")]
    if not key.strip() or any(not p for p in parts):
        raise PunctInputError(f"override {text!r} has an empty key")
    try:
        value = load_yaml(raw) if raw.strip() else None
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


def _accepts(hint: Any, value: Any) -> bool:
    """Whether ``value`` fits the type hint of a section field (ints count as floats)."""
    if hint is Any:
        return True
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_accepts(arg, value) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if origin is not None:
        return isinstance(value, origin)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _check_section(name: str, values: Any, path: str | Path | None,
                   cls: type | None = None) -> None:
    """Names and types of one typed section (``cls``: its dataclass, default
    ``SECTIONS[name]``)."""
    if not isinstance(values, dict):
        raise PunctInputError(f"{name}: must be a mapping, got {values!r}", path)
    cls = cls or SECTIONS[name]
    hints = typing.get_type_hints(cls)
    unknown = sorted(set(values) - set(hints))
    if unknown:
        raise PunctInputError(f"unknown key(s) {', '.join(f'{name}.{k}' for k in unknown)}; "
                              f"known: {', '.join(sorted(hints))}", path)
    for key, value in values.items():
        if not _accepts(hints[key], value):
            raise PunctInputError(f"{name}.{key} = {value!r} is not of type "
                                  f"{_hint_name(hints[key])}", path)


def _hint_name(hint: Any) -> str:
    return str(hint).replace("typing.", "").replace("<class '", "").replace("'>", "")


def _choice(name: str, value: Any, choices: tuple[Any, ...], path: str | Path | None) -> None:
    if value not in choices:
        raise PunctInputError(f"{name} {value!r} not in {choices}", path)


def _check_model_keys(config: dict[str, Any], path: str | Path | None) -> None:
    """``model:`` keys against those the family declares (when it declares them)."""
    try:
        family = lookup("family", str(config["family"]))
    except UnknownNameError as err:
        raise PunctInputError(str(err), path) from None
    declared = getattr(family, "model_keys", None)
    model = config.get("model") or {}
    if not isinstance(model, dict):
        raise PunctInputError(f"model: must be a mapping, got {model!r}", path)
    if declared is None:
        return
    unknown = sorted(set(model) - set(declared))
    if unknown:
        raise PunctInputError(f"unknown key(s) {', '.join(f'model.{k}' for k in unknown)} for "
                              f"family {config['family']}; known: {', '.join(sorted(declared))}",
                              path)


def _check_augment(config: dict[str, Any], path: str | Path | None) -> None:
    """``train.augment``: names, types, rates in [0, 0.5], the source, and a family that
    reads the words only (per-word audio features cannot follow an edited word stream)."""
    _check_section("train.augment", config["train"]["augment"], path, AugmentSection)
    aug = augment_section(config)
    for key in ("sub_rate", "del_rate", "ins_rate"):
        rate = getattr(aug, key)
        if not 0.0 <= rate <= AUGMENT_MAX_RATE:
            raise PunctInputError(f"train.augment.{key} = {rate!r} is outside "
                                  f"[0, {AUGMENT_MAX_RATE}]", path)
    _choice("train.augment.sub_source", aug.sub_source, AUGMENT_SOURCES, path)
    if not 0 <= aug.max_phone_distance <= AUGMENT_MAX_PHONE_DISTANCE:
        raise PunctInputError(f"train.augment.max_phone_distance = {aug.max_phone_distance!r}"
                              f" is outside [0, {AUGMENT_MAX_PHONE_DISTANCE}]", path)
    if aug.seed_offset < 0:
        raise PunctInputError(f"train.augment.seed_offset must be >= 0, got "
                              f"{aug.seed_offset}", path)
    if not aug.active:
        return
    family = lookup("family", str(config["family"]))
    streams = (*getattr(family, "needs_streams", ()),
               *((config.get("featurizer") or {}).get("streams") or ()))
    if streams:
        raise PunctInputError(f"train.augment edits the training words, but family "
                              f"{config['family']} reads per-word acoustic streams "
                              f"({', '.join(streams)}) that would no longer match them; "
                              "set the rates to 0 or train a text family", path)


def validate_config(config: dict[str, Any], path: str | Path | None = None) -> None:
    """One pass over the whole config; a PunctInputError names the file and the key."""
    unknown = sorted(set(config) - set(DEFAULTS) - {"init_config"})
    if unknown:
        raise PunctInputError(
            f"unknown top-level config keys {unknown}; expected {sorted(DEFAULTS)}", path
        )
    if not config.get("family"):
        raise PunctInputError("config has no 'family' (e.g. family: brnn)", path)
    for name in SECTIONS:
        _check_section(name, config.get(name), path)
    _check_model_keys(config, path)
    _check_augment(config, path)
    train = train_section(config)
    for key in ("epochs", "batch_size", "window", "stride"):
        if getattr(train, key) < 1:
            raise PunctInputError(f"train.{key} must be a positive integer, "
                                  f"got {getattr(train, key)!r}", path)
    if train.stride > train.window:
        raise PunctInputError("train.stride must not exceed train.window", path)
    _choice("train.optimizer.name", str(train.optimizer.get("name", "")).lower(),
            OPTIMIZER_NAMES, path)
    _choice("train.precision", str(train.precision).lower(), PRECISIONS, path)
    _choice("train.lr_decay", train.lr_decay, LR_DECAYS, path)
    _choice("train.dropout_masks", train.dropout_masks, DROPOUT_MASKS, path)
    _choice("train.early_stopping", train.early_stopping, EARLY_STOPPING, path)
    if train.warmup_steps is not None and train.warmup_steps < 0:
        raise PunctInputError(f"train.warmup_steps must be >= 0, got {train.warmup_steps}", path)
    dec = decode_section(config)
    _choice("decode.aggregate", dec.aggregate, AGGREGATES, path)
    _choice("decode.bf16", dec.bf16, BF16_SETTINGS, path)
    if isinstance(dec.combinations, str):
        _choice("decode.combinations", dec.combinations, COMBINATION_RULES, path)
    elif isinstance(dec.combinations, list) and not all(
            isinstance(c, list) and all(isinstance(m, str) for m in c) for c in dec.combinations):
        raise PunctInputError("decode.combinations: expected 'all', 'seen' or a list of lists "
                              "of marks", path)
    if not isinstance(dec.constraints, bool):
        raise PunctInputError(f"decode.constraints must be true or false, got "
                              f"{dec.constraints!r}", path)
    if dec.batch_size < 1:
        raise PunctInputError(f"decode.batch_size must be >= 1, got {dec.batch_size}", path)
    window, stride = decode_window(config)
    if stride > window:
        raise PunctInputError("decode.stride must not exceed decode.window", path)


def train_section(config: dict[str, Any]) -> TrainSection:
    """The typed ``train:`` section of a resolved config."""
    return TrainSection(**config["train"])


def augment_section(config: dict[str, Any]) -> AugmentSection:
    """The typed ``train.augment`` section of a resolved config."""
    return AugmentSection(**config["train"]["augment"])


def decode_section(config: dict[str, Any]) -> DecodeSection:
    """The typed ``decode:`` section of a resolved config."""
    return DecodeSection(**config["decode"])


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
        raw = load_yaml(path.read_text(encoding="utf-8")) or {}
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
