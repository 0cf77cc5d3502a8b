"""The mark objective every sub-word family shares: loss and probabilities from logits.

A family's punctuation head gives one logit per mark, ``(..., P)``. How they become a
loss and probabilities follows the label set:

- exclusive sets (iwslt4, moro2; ``LabelSet.exclusive``): a softmax over O plus the
  marks, with O's logit fixed at 0 (a softmax is shift-invariant, so this loses nothing
  and keeps the head's shape); cross-entropy with class weights over ``[O, marks...]``;
  probabilities are the marks' softmax shares (O's is one minus their sum) and the
  decoder takes the argmax.
- multi-label sets (full13): one sigmoid per mark, binary cross-entropy with an
  optional ``pos_weight``; the decoder applies per-mark thresholds (tuned on dev after
  training, see ``punct.train.thresholds``).

Options (``model.loss``): ``class_weight`` (exclusive: null, ``auto`` or ``P + 1``
numbers for O and the marks; ``auto`` = ``min(max, (n_O / n_mark) ** power)`` from the
training counts, O gets 1), ``class_weight_power`` (0.25), ``class_weight_max`` (5);
``pos_weight`` (multi-label: null, ``auto`` or ``P`` numbers; ``auto`` =
``min(max, (neg / pos) ** power)``), ``pos_weight_power`` (0.5), ``pos_weight_max`` (10).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from punct.errors import PunctInputError
from punct.labels import LabelSet

LOSS_KEYS = frozenset({
    "class_weight", "class_weight_power", "class_weight_max",
    "pos_weight", "pos_weight_power", "pos_weight_max",
})


def _explicit(value: Any, n: int, key: str) -> torch.Tensor:
    if not isinstance(value, (list, tuple)) or len(value) != n:
        raise PunctInputError(f"model.loss.{key} must be null, 'auto' or {n} numbers, "
                              f"got {value!r}")
    weights = [float(v) for v in value]
    if not all(math.isfinite(v) and v > 0 for v in weights):
        raise PunctInputError(f"model.loss.{key} values must be positive, got {value}")
    return torch.tensor(weights, dtype=torch.float32)


def class_weights(opts: dict[str, Any], counts: np.ndarray, n_words: int
                  ) -> torch.Tensor | None:
    """Weights of ``[O, marks...]`` for the exclusive cross-entropy (None: unweighted)."""
    value = opts.get("class_weight")
    n = len(counts) + 1
    if value is None or value is False:
        return None
    if value != "auto":
        return _explicit(value, n, "class_weight")
    if n_words <= 0:
        raise PunctInputError("class_weight: auto needs the training counts (fit() first)")
    marks = np.maximum(np.asarray(counts, dtype=np.float64), 1.0)
    n_o = max(float(n_words) - float(marks.sum()), 1.0)
    power = float(opts.get("class_weight_power", 0.25))
    cap = float(opts.get("class_weight_max", 5.0))
    weights = np.concatenate([[1.0], np.clip((n_o / marks) ** power, 1.0, cap)])
    return torch.tensor(weights, dtype=torch.float32)


def pos_weights(opts: dict[str, Any], counts: np.ndarray, n_words: int) -> torch.Tensor | None:
    """Per-mark ``pos_weight`` of the multi-label BCE (None: unweighted)."""
    value = opts.get("pos_weight")
    if value is None or value is False:
        return None
    if value != "auto":
        return _explicit(value, len(counts), "pos_weight")
    if n_words <= 0:
        raise PunctInputError("pos_weight: auto needs the training counts (fit() first)")
    pos = np.maximum(np.asarray(counts, dtype=np.float64), 1.0)
    neg = np.maximum(float(n_words) - pos, 1.0)
    power = float(opts.get("pos_weight_power", 0.5))
    cap = float(opts.get("pos_weight_max", 10.0))
    return torch.tensor(np.clip((neg / pos) ** power, 1.0, cap), dtype=torch.float32)


def with_o(logits: torch.Tensor) -> torch.Tensor:
    """``[0, logits...]`` along the last axis: O's logit fixed at 0."""
    return F.pad(logits, (1, 0))


def exclusive_targets(targets: torch.Tensor) -> torch.Tensor:
    """Class index over ``[O, marks...]`` of multi-hot rows with at most one mark."""
    hot = targets > 0.5
    return torch.where(hot.any(dim=-1), hot.float().argmax(dim=-1) + 1,
                       torch.zeros_like(hot[..., 0], dtype=torch.long))


class MarkObjective(torch.nn.Module):
    """Loss and probabilities of per-mark logits for one label set."""

    def __init__(self, label_set: LabelSet, opts: dict[str, Any] | None,
                 counts: np.ndarray, n_words: int):
        super().__init__()
        opts = dict(opts or {})
        unknown = set(opts) - LOSS_KEYS
        if unknown:
            raise PunctInputError(f"unknown option(s) {sorted(unknown)} in model.loss; "
                                  f"allowed: {sorted(LOSS_KEYS)}")
        self.exclusive = bool(label_set.exclusive)
        wrong = "pos_weight" if self.exclusive else "class_weight"
        if opts.get(wrong) not in (None, False):
            kind = "exclusive" if self.exclusive else "multi-label"
            raise PunctInputError(f"model.loss.{wrong} does not apply to the {kind} label "
                                  f"set {label_set.name}")
        counts = np.asarray(counts)
        weight = (class_weights(opts, counts, n_words) if self.exclusive
                  else pos_weights(opts, counts, n_words))
        self.register_buffer("weight", weight, persistent=False)

    def loss(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Mean loss of logits ``(N, P)`` against multi-hot targets ``(N, P)``."""
        logits = logits.float()
        if self.exclusive:
            return F.cross_entropy(with_o(logits), exclusive_targets(targets), weight=self.weight)
        return F.binary_cross_entropy_with_logits(logits, targets.float(),
                                                  pos_weight=self.weight)

    def probs(self, logits: torch.Tensor) -> torch.Tensor:
        """Per-mark probabilities ``(..., P)`` (softmax shares or sigmoids)."""
        if self.exclusive:
            return torch.softmax(with_o(logits.float()), dim=-1)[..., 1:]
        return torch.sigmoid(logits.float())


def model_pos_weight(model: torch.nn.Module) -> np.ndarray | None:
    """The per-mark ``pos_weight`` of a model's multi-label objective (None: unweighted,
    exclusive, or no ``MarkObjective`` inside)."""
    for module in model.modules():
        if isinstance(module, MarkObjective):
            if module.exclusive or module.weight is None:
                return None
            return module.weight.detach().cpu().numpy().astype(np.float64)
    return None
