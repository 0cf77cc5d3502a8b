"""The phrase-sequence network of Moró & Szaszák (2017, 3.2) and the family registration.

BiLSTM(20) -> dropout 0.25 -> BiLSTM(40) -> dropout 0.3 -> linear -> softmax over
O + the marks of the label set, read at the target slot (position W-2 of a window of W
phrase slots). Trained with class-weighted cross-entropy (weights from the featurizer).
``predict`` puts the mark probabilities of the target slot at output position 0 (the
word matched to the slot) and zeros at the other positions (uncovered words -> O).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from punct.config import Config, option
from punct.models.base import Family, Featurizer, Prediction, PunctModel
from punct.models.prosodic_pp.featurizer import (
    IGNORE,
    STREAM,
    PPFeaturizer,
    PPFeaturizerOptions,
)


@dataclass
class PPOptions:
    """``model:`` of prosodic_pp: the two BiLSTM layers (the paper's sizes)."""

    hidden1: int = option(20, low=1)
    hidden2: int = option(40, low=1)
    dropout1: float = option(0.25, low=0.0, high=1.0)
    dropout2: float = option(0.3, low=0.0, high=1.0)


class PhraseSequenceNet(PunctModel):
    """Two BiLSTM layers over the phrase-slot features of a window."""

    def __init__(self, in_dim: int, n_marks: int, class_weights: torch.Tensor,
                 hidden1: int = 20, hidden2: int = 40, dropout1: float = 0.25,
                 dropout2: float = 0.3):
        super().__init__()
        self.lstm1 = nn.LSTM(max(in_dim, 1), hidden1, batch_first=True, bidirectional=True)
        self.drop1 = nn.Dropout(dropout1)
        self.lstm2 = nn.LSTM(2 * hidden1, hidden2, batch_first=True, bidirectional=True)
        self.drop2 = nn.Dropout(dropout2)
        self.out = nn.Linear(2 * hidden2, n_marks + 1)
        self.in_dim = in_dim
        self.register_buffer("class_weights", class_weights.float().clone())

    def logits(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """(B, 1 + P) logits at the target slot (position W-2)."""
        x = batch["feats"].float()
        if self.in_dim == 0:  # no feature stream selected: a constant input
            x = x.new_zeros(*x.shape[:2], 1)
        h, _ = self.lstm1(x)
        h, _ = self.lstm2(self.drop1(h))
        return self.out(self.drop2(h[:, x.shape[1] - 2]))

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        target = batch["target"]
        if bool((target == IGNORE).all()):
            return self.out.weight.sum() * 0.0
        return nn.functional.cross_entropy(self.logits(batch), target,
                                           weight=self.class_weights, ignore_index=IGNORE)

    def predict(self, batch: dict[str, torch.Tensor]) -> Prediction:
        probs = torch.softmax(self.logits(batch).float(), dim=-1)  # (B, 1 + P)
        b, t = batch["word_ids"].shape
        out = probs.new_zeros(b, t, probs.shape[1] - 1)
        out[:, 0] = probs[:, 1:]
        return Prediction(out, None, {"slot_probs": probs})

    def load_init(self, state: dict[str, torch.Tensor]) -> None:
        """``init_from`` shares the PP models; the network weights are loaded only when they
        fit (same feature groups), e.g. to adapt a trained network to new data."""
        own = self.state_dict()
        if set(state) == set(own) and all(state[k].shape == own[k].shape for k in own):
            self.load_state_dict(state)


def make_model(config: Config, featurizer: Featurizer) -> PunctModel:
    if not isinstance(featurizer, PPFeaturizer):
        raise TypeError("the prosodic_pp family needs a PPFeaturizer")
    opts: PPOptions = config.model
    return PhraseSequenceNet(featurizer.dim, len(featurizer.labels),
                             torch.as_tensor(featurizer.class_weights),
                             opts.hidden1, opts.hidden2, opts.dropout1, opts.dropout2)


FAMILY = Family(
    name="prosodic_pp",
    make_featurizer=PPFeaturizer.from_config,
    make_model=make_model,
    load_featurizer=lambda directory, config: PPFeaturizer.load(directory, config),
    # PP slots come from the prosody of every word: no utterance without audio.
    needs_streams=(STREAM,),
    decodes_mixed_sets=False,
    pr_curves=True,
    options=PPOptions,
    featurizer_options=PPFeaturizerOptions,
)
