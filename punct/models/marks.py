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
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from punct.config import Config, OptionError
from punct.errors import PunctInputError
from punct.labels import LABEL_SETS, LabelSet

WEIGHT_MODES = ("auto",)


@dataclass
class LossOptions:
    """``model.loss``: the mark loss's weights (see the module docstring). A weight is
    null or false (unweighted), ``auto`` or one number per class."""

    class_weight: str | bool | list[float] | None = None  # exclusive sets: P + 1 numbers
    class_weight_power: float = 0.25
    class_weight_max: float = 5.0
    pos_weight: str | bool | list[float] | None = None  # multi-label sets: P numbers
    pos_weight_power: float = 0.5
    pos_weight_max: float = 10.0

    def check(self) -> None:
        for key in ("class_weight", "pos_weight"):
            value = getattr(self, key)
            if value is True or (isinstance(value, str) and value not in WEIGHT_MODES):
                raise OptionError(key, f"{value!r}: expected null, auto or a list of numbers")
            if isinstance(value, list) and not all(math.isfinite(v) and v > 0 for v in value):
                raise OptionError(key, f"values must be positive, got {value}")


def check_loss(loss: LossOptions, label_set: LabelSet, where: str = "model.loss") -> None:
    """The loss options that depend on the label set (an ``OptionError`` at ``where``):
    the weight of the other kind of set is unset, explicit weights count every class."""
    exclusive = bool(label_set.exclusive)
    wrong, right = ("pos_weight", "class_weight") if exclusive else ("class_weight",
                                                                     "pos_weight")
    if getattr(loss, wrong) not in (None, False):
        kind = "exclusive" if exclusive else "multi-label"
        raise OptionError(f"{where}.{wrong}", f"does not apply to the {kind} label set "
                                              f"{label_set.name}")
    value = getattr(loss, right)
    n = len(label_set.labels) + (1 if exclusive else 0)
    if isinstance(value, list) and len(value) != n:
        raise OptionError(f"{where}.{right}", f"must be null, 'auto' or {n} numbers for "
                                              f"{label_set.name}, got {len(value)}")


def check_loss_config(config: Config) -> None:
    """``Family.check_config`` of a family whose ``model.loss`` is a ``LossOptions`` (the
    label set is known: ``punct.config`` checks it first)."""
    check_loss(config.model.loss, LABEL_SETS[config.label_set])


def _explicit(value: list[float]) -> torch.Tensor:
    return torch.tensor([float(v) for v in value], dtype=torch.float32)


def class_weights(opts: LossOptions, counts: np.ndarray, n_words: int
                  ) -> torch.Tensor | None:
    """Weights of ``[O, marks...]`` for the exclusive cross-entropy (None: unweighted)."""
    value = opts.class_weight
    if value is None or value is False:
        return None
    if value != "auto":
        return _explicit(value)
    if n_words <= 0:
        raise PunctInputError("class_weight: auto needs the training counts (fit() first)")
    marks = np.maximum(np.asarray(counts, dtype=np.float64), 1.0)
    n_o = max(float(n_words) - float(marks.sum()), 1.0)
    power = float(opts.class_weight_power)
    cap = float(opts.class_weight_max)
    weights = np.concatenate([[1.0], np.clip((n_o / marks) ** power, 1.0, cap)])
    return torch.tensor(weights, dtype=torch.float32)


def pos_weights(opts: LossOptions, counts: np.ndarray, n_words: int) -> torch.Tensor | None:
    """Per-mark ``pos_weight`` of the multi-label BCE (None: unweighted)."""
    value = opts.pos_weight
    if value is None or value is False:
        return None
    if value != "auto":
        return _explicit(value)
    if n_words <= 0:
        raise PunctInputError("pos_weight: auto needs the training counts (fit() first)")
    pos = np.maximum(np.asarray(counts, dtype=np.float64), 1.0)
    neg = np.maximum(float(n_words) - pos, 1.0)
    power = float(opts.pos_weight_power)
    cap = float(opts.pos_weight_max)
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

    def __init__(self, label_set: LabelSet, opts: LossOptions | None,
                 counts: np.ndarray, n_words: int):
        super().__init__()
        opts = opts if opts is not None else LossOptions()
        try:
            check_loss(opts, label_set)
        except OptionError as err:
            raise PunctInputError(str(err)) from None
        self.exclusive = bool(label_set.exclusive)
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
