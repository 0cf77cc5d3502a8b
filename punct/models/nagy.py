"""Nagy, Bial and Ács (2021): a pretrained BERT + a two-layer MLP, one slot per word.

- Input: the sub-word pieces of the lower-cased words (``SubwordFeaturizer`` windows).
  The prediction slot of a word is its LAST piece; the other pieces, [CLS], [SEP] and
  padding are masked out of the loss (``word_ids = -1``).
- Head: dropout(0.2) -> linear(H -> 1568) -> ReLU -> dropout(0.2) -> linear(1568 -> P),
  i.e. dropout before and after the first linear layer (paper 3.3).
- Training (paper 3.4): AdamW, lr 3e-5 for the encoder (``model.encoder_lr``) and 1e-4
  for the head (``train.optimizer.lr``), linear warm-up, gradient clipping 1.5, the
  encoder trained from the first epoch.
- Decoding: sliding windows, per-mark probabilities averaged over the windows that
  contain a word (``decode.aggregate: mean``).

Deviation: one sigmoid per mark (BCE) instead of a softmax over {EMPTY, marks} (see
``punct.models.marks``). Punctuation only: the decoder's casing rule gives the casing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from punct.models.base import Family, Featurizer
from punct.models.subword.featurizer import SubwordFeaturizer, with_label_position
from punct.models.subword.heads import activation
from punct.models.subword.tagger import ENCODER_KEYS, SubwordTagger

HEAD_KEYS = {"hidden", "dropout", "activation"}


class NagyModel(SubwordTagger):
    """Encoder + dropout/linear/ReLU/dropout/linear per position."""

    def __init__(self, config: dict[str, Any], featurizer: SubwordFeaturizer):
        super().__init__(config, featurizer, HEAD_KEYS)
        hidden = int(self.mcfg.get("hidden", 1568))
        dropout = float(self.mcfg.get("dropout", 0.2))
        self.head = nn.Sequential(
            nn.Dropout(dropout),
            nn.Linear(self.hidden_size, hidden),
            activation(self.mcfg.get("activation", "relu")),
            nn.Dropout(dropout),
            nn.Linear(hidden, self.n_labels),
        )

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Mark logits (B, T, P)."""
        return self.head(self.encode(batch))


def make_featurizer(config: dict[str, Any]) -> SubwordFeaturizer:
    """Sub-word windows with the slot on each word's last piece (unless configured)."""
    return SubwordFeaturizer(with_label_position(config, "last"))


def make_model(config: dict[str, Any], featurizer: Featurizer) -> NagyModel:
    if not isinstance(featurizer, SubwordFeaturizer):
        raise TypeError(f"nagy needs an SubwordFeaturizer, got {type(featurizer).__name__}")
    return NagyModel(config, featurizer)


def load_featurizer(directory: Path, config: dict[str, Any]) -> SubwordFeaturizer:
    return SubwordFeaturizer.load(directory, config)


FAMILY = Family("nagy", make_featurizer, make_model, load_featurizer,
                model_keys=frozenset(ENCODER_KEYS | HEAD_KEYS))
