"""The ``model:`` and ``featurizer:`` options of the ``unipunc`` family.

``model.lexical`` picks the lexical encoder, and with it which other keys apply: the
pretrained encoder's (``encoder_*``, ``head``, ``cap_head``, ``loss``: AutoPunct's) or the
BRNN's (``hidden``, ``embedding``, ``checkpoint_attention``, ``graft_lr``); ``acoustic``
and ``bootstrapper`` apply to both. One dataclass holds them all (a section's keys are
one type); ``UnipuncOptions.check`` refuses a key of the other lexical encoder set away
from its default. The featurizer section is the lexical featurizer's options plus the
audio options (``AudioOptions``), a type chosen by ``model.lexical``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from punct.config import Config, OptionError, option
from punct.models.brnn import BRNNFeaturizerOptions
from punct.models.marks import check_loss_config
from punct.models.subword.featurizer import SubwordFeaturizerOptions
from punct.models.subword.heads import PunctCapOptions
from punct.models.unipunc.audio import AudioOptions
from punct.models.unipunc.layers import AcousticOptions, BootstrapperOptions

LEXICAL = ("pretrained", "brnn")
PRETRAINED_KEYS = ("encoder_train_layers", "encoder_lr", "encoder_lr_decay", "head",
                   "cap_head", "loss")
BRNN_KEYS = ("hidden", "embedding", "checkpoint_attention", "graft_lr")
AUTOPUNCT_ONLY = ("silence", "custom_bert")  # accepted when empty, as before


@dataclass
class UnipuncOptions(PunctCapOptions):
    """``model:`` of unipunc (see the module docstring)."""

    lexical: str = option("pretrained", choices=LEXICAL)
    acoustic: AcousticOptions = field(default_factory=AcousticOptions)
    bootstrapper: BootstrapperOptions = field(default_factory=BootstrapperOptions)
    # lexical: brnn (punctuator2's embedding + BiGRU; BRNNText's defaults)
    hidden: int = option(256, low=1)
    embedding: int | None = option(None, low=1)  # None: hidden
    checkpoint_attention: bool = True
    graft_lr: float | None = option(None, low=0.0)  # assistant + bootstrapper (None: lr)
    # AutoPunct's options: unipunc takes its acoustic information from the assistant
    silence: Any = None
    custom_bert: Any = None

    def check(self) -> None:
        super().check()
        for key in AUTOPUNCT_ONLY:
            if getattr(self, key):
                raise OptionError(key, "an AutoPunct option; unipunc takes its acoustic "
                                       "information from the acoustic assistant")
        own, other = ((PRETRAINED_KEYS, BRNN_KEYS) if self.lexical == "pretrained"
                      else (BRNN_KEYS, PRETRAINED_KEYS))
        default = UnipuncOptions()
        for key in other:
            if getattr(self, key) != getattr(default, key):
                raise OptionError(key, f"not an option of lexical: {self.lexical}; its "
                                       f"options: {', '.join(sorted(own))}, acoustic, "
                                       "bootstrapper")


@dataclass
class UnipuncFeaturizerOptions(SubwordFeaturizerOptions, AudioOptions):
    """``featurizer:`` of unipunc with the pretrained lexical encoder."""

    def check(self) -> None:
        check_streams(self)


@dataclass
class UnipuncBRNNFeaturizerOptions(BRNNFeaturizerOptions, AudioOptions):
    """``featurizer:`` of unipunc with the BRNN lexical encoder."""

    def check(self) -> None:
        BRNNFeaturizerOptions.check(self)
        check_streams(self)


def check_streams(opts: AudioOptions) -> None:
    """The audio options, ``streams`` required."""
    if opts.streams is None:
        raise OptionError("streams", "unipunc needs exactly one acoustic stream (e.g. "
                                     "[fbank] or [w2v])")
    AudioOptions.check(opts)


def featurizer_options(model: UnipuncOptions) -> type:
    """The ``featurizer:`` type of the lexical encoder."""
    return UnipuncBRNNFeaturizerOptions if model.lexical == "brnn" else UnipuncFeaturizerOptions


def check_config(config: Config) -> None:
    """The loss options for the label set (pretrained lexical encoder)."""
    if config.model.lexical == "pretrained":
        check_loss_config(config)

