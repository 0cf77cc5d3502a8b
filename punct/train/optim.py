"""Optimizers and learning-rate schedules of the trainer.

``build_optimizer(model, optimizer)`` asks the model for parameter groups when it defines
``param_groups(optimizer) -> list[dict]`` (e.g. a lower learning rate for a pretrained encoder
than for the head); otherwise every parameter that requires a gradient forms one group.
Families that freeze and later unfreeze parts of the model must put the frozen
parameters into a group from the start (an optimizer skips parameters without gradient).

Adam and AdamW use torch's fused implementation (one kernel for all parameters) unless
``train.optimizer.fused`` is false: on a 2-core CPU it takes a 22M-parameter step in about
a fifth of the time of the per-parameter loop, which is the part of a training step that
bf16 autocast cannot speed up.

``lookahead_<name>`` (e.g. ``lookahead_radam``, Courtland et al. 2020) wraps the optimizer
``<name>`` in ``punct.train.lookahead.LookAhead``; the keys ``k`` (sync period, default 6)
and ``alpha`` (sync rate, default 0.5) go to LookAhead, the others to the inner optimizer.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from punct.config import LOOKAHEAD_PREFIX, LR_DECAYS, OPTIMIZER_BASES, OptimizerSection
from punct.train.lookahead import LookAhead

LOOKAHEAD_KEYS = ("k", "alpha")
OPTIMIZERS: dict[str, type[torch.optim.Optimizer]] = {
    "adamw": torch.optim.AdamW, "adam": torch.optim.Adam, "adagrad": torch.optim.Adagrad,
    "sgd": torch.optim.SGD, "radam": torch.optim.RAdam,
}
assert tuple(OPTIMIZERS) == OPTIMIZER_BASES, "punct.config.OPTIMIZER_BASES is out of date"


FUSED = ("adam", "adamw")
"""Optimizers with a fused implementation in torch (CPU and CUDA)."""


def _fusable(params: list[torch.nn.Parameter] | list[dict[str, Any]]) -> bool:
    """Whether every parameter is a floating-point tensor on a CPU or CUDA device."""
    tensors = [t for p in params
               for t in (p["params"] if isinstance(p, dict) else [p])]
    return bool(tensors) and all(
        t.is_floating_point() and t.device.type in ("cpu", "cuda") for t in tensors)


def make_optimizer(params: list[torch.nn.Parameter] | list[dict[str, Any]],
                   optimizer: OptimizerSection) -> torch.optim.Optimizer:
    """The optimizer ``optimizer.name`` over ``params`` with the section's options."""
    if not params:
        raise ValueError("the model has no trainable parameters")
    params = [dict(g, params=list(g["params"])) if isinstance(g, dict) else g for g in params]
    opts = optimizer.kwargs()
    name = optimizer.name
    if (optimizer.fused is None and name.removeprefix(LOOKAHEAD_PREFIX) in FUSED
            and _fusable(params)):
        opts["fused"] = True
    if name.startswith(LOOKAHEAD_PREFIX):
        wrap = {key: opts.pop(key) for key in LOOKAHEAD_KEYS if key in opts}
        inner = OPTIMIZERS[name.removeprefix(LOOKAHEAD_PREFIX)](params, **opts)
        return LookAhead(inner, **wrap)
    return OPTIMIZERS[name](params, **opts)


def build_optimizer(model: torch.nn.Module, optimizer: OptimizerSection
                    ) -> torch.optim.Optimizer:
    """The optimizer of ``train.optimizer`` over the model's parameter groups (a model may
    define ``param_groups(optimizer)``)."""
    groups = getattr(model, "param_groups", None)
    if callable(groups):
        return make_optimizer(groups(optimizer), optimizer)
    return make_optimizer([p for p in model.parameters() if p.requires_grad], optimizer)


def warmup_factor(step: int, warmup_steps: int) -> float:
    """Linear warm-up from 1/warmup_steps to 1, then constant."""
    if warmup_steps <= 0:
        return 1.0
    return min(1.0, (step + 1) / warmup_steps)


def lr_factor(step: int, total_steps: int, warmup_steps: int = 0, decay: str = "none",
              restart_step: int = 0) -> float:
    """Learning-rate multiplier at ``step`` (0-based) of a run of ``total_steps``.

    Linear warm-up over ``warmup_steps``, started again at ``restart_step`` (> 0: e.g.
    when a frozen encoder starts training), times a decay over the whole run: ``none``
    (constant), ``linear`` or ``cosine`` to 0 at ``total_steps``.
    """
    if decay not in LR_DECAYS:
        raise ValueError(f"unknown lr decay {decay!r} (known: {', '.join(LR_DECAYS)})")
    start = restart_step if 0 < restart_step <= step else 0
    factor = warmup_factor(step - start, warmup_steps)
    progress = min(1.0, step / max(total_steps, 1))
    if decay == "linear":
        factor *= 1.0 - progress
    elif decay == "cosine":
        factor *= 0.5 * (1.0 + math.cos(math.pi * progress))
    return factor
