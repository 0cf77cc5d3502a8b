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
from typing import Any

import torch

from punct.labels import get_label_set
from punct.models.base import Prediction
from punct.models.marks import LOSS_KEYS, MarkObjective
from punct.models.options import checked_options
from punct.models.subword.encoder import EncoderModel
from punct.models.subword.featurizer import SubwordFeaturizer

ENCODER_KEYS = {"encoder_train_layers", "freeze_encoder_epochs", "encoder_lr",
                "encoder_lr_decay", "loss"}


class SubwordTagger(EncoderModel, abc.ABC):
    """Pretrained encoder + a family-specific head producing per-position mark logits."""

    def __init__(self, config: dict[str, Any], featurizer: SubwordFeaturizer,
                 head_keys: set[str]):
        super().__init__(config, featurizer, ENCODER_KEYS | head_keys)
        loss = checked_options(self.mcfg.get("loss"), set(LOSS_KEYS), "model.loss")
        self.objective = MarkObjective(get_label_set(config["label_set"]), loss,
                                       featurizer.label_counts, featurizer.n_words)

    def param_groups(self, opts: dict[str, Any]) -> list[dict[str, Any]]:
        """Encoder groups (``model.encoder_lr``, ``model.encoder_lr_decay``) and the head
        group (the optimizer's lr)."""
        ids = {id(p) for p in self.encoder.parameters()}
        head = [p for p in self.parameters() if id(p) not in ids]
        return [*self.encoder_groups(opts.get("lr")), {"params": head}]

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
