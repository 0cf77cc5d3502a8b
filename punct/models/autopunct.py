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

from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from punct.config import Config, OptionError, option
from punct.errors import PunctInputError
from punct.models.base import Family, Featurizer
from punct.models.marks import check_loss_config
from punct.models.silence import SilenceOptions, make_silence, silence_options
from punct.models.subword.featurizer import SubwordFeaturizer, SubwordFeaturizerOptions
from punct.models.subword.heads import PunctCapModel, PunctCapOptions


@dataclass
class CustomBertOptions:
    """``model.custom_bert``: the small BERT trained from scratch (``true``: these
    defaults; null or false: none)."""

    layers: int = option(4, low=1)
    heads: int = option(4, low=1)
    ffn: int | None = option(None, low=1)  # None: 4 x hidden
    dropout: float = option(0.1, low=0.0, high=1.0)
    max_positions: int | None = option(None, low=1)  # None: the featurizer's longest window


@dataclass
class AutopunctOptions(PunctCapOptions):
    """``model:`` of autopunct: the encoder's, the heads' and the loss's options, the
    silence encoding and the custom BERT. After ``check``, ``silence`` is a
    ``SilenceOptions`` and ``custom_bert`` a ``CustomBertOptions`` or None."""

    silence: SilenceOptions | str | None = field(default_factory=SilenceOptions)
    custom_bert: CustomBertOptions | bool | None = None

    def check(self) -> None:
        super().check()
        try:
            self.silence = silence_options(self.silence)
            self.silence.check()
        except OptionError as err:
            raise OptionError(f"silence.{err.key}", err.message) from None
        if self.custom_bert is True:
            self.custom_bert = CustomBertOptions()
        elif self.custom_bert is False:
            self.custom_bert = None


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

    def __init__(self, config: Config, featurizer: SubwordFeaturizer):
        super().__init__(config, featurizer)
        opts: AutopunctOptions = config.model
        self.silence = make_silence(opts.silence, self.hidden_size)
        bert = opts.custom_bert  # a CustomBertOptions or None after AutopunctOptions.check
        self.custom_bert: CustomBert | None = None
        if bert:
            self.custom_bert = CustomBert(
                self.hidden_size, bert.layers, bert.heads, bert.ffn, bert.dropout,
                featurizer.max_window if bert.max_positions is None else bert.max_positions)
        self.add_heads(config, featurizer)

    def contextualise(self, emb: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Encoder output + silence encoding, through the custom BERT if any."""
        x = emb + self.silence(batch["pauses"]).to(emb.dtype)
        if self.custom_bert is not None:
            x = self.custom_bert(x, batch["attention_mask"])
        return x


# --------------------------------------------------------------------------- registry


def make_featurizer(config: Config) -> SubwordFeaturizer:
    """Featurizer for ``config`` (loads the tokenizer of ``featurizer.encoder``)."""
    return SubwordFeaturizer(config)


def make_model(config: Config, featurizer: Featurizer) -> AutopunctModel:
    """Model for ``config``; the encoder is the featurizer's."""
    if not isinstance(featurizer, SubwordFeaturizer):
        raise TypeError(f"autopunct needs a SubwordFeaturizer, got {type(featurizer).__name__}")
    return AutopunctModel(config, featurizer)


def load_featurizer(directory: Path, config: Config) -> SubwordFeaturizer:
    """Featurizer written by ``SubwordFeaturizer.save``."""
    return SubwordFeaturizer.load(directory, config)


FAMILY = Family("autopunct", make_featurizer, make_model, load_featurizer,
                options=AutopunctOptions, featurizer_options=SubwordFeaturizerOptions,
                check_config=check_loss_config)
