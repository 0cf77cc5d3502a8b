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
import contextlib
import contextvars
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from punct.config import Config, NoOptions
from punct.data.sequences import Window, WordSeq
from punct.registry import UnknownNameError, lookup
from punct.registry import names as registry_names

CHECKPOINT_WEIGHTS = contextvars.ContextVar("punct_checkpoint_weights", default=False)
"""True while a trained model is rebuilt whose checkpoint then replaces every weight."""


@contextlib.contextmanager
def weights_from_checkpoint() -> Iterator[None]:
    """While active, ``make_model`` skips pretrained weights (a checkpoint replaces them):
    an encoder is built from its saved config, quietly, with no pretrained copy needed."""
    token = CHECKPOINT_WEIGHTS.set(True)
    try:
        yield
    finally:
        CHECKPOINT_WEIGHTS.reset(token)


class WordTypes(Protocol):
    """The distinct word forms a plan looked its words up in (``PieceTable``)."""

    def type_flags(self, fact: Callable[[Sequence[str]], np.ndarray]) -> np.ndarray:
        """(types,) bool: ``fact`` of every type's form, computed once per type."""
        ...


class WindowPlan(abc.ABC):
    """The windows of one decoding run, collated into batches on request.

    ``lengths`` (W,): positions of each window (the engine batches them longest first);
    ``batch(rows)``: the collated model inputs of windows ``rows``, with ``word_ids``
    (B, T), -1 where nothing is predicted. A plan may leave the training targets out.
    """

    lengths: np.ndarray

    @abc.abstractmethod
    def batch(self, rows: np.ndarray) -> dict[str, torch.Tensor]:
        """The collated batch of windows ``rows`` (indices into ``lengths``)."""

    def word_types(self) -> tuple[np.ndarray, np.ndarray, WordTypes] | None:
        """Where the plan has looked up every word form: the words' global indices, their
        type ids, and the table of types (so that facts about a form are computed once
        per form); None otherwise."""
        return None

    def batches(self, order: np.ndarray, batch_size: int,
                inputs: Collection[str] | None = None
                ) -> Iterator[tuple[np.ndarray, dict[str, torch.Tensor]]]:
        """(rows, batch) for consecutive chunks of ``batch_size`` windows of ``order``;
        ``inputs``: the inputs wanted besides ``word_ids`` (a plan may leave the others
        out; None: all)."""
        for lo in range(0, len(order), batch_size):
            rows = order[lo:lo + batch_size]
            yield rows, self.batch(rows)


class ListPlan(WindowPlan):
    """A plan over ready-made windows: ``Featurizer.windows`` then ``collate`` per batch."""

    def __init__(self, windows: list[Window], collate: Callable[[list[Window]],
                                                                 dict[str, torch.Tensor]]):
        self.windows = windows
        self.collate = collate
        self.lengths = np.array([len(w["word_ids"]) for w in windows], dtype=np.int64)

    def batch(self, rows: np.ndarray) -> dict[str, torch.Tensor]:
        return self.collate([self.windows[i] for i in rows])


class Featurizer(abc.ABC):
    """Turns word sequences into model windows; fitted on the training set only."""

    def plan(self, seqs: list[WordSeq], window: int, stride: int) -> WindowPlan:
        """The decoding windows of ``seqs`` (default: ``windows`` + ``collate``); a
        featurizer may build them with array operations instead, to the same batches."""
        return ListPlan(self.windows(seqs, window, stride), self.collate)

    @abc.abstractmethod
    def fit(self, train: list[WordSeq]) -> None:
        """Build vocabularies/statistics from the training sequences."""

    def decode_statistics(self, seqs: list[WordSeq]) -> dict[str, Any]:
        """Figures of a decoded set that this featurizer computes anyway, for the set's
        ``decode.json`` (prosodic_pp: its PP slot statistics, ``pp``); none by default."""
        return {}

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
    def load(cls, directory: Path, config: Config) -> Featurizer:
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

    #: the batch inputs ``predict`` reads (the engine reads ``word_ids`` itself); None:
    #: any the featurizer makes. Decoding batches may hold only these.
    predict_inputs: tuple[str, ...] | None = None

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

    What the recipe needs for a family's systems is declared here, so the stage driver
    never names a family (it asks ``python -m punct.bin.system_info``):
    ``needs_streams`` the acoustic streams (``data/<set>/<stream>.scp``) every system of the
    family reads, besides those its config lists in ``featurizer.streams``;
    ``decodes_mixed_sets`` False when every utterance needs its audio (no ``<set>_mixed``
    decoding); ``pr_curves`` True when stage 6 draws precision/recall curves of its
    decoder probabilities. ``options`` and ``featurizer_options`` are the dataclasses of its
    ``model:`` and ``featurizer:`` sections (``punct.config.option`` fields; the second
    may be a function of the built model options returning the type), built and
    checked by ``punct.config.load_config`` with the file and line named;
    ``check_config(config)`` (optional) checks what spans sections, raising
    ``punct.config.OptionError``.
    """

    name: str
    make_featurizer: Callable[[Config], Featurizer]
    make_model: Callable[[Config, Featurizer], PunctModel]
    load_featurizer: Callable[[Path, Config], Featurizer]
    needs_streams: tuple[str, ...] = ()
    decodes_mixed_sets: bool = True
    pr_curves: bool = False
    options: type = NoOptions
    featurizer_options: type | Callable[[Any], type] = NoOptions
    check_config: Callable[[Config], None] | None = None


class Registry:
    """Name -> Family, looked up in the ``family`` table of :mod:`punct.registry`."""

    @staticmethod
    def get(name: str) -> Family:
        """The family registered as ``name`` (KeyError naming the known ones otherwise)."""
        try:
            family = lookup("family", name)
        except UnknownNameError as err:
            raise KeyError(str(err)) from None
        if not isinstance(family, Family):
            raise TypeError(f"registry entry family {name!r} is not a Family: {family!r}")
        return family

    @staticmethod
    def names() -> list[str]:
        """The registered family names, sorted."""
        return registry_names("family")
