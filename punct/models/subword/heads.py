"""Heads over encoder states, and the punctuation + capitalisation model they make.

``PunctCapModel`` is AutoPunct's pair of heads (González-Docasal et al. 2021, 3.2.3),
used by autopunct and by unipunc with a pretrained lexical encoder:

- punctuation head: dense -> non-linearity -> dropout -> linear to P on the states ``x``
  the family computes from the encoder output (``contextualise``); the loss and the
  probabilities follow the label set (``punct.models.marks``: a softmax over O plus the
  marks for exclusive sets, one sigmoid per mark for full13);
- capitalisation head: dense -> non-linearity -> dropout -> linear to 3 (softmax, CE) on
  ``[p(prev word), p(this word), utterance-start flag, encoder embedding]``. Casing of
  word i depends on the mark AFTER word i-1 (a PERIOD/QUESTION/COLON there starts a
  sentence) and on the OPENING marks attached to word i itself (OPEN_QUOTE, OPEN_QUES,
  OPEN_EXCL precede it), so the head sees both. ``p(prev)`` is zero when the previous
  word is not in the window; the flag is 1 for the first word of an utterance; the
  embedding is the pretrained encoder's output, before anything the family adds;
- loss = punct_weight * mark loss + cap_weight * CE(cap), over word positions only.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from punct.config import Config, OptimizerSection, option
from punct.errors import PunctInputError
from punct.labels import CAP_LABELS, get_label_set
from punct.models.base import Prediction
from punct.models.marks import LossOptions, MarkObjective
from punct.models.subword.encoder import EncoderModel, EncoderOptions
from punct.models.subword.featurizer import SubwordFeaturizer

N_CAP = len(CAP_LABELS)
ACTIVATIONS: dict[str, type[nn.Module]] = {
    "none": nn.Identity, "relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh,
}
ACTIVATION_NAMES = tuple(ACTIVATIONS)


@dataclass
class HeadOptions:
    """``model.head``: dense -> non-linearity -> dropout -> linear."""

    hidden: int | None = option(None, low=0)  # None (or 0): the encoder's hidden size
    activation: str | None = option("gelu", choices=ACTIVATION_NAMES)  # None: identity
    dropout: float = option(0.1, low=0.0, high=1.0)


@dataclass
class CapHeadOptions(HeadOptions):
    """``model.cap_head``: the head's options, and whether the punctuation probabilities
    it reads pass gradients back (``detach_punct: false``)."""

    detach_punct: bool = False


@dataclass
class PunctCapLossOptions(LossOptions):
    """``model.loss`` of ``PunctCapModel``: the mark loss's options and the weights of the
    two losses."""

    punct_weight: float = 1.0
    cap_weight: float = 1.0


@dataclass
class PunctCapOptions(EncoderOptions):
    """The ``model:`` options of ``PunctCapModel`` (autopunct, unipunc's pretrained
    lexical encoder)."""

    head: HeadOptions = field(default_factory=HeadOptions)
    cap_head: CapHeadOptions = field(default_factory=CapHeadOptions)
    loss: PunctCapLossOptions = field(default_factory=PunctCapLossOptions)


def activation(name: str | None) -> nn.Module:
    """``none``/None (identity), ``relu``, ``gelu`` or ``tanh``."""
    key = "none" if name is None else str(name).lower()
    if key not in ACTIVATIONS:
        raise PunctInputError(
            f"unknown activation {name!r}; expected one of {sorted(ACTIVATIONS)}"
        )
    return ACTIVATIONS[key]()


class Head(nn.Sequential):
    """dense -> non-linearity -> dropout -> linear."""

    def __init__(self, d_in: int, d_hidden: int, d_out: int, activation_name: str,
                 dropout: float):
        super().__init__(
            nn.Linear(d_in, d_hidden),
            activation(activation_name),
            nn.Dropout(dropout),
            nn.Linear(d_hidden, d_out),
        )


class PunctCapModel(EncoderModel, abc.ABC):
    """Encoder -> the family's ``contextualise`` -> punctuation and capitalisation heads.

    A subclass builds its own modules after ``super().__init__`` and then calls
    ``add_heads`` (the construction order fixes the seeded initial weights).
    """

    def add_heads(self, config: Config, featurizer: SubwordFeaturizer) -> None:
        """The two heads and the loss, from ``model.head``, ``model.cap_head`` and
        ``model.loss`` (the fitted featurizer's mark counts weight rare marks)."""
        hidden = self.hidden_size
        opts: PunctCapOptions = config.model
        head, cap = opts.head, opts.cap_head
        self.punct_head = Head(hidden, head.hidden or hidden, self.n_labels, head.activation,
                               head.dropout)
        self.detach_punct = cap.detach_punct
        self.cap_head = Head(2 * self.n_labels + 1 + hidden, cap.hidden or hidden, N_CAP,
                             cap.activation, cap.dropout)
        self.punct_weight = opts.loss.punct_weight
        self.cap_weight = opts.loss.cap_weight
        self.objective = MarkObjective(get_label_set(config.label_set), opts.loss,
                                       featurizer.label_counts, featurizer.n_words)

    def param_groups(self, opts: OptimizerSection) -> list[dict[str, Any]]:
        """The trainable encoder parameters at ``model.encoder_lr`` (default: the
        optimizer's lr; per layer with ``model.encoder_lr_decay``), everything trained
        from scratch at the optimizer's."""
        ids = {id(p) for p in self.encoder.parameters()}
        rest = [p for p in self.parameters() if id(p) not in ids and p.requires_grad]
        return [*self.encoder_groups(opts.lr, trainable_only=True),
                {"params": rest}]

    @abc.abstractmethod
    def contextualise(self, emb: torch.Tensor, batch: dict[str, torch.Tensor]
                      ) -> torch.Tensor:
        """The punctuation head's input (B, T, H) from the encoder output ``emb``."""

    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Logits ``punct`` (B, T, P) and ``cap`` (B, T, 3), and the cap head's input."""
        emb = self.encode(batch)
        return self.heads(self.contextualise(emb, batch), emb, batch)

    def heads(self, x: torch.Tensor, emb: torch.Tensor, batch: dict[str, torch.Tensor]
              ) -> dict[str, torch.Tensor]:
        """Punctuation head on ``x``; capitalisation head on the punctuation output of the
        previous and current word, the utterance-start flag and the encoder output ``emb``."""
        punct_logits = self.punct_head(x)
        probs = self.objective.probs(punct_logits)
        if self.detach_punct:
            probs = probs.detach()
        prev_pos = batch["prev_pos"]
        has_prev = (prev_pos >= 0).unsqueeze(-1).to(probs.dtype)
        index = prev_pos.clamp(min=0).unsqueeze(-1).expand(-1, -1, probs.shape[-1])
        prev_probs = torch.gather(probs, 1, index) * has_prev
        start = batch["utt_start"].unsqueeze(-1).to(probs.dtype)
        cap_input = torch.cat([prev_probs, probs, start, emb.to(probs.dtype)], dim=-1)
        return {"punct": punct_logits, "cap": self.cap_head(cap_input), "cap_input": cap_input}

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Mark loss + CE over casing, on word positions (``word_ids >= 0``) only."""
        out = self.forward(batch)
        mask = batch["word_ids"] >= 0
        if not bool(mask.any()):
            return (out["punct"].sum() + out["cap"].sum()).float() * 0.0
        marks = self.objective.loss(out["punct"][mask], batch["punct"][mask])
        ce = F.cross_entropy(out["cap"][mask].float(), batch["cap"][mask].long())
        return self.punct_weight * marks + self.cap_weight * ce

    @torch.no_grad()
    def predict(self, batch: dict[str, torch.Tensor]) -> Prediction:
        """Mark probabilities and softmax casing probabilities per position (raw logits in
        ``extra`` for the ``sum`` aggregation)."""
        out = self.forward(batch)
        punct, cap = out["punct"].float(), out["cap"].float()
        return Prediction(
            punct=self.objective.probs(punct),
            cap=torch.softmax(cap, dim=-1),
            extra={"punct_logits": punct, "cap_logits": cap},
        )
