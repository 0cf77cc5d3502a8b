"""Optimizers and learning-rate schedules of the trainer.

``build_optimizer(model, opts)`` asks the model for parameter groups when it defines
``param_groups(opts) -> list[dict]`` (e.g. a lower learning rate for a pretrained encoder
than for the head); otherwise every parameter that requires a gradient forms one group.
Families that freeze and later unfreeze parts of the model must put the frozen
parameters into a group from the start (an optimizer skips parameters without gradient).

``lookahead_<name>`` (e.g. ``lookahead_radam``, Courtland et al. 2020) wraps the optimizer
``<name>`` in ``punct.train.lookahead.LookAhead``; the keys ``k`` (sync period, default 6)
and ``alpha`` (sync rate, default 0.5) go to LookAhead, the others to the inner optimizer.
"""

from __future__ import annotations

from typing import Any

import torch

from punct.train.lookahead import LookAhead

LOOKAHEAD_PREFIX = "lookahead_"
LOOKAHEAD_KEYS = ("k", "alpha")
OPTIMIZERS: dict[str, type[torch.optim.Optimizer]] = {
    "adamw": torch.optim.AdamW, "adam": torch.optim.Adam, "adagrad": torch.optim.Adagrad,
    "sgd": torch.optim.SGD, "radam": torch.optim.RAdam,
}
OPTIMIZER_NAMES: tuple[str, ...] = (
    *OPTIMIZERS, *(LOOKAHEAD_PREFIX + name for name in OPTIMIZERS)
)
"""Every accepted ``train.optimizer.name``."""


def make_optimizer(params: list[torch.nn.Parameter] | list[dict[str, Any]],
                   opts: dict[str, Any]) -> torch.optim.Optimizer:
    """An optimizer by ``opts['name']``; other keys are passed to the optimizer."""
    opts = dict(opts)
    name = str(opts.pop("name", "adamw")).lower()
    if name not in OPTIMIZER_NAMES:
        raise ValueError(f"unknown optimizer {name!r} (known: {', '.join(OPTIMIZER_NAMES)})")
    if not params:
        raise ValueError("the model has no trainable parameters")
    if name.startswith(LOOKAHEAD_PREFIX):
        wrap = {key: opts.pop(key) for key in LOOKAHEAD_KEYS if key in opts}
        inner = OPTIMIZERS[name.removeprefix(LOOKAHEAD_PREFIX)](params, **opts)
        return LookAhead(inner, **wrap)
    bad = sorted(set(opts) & set(LOOKAHEAD_KEYS))
    if bad:
        raise ValueError(f"optimizer keys {bad} need a lookahead_* optimizer, not {name!r}")
    return OPTIMIZERS[name](params, **opts)


def build_optimizer(model: torch.nn.Module, opts: dict[str, Any]) -> torch.optim.Optimizer:
    """The optimizer of ``train.optimizer`` over the model's parameter groups."""
    groups = getattr(model, "param_groups", None)
    if callable(groups):
        return make_optimizer(groups(dict(opts)), opts)
    return make_optimizer([p for p in model.parameters() if p.requires_grad], opts)


def warmup_factor(step: int, warmup_steps: int) -> float:
    """Linear warm-up from 1/warmup_steps to 1, then constant."""
    if warmup_steps <= 0:
        return 1.0
    return min(1.0, (step + 1) / warmup_steps)
