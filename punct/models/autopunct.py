"""AutoPunct (González-Docasal et al. 2021): pretrained encoder + silences + custom BERT.

Architecture (every part switchable by config; Table 4's S/D/f/B rows are 8 configs):

1. A pretrained BERT-like encoder reads the sub-word pieces of the lower-cased words
   (``punct.models.subword.featurizer``). Each word is represented by its FIRST piece (as
   in BERT's token classification): the first piece is the one that sees the word's
   beginning and, through attention, the rest of the word; predicting there keeps one
   slot per word. Other pieces, [CLS], [SEP] and padding are excluded from the loss.
2. A silence encoding (``punct.models.silence``: none | continuous | discrete with
   Gaussian or uniform averaging) is added to the word embeddings.
3. Optionally a custom BERT (4 layers x 4 heads, from scratch) over the sums.
4. The punctuation and capitalisation heads and their loss
   (``punct.models.subword.heads.PunctCapModel``); the capitalisation head's encoder
   embedding is the output before silences are added (paper 3.2.3).

The encoder's training options (``encoder_train_layers``, ``encoder_lr``) and the cache
of frozen states are ``punct.models.subword.encoder``'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from punct.errors import PunctInputError
from punct.models.base import Family, Featurizer
from punct.models.options import checked_options
from punct.models.silence import make_silence
from punct.models.subword.featurizer import SubwordFeaturizer
from punct.models.subword.heads import PUNCT_CAP_KEYS, PunctCapModel

MODEL_KEYS = PUNCT_CAP_KEYS | {"silence", "custom_bert"}
BERT_KEYS = {"layers", "heads", "ffn", "dropout", "max_positions"}


class CustomBert(nn.Module):
    """A small BERT trained from scratch over the combined word+silence vectors.

    BERT geometry: learned positions + LayerNorm + dropout, then post-LN Transformer
    layers with GELU and a 4x feed-forward layer.
    """

    def __init__(
        self,
        hidden: int,
        layers: int = 4,
        heads: int = 4,
        ffn: int | None = None,
        dropout: float = 0.1,
        max_positions: int = 512,
    ):
        super().__init__()
        if hidden % heads:
            raise PunctInputError(f"custom_bert.heads={heads} does not divide hidden={hidden}")
        self.positions = nn.Embedding(max_positions, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(
            hidden,
            heads,
            dim_feedforward=ffn or 4 * hidden,
            dropout=dropout,
            activation="gelu",
            batch_first=True,
            norm_first=False,
        )
        self.layers = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        nn.init.normal_(self.positions.weight, std=0.02)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(x.shape[1], device=x.device)
        x = self.dropout(self.norm(x + self.positions(pos).to(x.dtype)))
        return self.layers(x, src_key_padding_mask=attention_mask == 0)


class AutopunctModel(PunctCapModel):
    """Encoder + silences + optional custom BERT + punctuation and capitalisation heads."""

    def __init__(self, config: dict[str, Any], featurizer: SubwordFeaturizer):
        super().__init__(config, featurizer, MODEL_KEYS)
        self.silence = make_silence(self.mcfg.get("silence"), self.hidden_size)
        bert = self.mcfg.get("custom_bert")
        self.custom_bert: CustomBert | None = None
        if bert:
            bcfg = checked_options({} if bert is True else bert, BERT_KEYS, "model.custom_bert")
            bcfg.setdefault("max_positions", featurizer.max_window)
            self.custom_bert = CustomBert(self.hidden_size, **bcfg)
        self.add_heads(config, featurizer)

    def contextualise(self, emb: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Encoder output + silence encoding, through the custom BERT if any."""
        x = emb + self.silence(batch["pauses"]).to(emb.dtype)
        if self.custom_bert is not None:
            x = self.custom_bert(x, batch["attention_mask"])
        return x


# --------------------------------------------------------------------------- registry


def make_featurizer(config: dict[str, Any]) -> SubwordFeaturizer:
    """Featurizer for ``config`` (loads the tokenizer of ``featurizer.encoder``)."""
    return SubwordFeaturizer(config)


def make_model(config: dict[str, Any], featurizer: Featurizer) -> AutopunctModel:
    """Model for ``config``; the encoder is the featurizer's."""
    if not isinstance(featurizer, SubwordFeaturizer):
        raise TypeError(f"autopunct needs a SubwordFeaturizer, got {type(featurizer).__name__}")
    return AutopunctModel(config, featurizer)


def load_featurizer(directory: Path, config: dict[str, Any]) -> SubwordFeaturizer:
    """Featurizer written by ``SubwordFeaturizer.save``."""
    return SubwordFeaturizer.load(directory, config)


FAMILY = Family("autopunct", make_featurizer, make_model, load_featurizer,
                model_keys=frozenset(MODEL_KEYS))
