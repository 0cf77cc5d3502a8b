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

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from punct.config import Config, option
from punct.models.base import Family, Featurizer
from punct.models.marks import check_loss_config
from punct.models.subword.featurizer import LastPieceFeaturizerOptions, SubwordFeaturizer
from punct.models.subword.heads import ACTIVATION_NAMES, activation
from punct.models.subword.tagger import SubwordTagger, TaggerOptions


@dataclass
class NagyOptions(TaggerOptions):
    """``model:`` of nagy: the encoder's and the loss's options, and the head's (paper 3.3)."""

    hidden: int = option(1568, low=1)
    dropout: float = option(0.2, low=0.0, high=1.0)  # before and after the first linear
    activation: str | None = option("relu", choices=ACTIVATION_NAMES)


class NagyModel(SubwordTagger):
    """Encoder + dropout/linear/ReLU/dropout/linear per position."""

    def __init__(self, config: Config, featurizer: SubwordFeaturizer):
        super().__init__(config, featurizer)
        opts: NagyOptions = config.model
        self.head = nn.Sequential(
            nn.Dropout(opts.dropout),
            nn.Linear(self.hidden_size, opts.hidden),
            activation(opts.activation),
            nn.Dropout(opts.dropout),
            nn.Linear(opts.hidden, self.n_labels),
        )

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Mark logits (B, T, P)."""
        return self.head(self.encode(batch))


def make_featurizer(config: Config) -> SubwordFeaturizer:
    """Sub-word windows with the slot on each word's last piece (unless configured)."""
    return SubwordFeaturizer(config)


def make_model(config: Config, featurizer: Featurizer) -> NagyModel:
    if not isinstance(featurizer, SubwordFeaturizer):
        raise TypeError(f"nagy needs an SubwordFeaturizer, got {type(featurizer).__name__}")
    return NagyModel(config, featurizer)


def load_featurizer(directory: Path, config: Config) -> SubwordFeaturizer:
    return SubwordFeaturizer.load(directory, config)


FAMILY = Family("nagy", make_featurizer, make_model, load_featurizer,
                options=NagyOptions, featurizer_options=LastPieceFeaturizerOptions,
                check_config=check_loss_config)
