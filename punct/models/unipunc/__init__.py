"""The ``unipunc`` family: UniPunc (Zhu et al. 2022) for mixed audio / text-only corpora.

``model.lexical`` chooses the lexical encoder: ``pretrained`` (default; a BERT-like
encoder named by ``featurizer.encoder``, the paper's system) or ``brnn`` (punctuator2's
BiGRU, the paper's Table 3 graft). ``featurizer.streams`` names the one acoustic stream
(``fbank`` from ``punct.bin.make_fbank``, or ``w2v`` from its ``--wav2vec2`` option);
``featurizer.withhold_audio`` withholds the audio of a seeded share of the training
utterances. See docs/UNIPUNC.md.
"""

from __future__ import annotations

from pathlib import Path

from punct.config import Config
from punct.models.base import Family, Featurizer, PunctModel
from punct.models.unipunc.brnn_graft import UnipuncBRNN, UnipuncBRNNFeaturizer
from punct.models.unipunc.options import (
    LEXICAL,
    UnipuncBRNNFeaturizerOptions,
    UnipuncFeaturizerOptions,
    UnipuncOptions,
    check_config,
    featurizer_options,
)
from punct.models.unipunc.pretrained import UnipuncFeaturizer, UnipuncModel

__all__ = ["LEXICAL", "UnipuncBRNN", "UnipuncBRNNFeaturizer", "UnipuncBRNNFeaturizerOptions",
           "UnipuncFeaturizer", "UnipuncFeaturizerOptions", "UnipuncModel", "UnipuncOptions"]


def make_featurizer(config: Config) -> Featurizer:
    """The featurizer of the configured lexical encoder, with the acoustic stream."""
    if config.model.lexical == "brnn":
        return UnipuncBRNNFeaturizer.from_config(config)
    feat = UnipuncFeaturizer(config)
    feat._spans()  # featurizer.streams is required
    return feat


def make_model(config: Config, featurizer: Featurizer) -> PunctModel:
    """UniPunc over the featurizer's lexical encoder (fitted featurizer: audio dims known)."""
    if config.model.lexical == "brnn":
        if not isinstance(featurizer, UnipuncBRNNFeaturizer):
            raise TypeError("unipunc with lexical: brnn needs a UnipuncBRNNFeaturizer")
        return UnipuncBRNN(featurizer, config.model)
    if not isinstance(featurizer, UnipuncFeaturizer):
        raise TypeError(f"unipunc needs a UnipuncFeaturizer, got {type(featurizer).__name__}")
    return UnipuncModel(config, featurizer)


def load_featurizer(directory: Path, config: Config) -> Featurizer:
    """A featurizer written by ``save``."""
    if config.model.lexical == "brnn":
        return UnipuncBRNNFeaturizer.load(directory, config)
    return UnipuncFeaturizer.load(directory, config)


FAMILY = Family("unipunc", make_featurizer, make_model, load_featurizer,
                options=UnipuncOptions, featurizer_options=featurizer_options,
                check_config=check_config)
