"""What the sub-word tagger families (nagy, courtland) share.

Both read ``SubwordFeaturizer`` windows with the prediction slot on the LAST piece of
each word (the piece next to the following mark; Nagy et al. 2021 mask every other
piece out of the loss). ``SubwordTagger`` is an ``EncoderModel`` (encoder schedule,
frozen-state cache) with a family-specific head producing per-position mark logits:

- ``param_groups``: the encoder at ``model.encoder_lr`` (default: the optimizer's lr),
  the head at the optimizer's lr; frozen encoder parameters are in their group from
  the start so they train once unfrozen;
- the loss over word slots only (``word_ids >= 0``) follows the label set
  (``punct.models.marks``): a softmax over O plus the marks with class weights for the
  exclusive sets (iwslt4, moro2, as in the papers), one sigmoid per mark for the
  multi-label full13; ``predict`` gives the probabilities and the raw logits (for the
  ``sum`` aggregation).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any

import torch

from punct.config import Config, OptimizerSection
from punct.labels import get_label_set
from punct.models.base import Prediction
from punct.models.marks import LossOptions, MarkObjective
from punct.models.subword.encoder import EncoderModel, FreezingEncoderOptions
from punct.models.subword.featurizer import SubwordFeaturizer


@dataclass
class TaggerOptions(FreezingEncoderOptions):
    """The ``model:`` options every tagger shares: the encoder's (with
    ``freeze_encoder_epochs``) and ``loss``; a family adds its head's."""

    loss: LossOptions = field(default_factory=LossOptions)


class SubwordTagger(EncoderModel, abc.ABC):
    """Pretrained encoder + a family-specific head producing per-position mark logits."""

    predict_inputs = ("input_ids", "attention_mask")  # the encoder's, nothing else

    def __init__(self, config: Config, featurizer: SubwordFeaturizer):
        super().__init__(config, featurizer)
        self.objective = MarkObjective(get_label_set(config.label_set), config.model.loss,
                                       featurizer.label_counts, featurizer.n_words)

    def param_groups(self, opts: OptimizerSection) -> list[dict[str, Any]]:
        """Encoder groups (``model.encoder_lr``, ``model.encoder_lr_decay``) and the head
        group (the optimizer's lr)."""
        ids = {id(p) for p in self.encoder.parameters()}
        head = [p for p in self.parameters() if id(p) not in ids]
        return [*self.encoder_groups(opts.lr), {"params": head}]

    @abc.abstractmethod
    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Mark logits (B, T, P) for every position."""

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Mean mark loss over word slots; other positions carry no loss."""
        logits = self.forward(batch)
        mask = batch["word_ids"] >= 0
        if not bool(mask.any()):
            return logits.sum().float() * 0.0
        return self.objective.loss(logits[mask], batch["punct"][mask])

    @torch.no_grad()
    def predict(self, batch: dict[str, torch.Tensor]) -> Prediction:
        """Mark probabilities; raw logits in ``extra`` (``sum`` aggregation)."""
        logits = self.forward(batch).float()
        return Prediction(punct=self.objective.probs(logits), cap=None,
                          extra={"punct_logits": logits})
