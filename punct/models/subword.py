"""What the sub-word tagger families (nagy, courtland) share.

Both read the windows of ``AutopunctFeaturizer`` with the prediction slot on the LAST
piece of each word (the piece next to the following mark; Nagy et al. 2021 mask every
other piece out of the loss). ``SubwordTagger`` holds the pretrained encoder and
everything around it that does not depend on the head:

- ``encoder_train_layers`` (-1 all, 0 frozen, k top layers) and
  ``freeze_encoder_epochs`` (the encoder is frozen during the first n epochs and then
  trained, Courtland et al.'s "top layers first" schedule, via ``on_epoch_start``);
- ``param_groups``: the encoder at ``model.encoder_lr`` (default: the optimizer's lr),
  the head at the optimizer's lr; frozen encoder parameters are in their group from
  the start so they train once unfrozen;
- a frozen encoder's states are computed once per training window and reused in later
  epochs (``EncoderStateCache``; dropped when the encoder starts training), which makes
  frozen-encoder epochs several times faster on CPU without changing any result;
- the loss over word slots only (``word_ids >= 0``) follows the label set
  (``punct.models.marks``): a softmax over O plus the marks with class weights for the
  exclusive sets (iwslt4, moro2, as in the papers), one sigmoid per mark for the
  multi-label full13; ``predict`` gives the probabilities and the raw logits (for the
  ``sum`` aggregation).
"""

from __future__ import annotations

import abc
from typing import Any

import torch
from torch import nn

from punct.errors import PunctInputError
from punct.labels import get_label_set
from punct.models.autopunct import (
    AutopunctFeaturizer,
    build_encoder,
    checked_options,
    configure_encoder_training,
    label_set_size,
)
from punct.models.base import Prediction, PunctModel
from punct.models.marks import LOSS_KEYS, MarkObjective

CACHE_FLOATS = 500_000_000  # 2 GB of float32 states at most
ENCODER_KEYS = {"encoder_train_layers", "freeze_encoder_epochs", "encoder_lr", "loss"}


def with_label_position(config: dict[str, Any], position: str = "last") -> dict[str, Any]:
    """``config`` with ``featurizer.label_position`` defaulting to ``position``."""
    featurizer = dict(config.get("featurizer") or {})
    featurizer.setdefault("label_position", position)
    return {**config, "featurizer": featurizer}


class EncoderStateCache:
    """Encoder states of training windows by their piece ids (valid while frozen)."""

    def __init__(self, max_floats: int = CACHE_FLOATS):
        self.max_floats = max_floats
        self.states: dict[bytes, torch.Tensor] = {}
        self.floats = 0

    def clear(self) -> None:
        self.states.clear()
        self.floats = 0

    def __call__(self, encoder: nn.Module, ids: torch.Tensor, mask: torch.Tensor
                 ) -> torch.Tensor:
        """States (B, T, H) of a batch, zeros at padding; only unseen windows are encoded."""
        lengths = mask.sum(dim=1).tolist()
        keys = [ids[b, :n].cpu().numpy().tobytes() for b, n in enumerate(lengths)]
        rows: dict[int, torch.Tensor] = {b: self.states[k] for b, k in enumerate(keys)
                                         if k in self.states}
        missing = [b for b in range(len(keys)) if b not in rows]
        if missing:
            with torch.no_grad():
                out = encoder(input_ids=ids[missing], attention_mask=mask[missing])
            for j, b in enumerate(missing):
                rows[b] = out.last_hidden_state[j, : lengths[b]].detach()
                if self.floats < self.max_floats:
                    self.states[keys[b]] = rows[b]
                    self.floats += rows[b].numel()
        hidden = rows[0].new_zeros(ids.shape[0], ids.shape[1], rows[0].shape[-1])
        for b, row in rows.items():
            hidden[b, : row.shape[0]] = row
        return hidden


class SubwordTagger(PunctModel, abc.ABC):
    """Pretrained encoder + a family-specific head producing per-position mark logits."""

    def __init__(self, config: dict[str, Any], featurizer: AutopunctFeaturizer,
                 head_keys: set[str]):
        super().__init__()
        self.mcfg = checked_options(config.get("model"), ENCODER_KEYS | head_keys, "model")
        _, self.n_labels = label_set_size(config)
        if self.n_labels != featurizer.n_labels:
            raise PunctInputError(
                f"label set has {self.n_labels} labels, featurizer {featurizer.n_labels}"
            )
        self.encoder = build_encoder(featurizer)
        self.hidden_size = int(self.encoder.config.hidden_size)
        self.train_layers = int(self.mcfg.get("encoder_train_layers", -1))
        self.freeze_epochs = int(self.mcfg.get("freeze_encoder_epochs", 0))
        if self.freeze_epochs < 0:
            raise PunctInputError("model.freeze_encoder_epochs must be >= 0")
        lr = self.mcfg.get("encoder_lr")
        self.encoder_lr = None if lr is None else float(lr)
        self.encoder_frozen = False
        self.state_cache = EncoderStateCache()
        self.set_encoder_frozen(self.freeze_epochs > 0)
        loss = checked_options(self.mcfg.get("loss"), set(LOSS_KEYS), "model.loss")
        self.objective = MarkObjective(get_label_set(config["label_set"]), loss,
                                       featurizer.label_counts, featurizer.n_words)

    # -- encoder schedule
    def set_encoder_frozen(self, frozen: bool) -> None:
        """Freeze the whole encoder, or apply ``encoder_train_layers``."""
        self.encoder_frozen = frozen
        self.state_cache.clear()
        configure_encoder_training(self.encoder, 0 if frozen else self.train_layers)
        self.train(self.training)

    def on_epoch_start(self, epoch: int) -> None:
        """Epochs 1..freeze_encoder_epochs train the head only, later epochs the encoder too."""
        frozen = epoch <= self.freeze_epochs
        if frozen != self.encoder_frozen:
            self.set_encoder_frozen(frozen)

    @property
    def encoder_trains(self) -> bool:
        return not self.encoder_frozen and self.train_layers != 0

    def train(self, mode: bool = True) -> SubwordTagger:
        """A frozen encoder stays in eval mode (no dropout noise on fixed features)."""
        super().train(mode)
        if not self.encoder_trains:
            self.encoder.eval()
        return self

    def param_groups(self, opts: dict[str, Any]) -> list[dict[str, Any]]:
        """Encoder group (``model.encoder_lr``) and head group (the optimizer's lr)."""
        encoder = list(self.encoder.parameters())
        ids = {id(p) for p in encoder}
        head = [p for p in self.parameters() if id(p) not in ids]
        enc_group: dict[str, Any] = {"params": encoder}
        if self.encoder_lr is not None:
            enc_group["lr"] = self.encoder_lr
        return [enc_group, {"params": head}]

    def encode(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Encoder states (B, T, H); without gradients (and cached while training) when
        the encoder is frozen."""
        if self.training and not self.encoder_trains:
            return self.state_cache(self.encoder, batch["input_ids"], batch["attention_mask"])
        with torch.set_grad_enabled(torch.is_grad_enabled() and self.encoder_trains):
            return self.encoder(
                input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
            ).last_hidden_state

    # -- head
    @abc.abstractmethod
    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Mark logits (B, T, P) for every position."""

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Mean mark loss over word slots; other positions carry no loss."""
        logits = self.forward(batch)
        mask = batch["word_ids"] >= 0
        if not bool(mask.any()):
            return logits.sum().float() * 0.0
        return self.objective.loss(logits[mask], batch["punct"][mask])

    @torch.no_grad()
    def predict(self, batch: dict[str, torch.Tensor]) -> Prediction:
        """Mark probabilities; raw logits in ``extra`` (``sum`` aggregation)."""
        logits = self.forward(batch).float()
        return Prediction(punct=self.objective.probs(logits), cap=None,
                          extra={"punct_logits": logits})


def activation(name: str | None) -> nn.Module:
    """``none``/None (identity), ``relu``, ``gelu`` or ``tanh``."""
    table: dict[str, type[nn.Module]] = {
        "none": nn.Identity, "relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh,
    }
    key = "none" if name is None else str(name).lower()
    if key not in table:
        raise PunctInputError(f"unknown activation {name!r}; expected one of {sorted(table)}")
    return table[key]()
