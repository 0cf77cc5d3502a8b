"""Export an experiment directory to a self-contained directory in the Hugging Face Hub layout.

``export_hub(exp_dir, out)`` writes

- ``config.json``: ``format``/``format_version``, the family, label set and labels, the
  decision rule (``argmax`` for exclusive label sets, else ``threshold``), the per-mark
  thresholds of ``thresholds.json`` when the experiment has one, the ``decode`` settings
  and the full resolved experiment config (what rebuilds the model);
- ``model.safetensors``: every weight of the checkpoint (tied tensors stored once each);
- ``featurizer/``: the tokenizer files and encoder config (transformer families), the
  vocabulary (BRNN) or the prosodic models, exactly as the experiment saved them;
- ``README.md``: a model card with the training data and the experiment's scores.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

from punct import __version__
from punct.config import Config, load_config
from punct.engine.decode import read_thresholds
from punct.errors import MissingDataError
from punct.export.card import model_card
from punct.export.system import (
    CONFIG_FILE,
    EXPORT_FORMAT,
    EXPORT_VERSION,
    FEATURIZER_DIR,
    WEIGHTS_FILE,
    decision_rule,
)
from punct.labels import CAP_LABELS, get_label_set
from punct.models.checkpoint import load_checkpoint


def export_config(config: Config, thresholds: dict[str, float] | None) -> dict[str, Any]:
    """The ``config.json`` document of an exported system."""
    label_set = get_label_set(config.label_set)
    data = config.to_dict()
    return {
        "format": EXPORT_FORMAT,
        "format_version": EXPORT_VERSION,
        "punct_version": __version__,
        "family": config.family,
        "label_set": label_set.name,
        "labels": list(label_set.labels),
        "cap_labels": list(CAP_LABELS),
        "decision_rule": decision_rule(label_set),
        "thresholds": thresholds,
        "decode": data["decode"],
        "streams": list(config.streams),
        "config": data,
    }


def state_tensors(checkpoint: Path) -> dict[str, torch.Tensor]:
    """The model weights of a ``best.pt``/``last.pt`` checkpoint, each a contiguous copy
    (safetensors refuses tensors that share memory)."""
    state = load_checkpoint(checkpoint)
    weights = state["model"] if "model" in state else state
    return {k: v.detach().clone().contiguous() for k, v in weights.items()}


def export_hub(exp_dir: str | Path, out: str | Path, checkpoint: str = "best",
               train_data: str | None = None, overwrite: bool = False,
               card_facts: Mapping[str, Any] | None = None) -> Path:
    """Write the exported system of ``exp_dir`` into ``out`` (see the module docstring);
    ``card_facts``: keyword arguments of :func:`punct.export.card.model_card` beyond the
    data (``selection``, ``dev_set``, ``training``)."""
    exp_dir, out = Path(exp_dir), Path(out)
    for need in ("config.yaml", FEATURIZER_DIR, f"{checkpoint}.pt"):
        if not (exp_dir / need).exists():
            raise MissingDataError(f"not a trained experiment dir (no {need})", exp_dir / need)
    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise FileExistsError(f"{out} exists and is not empty (use --overwrite)")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    config = load_config(exp_dir / "config.yaml")
    thresholds = read_thresholds(exp_dir)
    if thresholds:
        config = config.replace(decode=dataclasses.replace(config.decode,
                                                           thresholds=thresholds))
    doc = export_config(config, thresholds)
    (out / CONFIG_FILE).write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n",
                                   encoding="utf-8")
    save_file(state_tensors(exp_dir / f"{checkpoint}.pt"), str(out / WEIGHTS_FILE),
              metadata={"format": "pt", "family": config.family})
    shutil.copytree(exp_dir / FEATURIZER_DIR, out / FEATURIZER_DIR)
    (out / "README.md").write_text(model_card(exp_dir, doc, train_data, **(card_facts or {})),
                                   encoding="utf-8")
    return out
