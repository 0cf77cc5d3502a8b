"""LookAhead (Zhang et al. 2019, "k steps forward, 1 step back") around any optimizer.

The inner ("fast") optimizer takes every step; every ``k`` steps the slow weights move
``alpha`` of the way towards the fast weights and the fast weights restart from them:

    slow <- slow + alpha * (fast - slow);  fast <- slow

The slow weights start as the parameters' values when the wrapper is built. Courtland
et al. (2020) use LookAhead over RAdam with sync rate ``alpha = 0.5`` and period ``k = 6``.

``LookAhead.param_groups`` IS the inner optimizer's list, so learning-rate schedulers
(``LambdaLR`` warm-up) and per-group learning rates act on the inner optimizer.
``state_dict()`` holds the inner state, the slow weights and the step counter, so a
resumed run continues exactly as an uninterrupted one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

STATE_FORMAT = 1


class LookAhead(torch.optim.Optimizer):
    """LookAhead over ``inner``: sync period ``k`` steps, sync rate ``alpha``."""

    def __init__(self, inner: torch.optim.Optimizer, k: int = 6, alpha: float = 0.5):
        if not isinstance(inner, torch.optim.Optimizer):
            raise TypeError(f"LookAhead wraps a torch optimizer, got {type(inner).__name__}")
        if isinstance(inner, LookAhead):
            raise TypeError("LookAhead cannot wrap another LookAhead")
        if int(k) != k or k < 1:
            raise ValueError(f"LookAhead k must be a positive integer, got {k!r}")
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f"LookAhead alpha must be in (0, 1], got {alpha!r}")
        self.inner = inner
        self.k = int(k)
        self.alpha = float(alpha)
        self.fast_steps = 0
        # Optimizer.__init__ re-adds the inner groups (the same dicts) through the
        # param_groups property, so both optimizers share one list of groups.
        super().__init__(list(inner.param_groups), dict(inner.defaults))
        self.slow: dict[torch.Tensor, torch.Tensor] = {
            p: p.detach().clone() for p in self._params()
        }

    # -- the groups live in the inner optimizer
    @property  # type: ignore[override]
    def param_groups(self) -> list[dict[str, Any]]:
        return self.inner.param_groups

    @param_groups.setter
    def param_groups(self, groups: list[dict[str, Any]]) -> None:
        self.inner.param_groups = groups

    def _params(self) -> list[torch.Tensor]:
        return [p for group in self.param_groups for p in group["params"]]

    def __repr__(self) -> str:
        return f"LookAhead(k={self.k}, alpha={self.alpha}, inner={self.inner!r})"

    # -- stepping
    def zero_grad(self, set_to_none: bool = True) -> None:
        self.inner.zero_grad(set_to_none=set_to_none)

    @torch.no_grad()
    def sync(self) -> None:
        """Move the slow weights towards the fast ones and reset the fast weights."""
        for p in self._params():
            slow = self.slow[p]
            slow.add_(p.detach() - slow, alpha=self.alpha)
            p.copy_(slow)

    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        """One inner step; every ``k``-th step also synchronises."""
        loss = self.inner.step(closure) if closure is not None else self.inner.step()
        self.fast_steps += 1
        if self.fast_steps % self.k == 0:
            self.sync()
        return loss

    # -- checkpoints
    def state_dict(self) -> dict[str, Any]:
        """Inner state, slow weights (in parameter order), step counter and settings."""
        return {
            "format": STATE_FORMAT,
            "inner": self.inner.state_dict(),
            "slow": [self.slow[p].clone() for p in self._params()],
            "fast_steps": self.fast_steps,
            "k": self.k,
            "alpha": self.alpha,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a ``state_dict()`` of a LookAhead over the same parameters."""
        if state_dict.get("format") != STATE_FORMAT or "inner" not in state_dict:
            raise ValueError("not a LookAhead state dict (missing 'format'/'inner')")
        params = self._params()
        slow = state_dict["slow"]
        if len(slow) != len(params):
            raise ValueError(
                f"LookAhead state has {len(slow)} slow weights, the optimizer {len(params)} "
                "parameters"
            )
        for p, s in zip(params, slow, strict=True):
            if s.shape != p.shape:
                raise ValueError(f"slow weight of shape {tuple(s.shape)} for a parameter of "
                                 f"shape {tuple(p.shape)}")
        self.inner.load_state_dict(state_dict["inner"])
        self.slow = {p: s.detach().to(p.device, p.dtype).clone()
                     for p, s in zip(self._params(), slow, strict=True)}
        self.fast_steps = int(state_dict["fast_steps"])
        self.k = int(state_dict["k"])
        self.alpha = float(state_dict["alpha"])
