"""Courtland, Faulkner and McElvain (2020): predict every token of a window at once.

- Input: ``SubwordFeaturizer`` windows (slot on each word's LAST piece), every window
  padded to exactly ``train.window`` positions, because the window layer below has a
  fixed input size; decoding must use the same window (``decode.window`` equal to
  ``train.window``, or unset), any other window is an error.
- Head (paper 3, "two additional linear layers"): a per-token linear layer
  H -> ``hidden`` (1500, shared across positions; padding positions zeroed); the
  window's T hidden vectors concatenated into one (T * hidden) vector; batch
  normalisation and dropout (0.2) "prior to predicting"; the window layer, a linear
  layer from the concatenation to the T * P activations (the paper's final classifier
  of size |classes| * window), so all tokens of the window interact. Its bias starts at
  the log-odds of each mark in the training set (prior initialisation, not in the paper)
  so that training does not spend its first epochs learning that marks are rare. Word
  slots carry the loss; other positions are masked.
- Training (paper 3): LookAhead (sync rate 0.5, period 6) over RAdam lr 1e-5, no weight
  decay (``train.optimizer.name: lookahead_radam``); the top layers are trained with the
  encoder frozen (``model.freeze_encoder_epochs``), then the whole network.
- Decoding: activations (logits) summed over the overlapping windows, then the softmax
  (exclusive label sets) or the sigmoid (full13) (``decode.aggregate: sum``).

Option ``model.token_residual`` (not in the paper, off by default): a classifier shared
by all positions adds its logits to the window layer's, and the window layer starts at
zero. The window layer's weights are separate for each of the T positions, so each of
them learns from the words that fall there (1/T of the data when training windows do
not overlap; the paper slides one token at a time, which costs T times the compute);
the shared path learns from every word, and the window layer then only has to learn
what the neighbours add. ``model.window_lr`` gives the window layer its own learning
rate (e.g. the paper's 1e-5 while the rest of the head trains at 1e-3: with T x hidden
inputs per output, an adaptive optimizer at 1e-3 moves each of its weights by about the
learning rate per step, and the window layer then fits noise).

Deviations: the multi-label full13 set uses one sigmoid per mark (see
``punct.models.marks``); the paper picks the best frozen-stage model by validation loss
before unfreezing, here one run switches at a fixed epoch; a training batch of one
window normalises with the running statistics (batch statistics of one sample are
undefined).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from punct.config import Config, OptimizerSection, OptionError, option
from punct.errors import PunctInputError
from punct.models.base import Family, Featurizer, Window, WindowPlan, WordSeq
from punct.models.marks import check_loss_config
from punct.models.subword.featurizer import LastPieceFeaturizerOptions, SubwordFeaturizer
from punct.models.subword.heads import ACTIVATION_NAMES, activation
from punct.models.subword.tagger import SubwordTagger, TaggerOptions


@dataclass
class CourtlandOptions(TaggerOptions):
    """``model:`` of courtland: the encoder's and the loss's options, and the head's (see
    the module docstring)."""

    hidden: int = option(1500, low=1)  # the per-token layer's width
    hidden_activation: str | None = option("none", choices=ACTIVATION_NAMES)
    dropout: float = option(0.2, low=0.0, high=1.0)
    token_residual: bool = False  # a classifier shared by all positions adds its logits
    window_lr: float | None = option(None, low=0.0)  # None: the head's learning rate


def check_config(config: Config) -> None:
    """The loss options for the label set; decoding uses the training window."""
    check_loss_config(config)
    window, _ = config.decode_window()
    if window != config.train.window:
        raise OptionError("decode.window", f"{window} differs from train.window="
                                           f"{config.train.window}; the window layer only "
                                           "takes the training length (leave decode.window "
                                           "unset)")


class CourtlandFeaturizer(SubwordFeaturizer):
    """Sub-word windows, each padded to the fixed ``train.window`` length."""

    def __init__(self, config: Config, tokenizer: Any | None = None):
        super().__init__(config, tokenizer)
        self.fixed_window = config.train.window

    def _require(self, window: int) -> int:
        if window != self.fixed_window:
            raise PunctInputError(
                f"courtland predicts fixed windows of train.window={self.fixed_window} "
                f"sub-word pieces; a window of {window} was asked for (set decode.window "
                f"to {self.fixed_window} or leave it unset)"
            )
        return window

    def windows(self, seqs: list[WordSeq], window: int, stride: int) -> list[Window]:
        """As ``SubwordFeaturizer.windows``; ``window`` must be the fixed length."""
        return super().windows(seqs, self._require(window), stride)

    def plan(self, seqs: list[WordSeq], window: int, stride: int,
             width: int | None = None) -> WindowPlan:
        """As ``SubwordFeaturizer.plan``, every batch padded to the fixed length."""
        fixed = self._require(window)
        return super().plan(seqs, fixed, stride, fixed)

    def collate(self, windows: list[Window]) -> dict[str, torch.Tensor]:
        """Stack windows, right-padded to the fixed length."""
        batch = super().collate(windows)
        length = self.fixed_window
        extra = length - batch["input_ids"].shape[1]
        if extra < 0:
            raise PunctInputError(f"a window of {batch['input_ids'].shape[1]} positions "
                                  f"exceeds train.window={length}")
        if extra == 0:
            return batch
        pad = {"input_ids": self.tokenizer.pad_token_id, "word_ids": -1, "pauses": np.nan,
               "punct": 0.0, "cap": 0, "prev_pos": -1, "utt_start": 0.0,
               "attention_mask": 0}
        out = {}
        for key, value in batch.items():
            filler = value.new_full((value.shape[0], extra, *value.shape[2:]), pad[key])
            out[key] = torch.cat([value, filler], dim=1)
        return out

    @classmethod
    def load(cls, directory: Path, config: Config) -> CourtlandFeaturizer:
        """Rebuild a saved featurizer; the fixed window comes from ``config``."""
        feat = super().load(directory, config)
        assert isinstance(feat, CourtlandFeaturizer)
        return feat


def prior_logits(featurizer: SubwordFeaturizer, exclusive: bool = False) -> torch.Tensor:
    """Training-set log-odds of each mark per word (zeros before ``fit``): against no mark
    for an exclusive label set (O's logit is 0), against its absence otherwise."""
    if featurizer.n_words == 0:
        return torch.zeros(featurizer.n_labels)
    rate = np.clip(featurizer.label_counts / featurizer.n_words, 1e-4, 0.5)
    other = max(1.0 - float(rate.sum()), 1e-4) if exclusive else 1.0 - rate
    return torch.tensor(np.log(rate) - np.log(other), dtype=torch.float32)


class CourtlandModel(SubwordTagger):
    """Encoder + per-token linear + concatenation + batch norm + dropout + window linear."""

    def __init__(self, config: Config, featurizer: CourtlandFeaturizer):
        super().__init__(config, featurizer)
        opts: CourtlandOptions = config.model
        self.window = int(featurizer.fixed_window)
        hidden = opts.hidden
        self.token_layer = nn.Linear(self.hidden_size, hidden)
        self.token_activation = activation(opts.hidden_activation)
        self.norm = nn.BatchNorm1d(self.window * hidden)
        self.dropout = nn.Dropout(opts.dropout)
        self.window_layer = nn.Linear(self.window * hidden, self.window * self.n_labels)
        self.token_residual = opts.token_residual
        self.window_lr = opts.window_lr
        with torch.no_grad():
            prior = prior_logits(featurizer, self.objective.exclusive)
            self.window_layer.bias.copy_(prior.repeat(self.window))
            if self.token_residual:
                self.window_layer.weight.zero_()
        # The per-token path (``model.token_residual``): one classifier shared by all
        # positions, so every training word teaches it, whatever its place in the window.
        self.token_classifier = (nn.Linear(hidden, self.n_labels, bias=False)
                                 if self.token_residual else None)

    def param_groups(self, opts: OptimizerSection) -> list[dict[str, Any]]:
        """The encoder and head groups, and the window layer in its own group when
        ``model.window_lr`` is set."""
        groups = super().param_groups(opts)
        if self.window_lr is None:
            return groups
        window = {id(p) for p in self.window_layer.parameters()}
        head = groups[-1]
        head["params"] = [p for p in head["params"] if id(p) not in window]
        return [*groups, {"params": list(self.window_layer.parameters()),
                          "lr": self.window_lr}]

    def _normalise(self, x: torch.Tensor) -> torch.Tensor:
        if self.training and x.shape[0] == 1:  # no batch statistics from one window
            return F.batch_norm(x, self.norm.running_mean, self.norm.running_var,
                                self.norm.weight, self.norm.bias, False, 0.0, self.norm.eps)
        return self.norm(x)

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Mark logits (B, T, P) for all T positions of each window."""
        size, length = batch["input_ids"].shape
        if length != self.window:
            raise PunctInputError(f"courtland expects windows of {self.window} positions, "
                                  f"got {length}")
        states = self.token_activation(self.token_layer(self.encode(batch)))
        states = states * batch["attention_mask"].unsqueeze(-1).to(states.dtype)
        joined = self.dropout(self._normalise(states.reshape(size, -1)))
        logits = self.window_layer(joined).view(size, self.window, self.n_labels)
        if self.token_classifier is not None:
            logits = logits + self.token_classifier(joined.view(size, self.window, -1))
        return logits


def make_featurizer(config: Config) -> CourtlandFeaturizer:
    """Fixed-length windows, slot on each word's last piece (unless configured)."""
    return CourtlandFeaturizer(config)


def make_model(config: Config, featurizer: Featurizer) -> CourtlandModel:
    """The model (``check_config`` has made sure that decoding uses the training window)."""
    if not isinstance(featurizer, CourtlandFeaturizer):
        raise TypeError(f"courtland needs a CourtlandFeaturizer, got {type(featurizer).__name__}")
    return CourtlandModel(config, featurizer)


def load_featurizer(directory: Path, config: Config) -> CourtlandFeaturizer:
    return CourtlandFeaturizer.load(directory, config)


FAMILY = Family("courtland", make_featurizer, make_model, load_featurizer,
                options=CourtlandOptions, featurizer_options=LastPieceFeaturizerOptions,
                check_config=check_config)
