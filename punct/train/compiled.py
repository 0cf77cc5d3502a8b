"""``train.compile``: the training loss through ``torch.compile``.

On a GPU, a small encoder's training step is bound by the host, not by the device: each
of the many kernels of a forward and backward pass (with bf16 autocast, its casts too) is
launched from Python, and nagy's MiniLM steps took about as long at batch 32 as at 8
(docs/TRAINING.md, the H200 check). ``torch.compile`` traces ``model.loss`` once per
input shape and runs it as fused kernels, launched from generated code. Modes are
torch's: ``default``, ``reduce-overhead`` (CUDA graphs on top: the least host work, for
fixed shapes) and ``max-autotune``; ``off`` (the default) runs the model as written.

Only the training loss is compiled. Dev evaluation, decoding and checkpoints use the
model itself, so the state dict's keys and every later stage are unchanged. The first
steps (and the first step after a family unfreezes its encoder) pay the compilation.
Dropout draws its masks differently when compiled, so a compiled run is seeded and
reproducible, but not step for step the same as an eager one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch

BACKEND = "inductor"
"""torch.compile's backend (tests use ``aot_eager``: the same tracing, no code generation)."""

LossFunction = Callable[[Mapping[str, torch.Tensor]], torch.Tensor]


def loss_function(model: torch.nn.Module, mode: str) -> LossFunction:
    """``model.loss`` as run by the trainer for ``train.compile: mode``."""
    loss: LossFunction = model.loss  # type: ignore[assignment]
    if mode == "off":
        return loss
    if BACKEND != "inductor":  # torch's modes are options of its own backend
        return torch.compile(loss, backend=BACKEND)
    compiled = torch.compile(loss, mode=None if mode == "default" else mode)
    if mode != "reduce-overhead":
        return compiled

    def step_loss(batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
        # each call is a new training step: CUDA graphs may reuse the last step's buffers
        torch.compiler.cudagraph_mark_step_begin()
        return compiled(batch)
    return step_loss
