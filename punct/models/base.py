"""The contract shared by every model family: input sequences, featurizers, models.

A model family is a pair (Featurizer, PunctModel) registered under a name
(``brnn``, ``autopunct``, ...). The trainer and the decoder only use what is
declared here, so every family trains, decodes and scores the same way.

Flow: word table -> ``WordSeq`` (one per utterance) -> ``Featurizer.windows`` ->
``Featurizer.collate`` -> batch dict of tensors -> ``PunctModel.loss`` (training) or
``PunctModel.predict`` (decoding) -> per-position probabilities -> the decoder
aggregates positions with the same ``word_ids`` (global word index) over windows.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn


@dataclass
class WordSeq:
    """One utterance as model input and targets.

    ``pauses`` holds seconds (NaN where unknown); ``punct`` a multi-hot matrix over the
    label set in use (N, P); ``cap`` indices into CAP_LABELS (N,). Targets are zeros
    at inference time. ``offset`` is the global index of the first word (set by
    the caller so that windows of many utterances can be aggregated together).
    """

    utt_id: str
    words: list[str]
    pauses: np.ndarray
    punct: np.ndarray
    cap: np.ndarray
    offset: int = 0
    lang: str | None = None
    feats: dict[str, np.ndarray] = field(default_factory=dict)
    times: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.words)


Window = dict[str, np.ndarray]
"""One training or decoding window. Must contain ``word_ids`` (T,) int64: the
global word index predicted at each position, or -1 where nothing is predicted
(padding, non-initial sub-tokens, special tokens)."""


class Featurizer(abc.ABC):
    """Turns word sequences into model windows; fitted on the training set only."""

    @abc.abstractmethod
    def fit(self, train: list[WordSeq]) -> None:
        """Build vocabularies/statistics from the training sequences."""

    @abc.abstractmethod
    def windows(self, seqs: list[WordSeq], window: int, stride: int) -> list[Window]:
        """Cut each sequence into windows of ``window`` positions, ``stride`` apart."""

    @abc.abstractmethod
    def collate(self, windows: list[Window]) -> dict[str, torch.Tensor]:
        """Pad and stack windows into a batch; keeps ``word_ids`` (B, T), -1 padded."""

    @abc.abstractmethod
    def save(self, directory: Path) -> None:
        """Write everything needed to rebuild this featurizer into ``directory``."""

    @classmethod
    @abc.abstractmethod
    def load(cls, directory: Path, config: dict[str, Any]) -> Featurizer:
        """Rebuild a featurizer written by ``save``."""


@dataclass
class Prediction:
    """Per-position probabilities of one batch.

    ``punct``: (B, T, P) marginal probability of each mark; ``cap``: (B, T, 3) or None
    for families that do not model capitalisation.
    """

    punct: torch.Tensor
    cap: torch.Tensor | None = None
    extra: dict[str, torch.Tensor] = field(default_factory=dict)


class PunctModel(nn.Module, abc.ABC):
    """A trainable model of one family."""

    @abc.abstractmethod
    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Scalar training loss of a collated batch (targets inside the batch)."""

    @abc.abstractmethod
    def predict(self, batch: dict[str, torch.Tensor]) -> Prediction:
        """Probabilities for every position of a collated batch."""


@dataclass
class Family:
    """A registered model family.

    Every callable receives the full resolved experiment config (``family``,
    ``label_set``, ``featurizer``, ``model``, ``train``, ``decode``, ``init_from``; with
    ``init_from`` the trainer adds ``init_config``, the resolved config of that
    experiment). Optional model hook: ``load_init(state_dict)``; when present the trainer
    calls it with the ``init_from`` experiment's ``best.pt`` weights (e.g. load and
    freeze a stage-1 model), otherwise it loads them with ``strict=False``.
    """

    name: str
    make_featurizer: Callable[[dict[str, Any]], Featurizer]
    make_model: Callable[[dict[str, Any], Featurizer], PunctModel]
    load_featurizer: Callable[[Path, dict[str, Any]], Featurizer]


class Registry:
    """Name -> Family. Families register themselves on import of punct.models."""

    families: ClassVar[dict[str, Family]] = {}

    @classmethod
    def register(cls, family: Family) -> None:
        cls.families[family.name] = family

    @classmethod
    def get(cls, name: str) -> Family:
        if name not in cls.families:
            known = ", ".join(sorted(cls.families)) or "none"
            raise KeyError(f"unknown model family {name!r} (known: {known})")
        return cls.families[name]
