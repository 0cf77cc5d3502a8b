"""Weight soups: a system built from trained systems instead of trained.

A config with ``soup: [exp/A, exp/B, ...]`` averages the ``best.pt`` weights of those
experiments, uniformly (the "uniform soup" of Wortsman et al. 2022, *Model soups*). This
works for fine-tunes of one pretrained encoder that stay in one basin of the loss, e.g. the
same system trained on clean and on ASR-like text: the mean often scores above each of
them on both conditions, at the cost of one model. The ingredients must share the soup's
family, label set, ``model`` and ``featurizer`` sections and the same trained featurizer
(byte-identical ``featurizer/`` directories: the same vocabulary or tokenizer, fitted on
the same training data); every floating-point tensor is averaged (batch-norm running
statistics too, not recomputed), a batch-norm step counter takes the largest value, and
any other tensor (position ids) must be equal everywhere. Paths are relative to the
working directory (the recipe's, as for ``init_from``); the history row records them as
written and resolved.

:func:`build_soup` fills an experiment directory that the trainer has started
(``config.yaml``, ``env.json``, ``train.log``) as a training would: ``featurizer/`` of
the first system, ``best.pt``, one row of ``history.json`` with the soup's dev figures,
thresholds for multi-label sets; so decoding, scoring, the reports and export treat it as
any trained system. ``punct.train.trainer.train_experiment`` calls both.
"""

from __future__ import annotations

import filecmp
import json
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from punct.config import Config, load_config
from punct.data.sequences import load_data_dir
from punct.errors import MissingDataError, PunctInputError
from punct.labels import get_label_set
from punct.models.base import Registry
from punct.models.checkpoint import load_checkpoint
from punct.train.checkpoint import BEST, save_atomic
from punct.train.dev_eval import evaluate, tune_dev_thresholds

SHARED_SECTIONS = ("family", "label_set", "model", "featurizer")
"""What every ingredient must share with the soup's own config."""
COUNTER_SUFFIX = "num_batches_tracked"
"""Batch-norm step counters: integers that differ between runs; the soup keeps the largest."""


def check_ingredient(config: Config, ingredient: Config, where: Path) -> None:
    """Raise unless ``ingredient`` has the soup's architecture (``SHARED_SECTIONS``)."""
    ours, theirs = config.to_dict(), ingredient.to_dict()
    for section in SHARED_SECTIONS:
        if ours[section] != theirs[section]:
            differ = section
            if isinstance(ours[section], dict) and isinstance(theirs[section], dict):
                keys = sorted(k for k in set(ours[section]) | set(theirs[section])
                              if ours[section].get(k) != theirs[section].get(k))
                differ = ", ".join(f"{section}.{k}" for k in keys)
            raise PunctInputError(f"soup: {where} differs from the soup's config in {differ} "
                                  "(a soup averages systems of one architecture)",
                                  where / "config.yaml")


def average_states(states: Sequence[Mapping[str, torch.Tensor]], names: Sequence[str]
                   ) -> dict[str, torch.Tensor]:
    """The mean of ``states`` (model state dicts, one per name in ``names``): floating
    tensors averaged in float64 and cast back, the others required equal."""
    if len(states) < 2:
        raise PunctInputError(f"a soup needs at least 2 systems, got {len(states)}")
    first = states[0]
    out: dict[str, torch.Tensor] = {}
    for state, name in zip(states[1:], names[1:], strict=True):
        missing = sorted(set(first) ^ set(state))
        if missing:
            raise PunctInputError(f"soup: {name} and {names[0]} hold different weights "
                                  f"(e.g. {missing[0]})")
    for key, tensor in first.items():
        tensors = [state[key] for state in states]
        for other, name in zip(tensors[1:], names[1:], strict=True):
            if other.shape != tensor.shape:
                raise PunctInputError(f"soup: {key} is {tuple(other.shape)} in {name}, "
                                      f"{tuple(tensor.shape)} in {names[0]}")
        if key.endswith(COUNTER_SUFFIX):
            out[key] = torch.stack(tensors).max()
        elif tensor.is_floating_point():
            total = torch.zeros(tensor.shape, dtype=torch.float64)
            for other in tensors:
                total += other.to(torch.float64)
            out[key] = (total / len(tensors)).to(tensor.dtype)
        else:
            for other, name in zip(tensors[1:], names[1:], strict=True):
                if not torch.equal(other, tensor):
                    raise PunctInputError(f"soup: {key} differs between {name} and "
                                          f"{names[0]} (not a weight that can be averaged)")
            out[key] = tensor.clone()
    return out


def same_tree(a: Path, b: Path) -> bool:
    """Whether directories ``a`` and ``b`` hold the same files with the same bytes."""
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    if mismatch or errors:
        return False
    return all(same_tree(a / sub, b / sub) for sub in cmp.common_dirs)


def check_soup(config: Config) -> list[Path]:
    """The soup's experiment directories, each checked: a ``best.pt``, the soup's
    architecture, the first one's trained featurizer."""
    dirs = [Path(entry) for entry in config.soup]
    for exp_dir in dirs:
        if not (exp_dir / BEST).is_file():
            raise MissingDataError(f"soup: no {BEST} in {exp_dir} (train that system first)",
                                   exp_dir)
        check_ingredient(config, load_config(exp_dir / "config.yaml"), exp_dir)
        if not same_tree(dirs[0] / "featurizer", exp_dir / "featurizer"):
            raise PunctInputError(f"soup: {exp_dir}/featurizer differs from "
                                  f"{dirs[0]}/featurizer (another vocabulary or tokenizer: "
                                  "systems trained on other data cannot be averaged)",
                                  exp_dir / "featurizer")
    return dirs


def build_soup(config: Config, dirs: Sequence[Path], dev_dir: Path, exp_dir: Path,
               device: torch.device, log: Callable[[str], None]) -> dict[str, Any]:
    """Average the systems ``dirs`` (checked by :func:`check_soup`) into ``exp_dir``, a
    fresh experiment directory with the soup's ``config.yaml``, and score the soup on
    ``dev_dir``; the summary has the keys of the trainer's (``best_epoch`` 0: no epoch was
    trained)."""
    t0 = time.perf_counter()
    names = [str(d) for d in dirs]
    states = [load_checkpoint(d / BEST)["model"] for d in dirs]
    family = Registry.get(config.family)
    featurizer = family.load_featurizer(dirs[0] / "featurizer", config)
    shutil.rmtree(exp_dir / "featurizer", ignore_errors=True)
    featurizer.save(exp_dir / "featurizer")
    model = family.make_model(config, featurizer)
    model.load_state_dict(average_states(states, names))
    model.to(device)
    log(f"soup {config.family} of {len(dirs)} systems ({', '.join(names)}), uniform weights; "
        f"{sum(p.numel() for p in model.parameters())} parameters; on {device}")
    label_set = get_label_set(config.label_set)
    dev_utts, dev_seqs = load_data_dir(dev_dir, label_set, config.streams)
    window = config.train.window
    dev = evaluate(model, featurizer, config, dev_utts, dev_seqs,
                   featurizer.windows(dev_seqs, window, window), device)
    save_atomic({"model": model.state_dict(), "epoch": 0}, exp_dir / BEST)
    if config.train.tune_thresholds:
        tune_dev_thresholds(model, featurizer, config, dev_seqs, exp_dir, device, log)
    seconds = round(time.perf_counter() - t0, 2)
    record = {"epoch": 0, "soup": names, "soup_resolved": [str(d.resolve()) for d in dirs],
              **dev, "seconds": seconds, "best": True}
    (exp_dir / "history.json").write_text(json.dumps([record], indent=1) + "\n",
                                          encoding="utf-8")
    log(f"done: soup dev micro-F1 {dev['dev_micro_f1']:.4f} dev loss {dev['dev_loss']:.4f} "
        f"in {seconds:.1f}s -> {exp_dir / BEST}")
    return {"best_epoch": 0, "epochs_run": 0, "dev_micro_f1": dev["dev_micro_f1"],
            "dev_loss": dev["dev_loss"], "precision": None, "seconds": seconds,
            "checkpoint": str(exp_dir / BEST), "soup": names}

