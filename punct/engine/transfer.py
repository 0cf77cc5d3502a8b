"""Moving batches to the model's device: through pinned (page-locked) host memory and
asynchronous copies on CUDA, so the copy overlaps the model's work; plain on CPU."""

from __future__ import annotations

import numpy as np
import torch


def uses_pinned(device: torch.device) -> bool:
    """Whether copies to ``device`` go through pinned memory (CUDA only)."""
    return device.type == "cuda" and torch.cuda.is_available()


def to_device(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``tensor`` on ``device``; pinned and non-blocking on CUDA, untouched on CPU."""
    if device.type == "cpu":
        return tensor
    if uses_pinned(device):
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)


def batch_to_device(batch: dict[str, torch.Tensor], device: torch.device
                    ) -> dict[str, torch.Tensor]:
    """Every tensor of a collated batch on ``device``."""
    return {k: to_device(v, device) for k, v in batch.items()}


def rows_at(values: torch.Tensor | None, n_positions: int, index: torch.Tensor
            ) -> torch.Tensor | None:
    """The rows ``index`` of per-position outputs (B, T, C) seen as (B * T, C), in float32,
    still on their device (no synchronisation)."""
    if values is None:
        return None
    return values.reshape(n_positions, -1).index_select(0, index).float()


def to_numpy(values: torch.Tensor | None) -> np.ndarray | None:
    """A (device) tensor as a numpy array on the host."""
    return None if values is None else values.detach().cpu().numpy()
