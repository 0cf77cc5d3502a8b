"""Load a trained system from an experiment directory or an exported (Hub layout) directory.

An *experiment directory* (``exp/<system>``) holds ``config.yaml``, ``featurizer/`` and
``best.pt``; an *exported directory* (``punct-export``) holds ``config.json`` (``format:
punct-recipes``), ``model.safetensors``, ``featurizer/`` and ``README.md``. Both give a
``System``: config, featurizer, model in eval mode, label set and per-mark thresholds.
A string that is neither a local directory is taken as a Hugging Face Hub id and fetched
with ``huggingface_hub`` (the ``hub`` extra).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file

from punct.config import Config, resolve_config
from punct.engine.decode import load_experiment
from punct.errors import MissingDataError, PunctInputError
from punct.extras import require
from punct.labels import LabelSet, get_label_set
from punct.models.base import Featurizer, PunctModel, Registry, weights_from_checkpoint

EXPORT_FORMAT = "punct-recipes"
EXPORT_VERSION = 1
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
FEATURIZER_DIR = "featurizer"


@dataclass
class System:
    """A trained system ready to decode."""

    config: Config
    featurizer: Featurizer
    model: PunctModel
    label_set: LabelSet
    thresholds: dict[str, float] | None
    source: Path
    exported: bool

    @property
    def family(self) -> str:
        return self.config.family

    @property
    def streams(self) -> tuple[str, ...]:
        """Acoustic feature streams the featurizer needs (none for text systems)."""
        return self.config.streams


def decision_rule(label_set: LabelSet) -> str:
    """``argmax`` for exclusive label sets (one mark per word), else ``threshold``."""
    return "argmax" if getattr(label_set, "exclusive", False) else "threshold"


def resolve_source(path_or_id: str | Path, revision: str | None = None) -> Path:
    """A local directory, or the snapshot of a Hub repository fetched by id."""
    path = Path(path_or_id).expanduser()
    if path.exists():
        if not path.is_dir():
            raise MissingDataError("not a system directory", path)
        return path
    text = str(path_or_id)
    if text.count("/") != 1 or text.startswith((".", "/")):
        raise MissingDataError("no such system directory (nor a Hub id 'owner/name')", text)
    # optional extra: huggingface_hub, only for a Hub id
    hub = require("huggingface_hub", "hub", f"{text!r} is not a local directory; the Hub")
    try:
        return Path(hub.snapshot_download(text, revision=revision))
    except Exception as err:  # network, auth, missing repo: one clear message
        raise MissingDataError(f"no such directory {text!r}, and it cannot be fetched from "
                               f"the Hugging Face Hub ({type(err).__name__}: {err})") from err


def is_exported(directory: Path) -> bool:
    """Whether ``directory`` is an exported system (``config.json`` of this format)."""
    path = directory / CONFIG_FILE
    if not path.is_file():
        return False
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("format") == EXPORT_FORMAT
    except (json.JSONDecodeError, AttributeError):
        return False


def load_system(path_or_id: str | Path, device: torch.device | str = "cpu",
                checkpoint: str = "best", revision: str | None = None) -> System:
    """Load an experiment dir, an exported dir, or a Hub id (see the module docstring)."""
    directory = resolve_source(path_or_id, revision)
    if is_exported(directory):
        system = _load_exported(directory)
    elif (directory / "config.yaml").is_file():
        system = _load_experiment(directory, checkpoint)
    else:
        raise MissingDataError("neither an experiment dir (config.yaml) nor an exported "
                               "system (config.json)", directory)
    system.model.to(torch.device(device))
    system.model.eval()
    return system


def _load_experiment(exp_dir: Path, checkpoint: str) -> System:
    exp = load_experiment(exp_dir, checkpoint, "cpu")  # with decode.thresholds when tuned
    return System(exp.config, exp.featurizer, exp.model, get_label_set(exp.config.label_set),
                  exp.config.decode.thresholds, exp_dir, exported=False)


def _load_exported(directory: Path) -> System:
    meta = json.loads((directory / CONFIG_FILE).read_text(encoding="utf-8"))
    if int(meta.get("format_version", 0)) > EXPORT_VERSION:
        raise PunctInputError(f"export format version {meta['format_version']} is newer than "
                              f"this punct ({EXPORT_VERSION}); upgrade punct-recipes",
                              directory / CONFIG_FILE)
    thresholds = meta.get("thresholds")
    if thresholds:  # the engine reads them from decode.thresholds
        thresholds = {str(k): float(v) for k, v in thresholds.items()}
        meta["config"].setdefault("decode", {})["thresholds"] = thresholds
    config = resolve_config(meta["config"], path=directory / CONFIG_FILE)
    weights = directory / WEIGHTS_FILE
    if not weights.is_file():
        raise MissingDataError("exported system without weights", weights)
    family = Registry.get(config.family)
    featurizer = family.load_featurizer(directory / FEATURIZER_DIR, config)
    with weights_from_checkpoint():  # model.safetensors holds every weight
        model = family.make_model(config, featurizer)
    model.load_state_dict(load_file(str(weights)))
    return System(config, featurizer, model, get_label_set(config.label_set),
                  thresholds or None, directory, exported=True)
