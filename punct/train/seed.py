"""One place that seeds, saves and restores every random number generator of training."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch


def seed_everything(seed: int) -> np.random.Generator:
    """Seed ``random``, numpy and torch; return a numpy Generator for data shuffling."""
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)
    return np.random.default_rng(seed)


def capture_rng_state() -> dict[str, Any]:
    """The global generators' states (python, numpy, torch CPU and CUDA) in a form
    ``torch.load(weights_only=True)`` reads back (lists and tensors, no numpy arrays)."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state(legacy=True)
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": [kind, torch.from_numpy(np.asarray(keys, dtype=np.int64)), int(pos),
                  int(has_gauss), float(gauss)],
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng_state(state: dict[str, Any]) -> None:
    """Put back a state from ``capture_rng_state``."""
    py = state["python"]
    random.setstate((py[0], tuple(py[1]), py[2]))
    kind, keys, pos, has_gauss, gauss = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, gauss))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
