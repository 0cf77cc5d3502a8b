"""Experiment configuration: one YAML file per system variant, read into one typed
:class:`Config` in one validation pass, with ``--set`` overrides.

A config has the top-level keys ``family``, ``label_set``, ``featurizer``, ``model``,
``train``, ``decode``, ``init_from`` and ``soup``. Every section is a dataclass whose
defaults are the only place defaults live: ``train`` (:class:`TrainSection`, with ``optimizer`` and
``augment``), ``decode`` (:class:`DecodeSection`), and, declared by each family next to its
model, ``model`` (``Family.options``) and ``featurizer`` (``Family.featurizer_options``).
:func:`load_config` checks every key's name, type and value, nested sections included;
an unknown key or a wrong value is a :class:`PunctInputError` naming the file, the line
and the key, with the allowed keys listed.

The trainer, the decoding engine, export and the benchmarks take :class:`Config`. It is
written as ``config.yaml`` into the experiment directory (:func:`save_config`, every
default spelled out), so that decoding rebuilds exactly the trained system.

This module sits in the data layer: it imports nothing of the package but the errors, the
atomic writer, the label set names and, for a family's option types, the registry
(families load on lookup).
"""

from __future__ import annotations

import copy
import dataclasses
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from punct.atomic import atomic_write_text
from punct.errors import MissingDataError, PunctInputError
from punct.labels import LABEL_SETS
from punct.registry import UnknownNameError, lookup

PRECISIONS = ("auto", "bf16", "fp16", "fp32")
LR_DECAYS = ("none", "linear", "cosine")
EARLY_STOPPING = ("micro_f1", "loss")
AGGREGATES = ("mean", "sum")
DROPOUT_MASKS = ("auto", "bytes", "torch")
COMPILE_MODES = ("off", "default", "reduce-overhead", "max-autotune")
BF16_SETTINGS = (True, False, "auto", "on", "off")
COMBINATION_RULES = ("all", "seen")
OPTIMIZER_BASES = ("adamw", "adam", "adagrad", "sgd", "radam")
LOOKAHEAD_PREFIX = "lookahead_"
OPTIMIZER_NAMES = (*OPTIMIZER_BASES, *(LOOKAHEAD_PREFIX + name for name in OPTIMIZER_BASES))
"""Every accepted ``train.optimizer.name`` (``punct.train.optim`` builds them)."""
AUGMENT_SOURCES = ("frequent", "confusable")
AUGMENT_MAX_RATE = 0.5
AUGMENT_MAX_PHONE_DISTANCE = 2
TOP_LEVEL = ("family", "label_set", "featurizer", "model", "train", "decode", "init_from",
             "soup", "init_config")
SOUP_MIN_SYSTEMS = 2


class OptionError(Exception):
    """A section's own check found a bad value: ``key`` (relative to the section) and why.
    :func:`build_section` turns it into a :class:`PunctInputError` at the key's line."""

    def __init__(self, key: str, message: str):
        super().__init__(f"{key}: {message}")
        self.key, self.message = key, message


def option(default: Any = dataclasses.MISSING, *, factory: Callable[[], Any] | None = None,
           choices: tuple[Any, ...] | None = None, low: float | None = None,
           high: float | None = None) -> Any:
    """A section field with its default (or ``factory``) and the values it accepts:
    one of ``choices``, or a number in [``low``, ``high``] (None: unbounded; a None value
    always passes where the type allows it)."""
    metadata = {"choices": choices, "low": low, "high": high}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass
class NoOptions:
    """A section without options (``model: {}`` of a family that has none)."""


@dataclass
class AugmentSection:
    """``train.augment``: ASR-like word errors in the training words, drawn afresh each
    epoch (``punct.data.augment``; docs/TRAINING.md, "ASR-robust training"). Off while
    every rate is 0."""

    sub_rate: float = option(0.0, low=0.0, high=AUGMENT_MAX_RATE)  # words replaced
    del_rate: float = option(0.0, low=0.0, high=AUGMENT_MAX_RATE)  # words deleted
    ins_rate: float = option(0.0, low=0.0, high=AUGMENT_MAX_RATE)  # inserted, per word
    sub_source: str = option("frequent", choices=AUGMENT_SOURCES)  # unigram | CMU phones
    # confusable: phone edit distance of a neighbour
    max_phone_distance: int = option(1, low=0, high=AUGMENT_MAX_PHONE_DISTANCE)
    seed_offset: int = option(0, low=0)  # added to train.seed for the augmentation draws
    utt_rate: float = option(1.0, low=0.0, high=1.0)  # utterances edited; the rest stay clean

    @property
    def active(self) -> bool:
        """Whether any word is changed."""
        return max(self.sub_rate, self.del_rate, self.ins_rate) > 0 and self.utt_rate > 0


@dataclass
class OptimizerSection:
    """``train.optimizer``: the optimizer by name (``punct.train.optim``); a None option
    keeps torch's default."""

    name: str = option("adamw", choices=OPTIMIZER_NAMES)
    lr: float = option(1e-3, low=0.0)
    weight_decay: float = option(0.0, low=0.0)
    betas: list[float] | None = None  # adam, adamw, radam
    eps: float | None = None
    momentum: float | None = None  # sgd
    nesterov: bool | None = None  # sgd
    amsgrad: bool | None = None  # adam, adamw
    fused: bool | None = None  # adam, adamw: None = torch's fused kernel where it applies
    k: int | None = option(None, low=1)  # lookahead_*: inner steps between syncs
    alpha: float | None = None  # lookahead_*: share of the step to the fast weights, (0, 1]

    def check(self) -> None:
        lookahead = self.name.startswith(LOOKAHEAD_PREFIX)
        for key in ("k", "alpha"):
            if getattr(self, key) is not None and not lookahead:
                raise OptionError(key, f"only a lookahead_* optimizer takes {key}, "
                                       f"not {self.name}")
        if self.alpha is not None and not 0.0 < self.alpha <= 1.0:
            raise OptionError("alpha", f"{self.alpha} is outside (0, 1]")
        base = self.name.removeprefix(LOOKAHEAD_PREFIX)
        for key in ("momentum", "nesterov"):
            if getattr(self, key) is not None and base != "sgd":
                raise OptionError(key, f"only sgd takes {key}, not {self.name}")
        for key in ("amsgrad", "fused"):
            if getattr(self, key) is not None and base not in ("adam", "adamw"):
                raise OptionError(key, f"only adam and adamw take {key}, not {self.name}")
        if self.betas is not None and (base not in ("adam", "adamw", "radam")
                                       or len(self.betas) != 2):
            raise OptionError("betas", "two betas, for adam, adamw or radam only")

    def kwargs(self) -> dict[str, Any]:
        """The optimizer's keyword arguments (options left at None are torch's)."""
        out = {key: value for key, value in dataclasses.asdict(self).items()
               if value is not None and key != "name"}
        if "betas" in out:
            out["betas"] = tuple(out["betas"])
        return out


@dataclass
class TrainSection:
    """``train:``: the optimisation of one system (see docs/TRAINING.md)."""

    epochs: int = option(10, low=1)
    batch_size: int = option(32, low=1)
    optimizer: OptimizerSection = field(default_factory=OptimizerSection)
    warmup_epochs: float = option(0.0, low=0.0)
    warmup_steps: int | None = option(None, low=0)  # when set, overrides warmup_epochs
    lr_decay: str = option("none", choices=LR_DECAYS)  # to 0 at the end of the run
    precision: str = option("fp32", choices=PRECISIONS)
    # dropout masks: bytes (8 per random draw, punct.train.byte_dropout) | torch | auto
    # (bytes on the CPU, where torch's per-element draws cost a third of a bf16 step)
    dropout_masks: str = option("auto", choices=DROPOUT_MASKS)
    # torch.compile of the training loss (punct.train.compiled): off | default |
    # reduce-overhead | max-autotune (torch's modes; false/true: off/default); for GPUs,
    # whose small-model steps wait on Python's kernel launches
    compile: bool | str = option("off", choices=(False, True, *COMPILE_MODES))
    grad_clip: float = option(0.0, low=0.0)
    patience: int = option(3, low=0)
    min_epochs: int = option(0, low=0)
    seed: int = 1234
    window: int = option(64, low=1)
    stride: int = option(64, low=1)
    early_stopping: str = option("micro_f1", choices=EARLY_STOPPING)
    max_steps_per_epoch: int | None = option(None, low=1)
    # on CUDA: this batch size, every learning rate scaled by gpu_batch_size / batch_size
    # (the linear scaling rule; punct.train.batching.device_batch); None: batch_size
    gpu_batch_size: int | None = option(None, low=1)
    # batches collated ahead in a background thread (0: in the training loop; None: 2 on
    # CUDA, where the device would wait for Python, 0 on the CPU, where the thread would
    # compete with the model for the same cores)
    prefetch_batches: int | None = option(None, low=0)
    tune_thresholds: bool = True  # per-mark thresholds on dev (multi-label sets)
    # each epoch after the first cuts every training utterance at a random word below
    # train.stride, so windows start elsewhere and words get new contexts (text only)
    shift_windows: bool = False
    # ASR-like substitutions, deletions and insertions of training words
    augment: AugmentSection = field(default_factory=AugmentSection)

    def check(self) -> None:
        if self.stride > self.window:
            raise OptionError("stride", f"{self.stride} exceeds train.window {self.window}")
        if isinstance(self.compile, bool):  # YAML reads off and on as booleans
            self.compile = "default" if self.compile else "off"


@dataclass
class DecodeSection:
    """``decode:``: how a trained system is run (stage 6, restore, the sweep)."""

    window: int | None = option(None, low=1)  # None: train.window
    stride: int | None = option(None, low=1)  # None: train.stride (at most the window)
    batch_size: int = option(32, low=1)
    # on CUDA: batches of at least gpu_batch_tokens // window windows (a GPU runs 32 short
    # windows hardly faster than 256: its kernels wait on their launches); None: batch_size.
    # Not for a featurizer that reads acoustic streams (its windows carry frames)
    gpu_batch_tokens: int | None = option(32768, low=1)
    # true/false/on/off/auto (auto: where the hardware has it)
    bf16: bool | str = option("auto", choices=BF16_SETTINGS)
    aggregate: str = option("mean", choices=AGGREGATES)  # mean of probs | sum of activations
    threshold: float = option(0.5, low=0.0, high=1.0)  # multi-label sets: every mark
    thresholds: dict[str, float] | None = None  # per mark, replaces threshold
    # multi-label sets: which sets of marks one word may get. "all": every mark at or
    # above its threshold; "seen": only the sets seen on a training word (the trainer
    # writes them into the experiment's config.yaml as a list of lists of marks)
    combinations: str | list[list[str]] = "all"
    # each document decoded as a whole under the document rules (paired quotes and ¿/¡,
    # capitals after sentence ends, a final mark at its end): decoding's constraints
    constraints: bool = True

    def check(self) -> None:
        if isinstance(self.combinations, str) and self.combinations not in COMBINATION_RULES:
            raise OptionError("combinations", f"{self.combinations!r}: expected 'all', 'seen' "
                                              "or a list of lists of marks")


@dataclass
class Config:
    """One resolved experiment configuration (see the module docstring).

    ``featurizer`` and ``model`` are instances of the family's ``featurizer_options`` and
    ``options`` types. ``init_config`` is the resolved config of the ``init_from``
    experiment, added by the trainer. ``soup`` lists the experiment directories whose
    weights a soup system averages instead of training (``punct.train.soup``).
    ``source`` names the file it was read from."""

    family: str
    label_set: str = "full13"
    featurizer: Any = field(default_factory=NoOptions)
    model: Any = field(default_factory=NoOptions)
    train: TrainSection = field(default_factory=TrainSection)
    decode: DecodeSection = field(default_factory=DecodeSection)
    init_from: str | None = None
    soup: tuple[str, ...] = ()
    init_config: Config | None = None
    source: str | None = field(default=None, compare=False, repr=False)

    def decode_window(self) -> tuple[int, int]:
        """The (window, stride) used for decoding (falls back to the training values)."""
        window = self.decode.window or self.train.window
        stride = self.decode.stride or min(self.train.stride, window)
        return int(window), int(stride)

    @property
    def streams(self) -> tuple[str, ...]:
        """The acoustic streams the ``featurizer`` section lists (loaded with the data)."""
        return tuple(getattr(self.featurizer, "streams", None) or ())

    def replace(self, **changes: Any) -> Config:
        """A copy with ``changes`` (sections replaced whole)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The config as plain data, in the key order of ``config.yaml``."""
        out: dict[str, Any] = {
            "family": self.family, "label_set": self.label_set,
            "featurizer": dataclasses.asdict(self.featurizer),
            "model": dataclasses.asdict(self.model),
            "train": dataclasses.asdict(self.train),
            "decode": dataclasses.asdict(self.decode),
            "init_from": self.init_from,
            "soup": list(self.soup),
        }
        if self.init_config is not None:
            out["init_config"] = self.init_config.to_dict()
        return out


# ---------------------------------------------------------------------------------------
# Where each key was written: (file, line), for error messages


Origins = dict[tuple[str, ...], tuple[str | None, int | None]]


def key_lines(node: yaml.Node, path: str, prefix: tuple[str, ...] = ()) -> Origins:
    """The (file, line) of every mapping key under a composed YAML ``node``."""
    out: Origins = {}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            name = (*prefix, str(key.value))
            out[name] = (path, key.start_mark.line + 1)
            out.update(key_lines(value, path, name))
    return out


def origin_of(origins: Origins, key: tuple[str, ...]) -> tuple[str | None, int | None]:
    """Where ``key`` (or the nearest section above it) was written."""
    for cut in range(len(key), 0, -1):
        if key[:cut] in origins:
            return origins[key[:cut]]
    return origins.get((), (None, None))


def input_error(message: str, key: tuple[str, ...], origins: Origins) -> PunctInputError:
    """A PunctInputError at ``key``'s file and line."""
    path, line = origin_of(origins, key)
    return PunctInputError(message, path, line)


# ---------------------------------------------------------------------------------------
# Typed sections from plain data


def _accepts(hint: Any, value: Any) -> bool:
    """Whether ``value`` fits the type hint (ints count as floats; element types of lists
    and dicts are checked)."""
    if hint is Any:
        return True
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_accepts(arg, value) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if origin is list:
        (item,) = typing.get_args(hint) or (Any,)
        return isinstance(value, list) and all(_accepts(item, v) for v in value)
    if origin is dict:
        key_hint, item = typing.get_args(hint) or (Any, Any)
        return isinstance(value, dict) and all(
            _accepts(key_hint, k) and _accepts(item, v) for k, v in value.items())
    if origin is not None:
        return isinstance(value, origin)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if dataclasses.is_dataclass(hint):
        return isinstance(value, hint)
    return isinstance(value, hint)


def _coerce(hint: Any, value: Any) -> Any:
    """Ints where only floats are accepted become floats (``lr: 1`` -> 1.0)."""
    if isinstance(value, int) and not isinstance(value, bool) and not _accepts_int(hint):
        if _accepts(hint, float(value)):
            return float(value)
    return value


def _accepts_int(hint: Any) -> bool:
    if hint is int or hint is Any:
        return True
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return any(_accepts_int(arg) for arg in typing.get_args(hint))
    return False


def _section_types(hint: Any) -> list[type]:
    """The dataclass types a field's hint names (a nested section, maybe optional)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return [t for arg in typing.get_args(hint) for t in _section_types(arg)]
    return [hint] if isinstance(hint, type) and dataclasses.is_dataclass(hint) else []


def _hint_name(hint: Any) -> str:
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return "mapping"
    return (str(hint).replace("typing.", "").replace("<class '", "").replace("'>", "")
            .replace("punct.config.", ""))


def _dotted(key: tuple[str, ...]) -> str:
    return ".".join(key)


def build_section(cls: type, values: Any, key: tuple[str, ...], origins: Origins) -> Any:
    """An instance of the section dataclass ``cls`` from plain ``values`` (None: all
    defaults), every key checked: its name, its type, its ``option`` limits, nested
    sections, and the section's own ``check()``."""
    name = _dotted(key)
    if values is None:
        values = {}
    if not isinstance(values, dict):
        raise input_error(f"{name}: must be a mapping, got {values!r}", key, origins)
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise input_error(
            f"unknown key {name}.{unknown[0]}" + (f" (and {', '.join(unknown[1:])})"
                                                 if unknown[1:] else "")
            + f"; allowed: {', '.join(sorted(fields)) or 'none'}", (*key, unknown[0]), origins)
    kwargs = {}
    for field_name, value in values.items():
        hint, where = hints[field_name], (*key, field_name)
        sections = _section_types(hint)
        if sections and isinstance(value, dict):
            kwargs[field_name] = build_section(sections[0], value, where, origins)
            continue
        value = _coerce(hint, value)
        if not _accepts(hint, value):
            raise input_error(f"{_dotted(where)} = {value!r} is not of type {_hint_name(hint)}",
                              where, origins)
        _check_limits(fields[field_name], value, where, origins)
        kwargs[field_name] = copy.deepcopy(value)
    section = cls(**kwargs)
    check = getattr(section, "check", None)
    if check is not None:
        try:
            check()
        except OptionError as err:
            sub = (*key, *err.key.split("."))
            raise input_error(f"{_dotted(sub)}: {err.message}", sub, origins) from None
    return section


def _check_limits(spec: dataclasses.Field, value: Any, key: tuple[str, ...],
                  origins: Origins) -> None:
    meta = spec.metadata
    if value is None or not meta:
        return
    choices = meta.get("choices")
    if choices is not None and not any(value == c and type(value) is type(c) for c in choices):
        shown = ", ".join(str(c).lower() if isinstance(c, bool) else str(c) for c in choices)
        raise input_error(f"{_dotted(key)} = {value!r} is not one of: {shown}", key, origins)
    low, high = meta.get("low"), meta.get("high")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if (low is not None and value < low) or (high is not None and value > high):
            bounds = (f"[{low if low is not None else '-inf'}, "
                      f"{high if high is not None else 'inf'}]")
            raise input_error(f"{_dotted(key)} = {value!r} is outside {bounds}", key, origins)


def family_option_types(family_name: str, key: tuple[str, ...], origins: Origins
                        ) -> tuple[type, type, Any]:
    """The family's (featurizer options, model options) types and the family itself; the
    first may be a function of the built model options that returns the type."""
    try:
        family = lookup("family", family_name)
    except UnknownNameError as err:
        raise input_error(str(err), (*key, "family"), origins) from None
    return family.featurizer_options, family.options, family


def _soup_systems(value: Any, init_from: str | None, key: tuple[str, ...],
                  origins: Origins) -> tuple[str, ...]:
    """The ``soup:`` list: at least two distinct experiment paths, and no ``init_from``."""
    if value is None or value == []:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise input_error(f"soup = {value!r} is not a list of experiment paths", key, origins)
    if len(value) < SOUP_MIN_SYSTEMS or len(set(value)) != len(value):
        raise input_error(f"soup = {value!r}: a soup averages at least {SOUP_MIN_SYSTEMS} "
                          "different systems", key, origins)
    if init_from is not None:
        raise input_error("soup and init_from exclude each other (a soup is not trained)",
                          key, origins)
    return tuple(value)


def build_config(raw: dict[str, Any], origins: Origins | None = None,
                 key: tuple[str, ...] = ()) -> Config:
    """A typed :class:`Config` from resolved plain data (one pass over every section)."""
    origins = origins if origins is not None else {}
    if not isinstance(raw, dict):
        raise input_error("config must be a YAML mapping", key, origins)
    unknown = sorted(set(raw) - set(TOP_LEVEL))
    if unknown:
        raise input_error(f"unknown top-level key {unknown[0]!r}; allowed: "
                          f"{', '.join(TOP_LEVEL[:-1])}", (*key, unknown[0]), origins)
    name = raw.get("family")
    if not name or not isinstance(name, str):
        raise input_error("config has no 'family' (e.g. family: brnn)", (*key, "family"),
                          origins)
    featurizer_type, model_type, family = family_option_types(name, key, origins)
    model = build_section(model_type, raw.get("model"), (*key, "model"), origins)
    if not dataclasses.is_dataclass(featurizer_type):
        featurizer_type = featurizer_type(model)  # a family whose featurizer varies by model
    label_set = raw.get("label_set", "full13")
    if not isinstance(label_set, str) or label_set not in LABEL_SETS:
        raise input_error(f"label_set = {label_set!r} is not one of: {', '.join(LABEL_SETS)}",
                          (*key, "label_set"), origins)
    init_from = raw.get("init_from")
    if init_from is not None and not isinstance(init_from, str):
        raise input_error(f"init_from = {init_from!r} is not a path", (*key, "init_from"),
                          origins)
    soup = _soup_systems(raw.get("soup"), init_from, (*key, "soup"), origins)
    init_raw = raw.get("init_config")
    config = Config(
        family=name, label_set=label_set,
        featurizer=build_section(featurizer_type, raw.get("featurizer"),
                                 (*key, "featurizer"), origins),
        model=model,
        train=build_section(TrainSection, raw.get("train"), (*key, "train"), origins),
        decode=build_section(DecodeSection, raw.get("decode"), (*key, "decode"), origins),
        init_from=init_from,
        soup=soup,
        init_config=(None if init_raw is None
                     else build_config(init_raw, origins, (*key, "init_config"))),
        source=origin_of(origins, ())[0],
    )
    _check_across(config, family, key, origins)
    return config


def _check_across(config: Config, family: Any, key: tuple[str, ...], origins: Origins) -> None:
    """Checks that read more than one section."""
    window, stride = config.decode_window()
    if stride > window:
        raise input_error(f"decode.stride {stride} exceeds the decoding window {window}",
                          (*key, "decode", "stride"), origins)
    streams = (*family.needs_streams, *config.streams)
    if config.train.augment.active and streams:
        raise input_error(
            f"train.augment edits the training words, but family {config.family} reads "
            f"per-word acoustic streams ({', '.join(streams)}) that would no longer "
            "match them; set the rates to 0 or train a text family",
            (*key, "train", "augment"), origins)
    check = getattr(family, "check_config", None)
    if check is not None:
        try:
            check(config)
        except OptionError as err:
            sub = (*key, *err.key.split("."))
            raise input_error(f"{_dotted(sub)}: {err.message}", sub, origins) from None


# ---------------------------------------------------------------------------------------
# Reading, overriding, writing


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


def apply_overrides(raw: dict[str, Any], overrides: list[str],
                    origins: Origins | None = None) -> dict[str, Any]:
    """Apply ``key.path=value`` overrides to plain config data; intermediate mappings are
    created as needed. Each overridden key's origin becomes its ``--set`` text."""
    out = copy.deepcopy(raw)
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
        if origins is not None:
            origins[tuple(parts)] = (f"--set {text}", None)
    return out


def resolve_config(raw: dict[str, Any] | Config, overrides: list[str] | None = None,
                   path: str | Path | None = None, origins: Origins | None = None) -> Config:
    """The typed config of plain data ``raw`` (or of a Config's data) with ``overrides``."""
    if isinstance(raw, Config):
        raw = raw.to_dict()
    if not isinstance(raw, dict):
        raise PunctInputError("config must be a YAML mapping", path)
    origins = dict(origins or {})
    origins.setdefault((), (str(path) if path is not None else None, None))
    return build_config(apply_overrides(raw, overrides or [], origins), origins)


def read_raw_config(path: str | Path, _seen: tuple[Path, ...] = ()
                    ) -> tuple[dict[str, Any], Origins]:
    """Read a YAML config and where each key was written; ``base: other.yaml`` (relative to
    this file) is read first and this file's keys are merged over it, so recipe configs
    only state what differs."""
    path = Path(path)
    if not path.is_file():
        raise MissingDataError(f"config file not found: {path}", path)
    if path.resolve() in _seen:
        raise PunctInputError("circular 'base:' chain", path)
    text = path.read_text(encoding="utf-8")
    try:
        raw = load_yaml(text) or {}
        node = yaml.compose(text, Loader=ConfigLoader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        raise PunctInputError(f"invalid YAML: {err}", path,
                              None if mark is None else mark.line + 1) from err
    if not isinstance(raw, dict):
        raise PunctInputError("config must be a YAML mapping", path)
    origins = key_lines(node, str(path)) if node is not None else {}
    origins[()] = (str(path), None)
    base = raw.pop("base", None)
    if base is None:
        return raw, origins
    parent, parent_origins = read_raw_config(path.parent / str(base),
                                             (*_seen, path.resolve()))
    return deep_merge(parent, raw), {**parent_origins, **origins}


def load_config(path: str | Path, overrides: list[str] | None = None) -> Config:
    """Read a YAML config file (following ``base:``) into a typed :class:`Config`."""
    raw, origins = read_raw_config(path)
    return resolve_config(raw, overrides, path, origins)


def save_config(config: Config, path: str | Path) -> None:
    """Write a resolved config as YAML (every key, in ``Config.to_dict`` order)."""
    atomic_write_text(path, yaml.safe_dump(config.to_dict(), sort_keys=False))
