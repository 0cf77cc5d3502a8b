"""The pretrained encoder inside a model: building it, which layers train, cached states.

``EncoderModel`` is the base of every family built on a pretrained BERT-like encoder:

- ``build_encoder``: the pretrained weights, or, when a trained checkpoint is loaded
  (``punct.models.base.weights_from_checkpoint``) and the featurizer saved the encoder's
  ``config.json``, the architecture with random weights that the checkpoint replaces;
- ``model.encoder_train_layers`` (-1 all, 0 frozen, k top layers) and
  ``model.freeze_encoder_epochs`` (the encoder is frozen during the first n epochs and
  then trained, via ``on_epoch_start``; only families that list the key accept it);
- ``model.encoder_lr``: the encoder's learning rate (default: the optimizer's), and
  ``model.encoder_lr_decay`` d (default 1): layer-wise decay, the top layer at that rate,
  each layer below at d times the one above, the embeddings at d^L (``encoder_groups``);
- a frozen encoder stays in eval mode, and its states are computed once per training
  window and reused in later epochs (``EncoderStateCache``, dropped when the encoder
  starts training), and so are those of the dev windows the trainer evaluates each
  epoch (``cache_eval_states``): frozen-encoder epochs are several times faster on CPU
  and no result changes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from punct.config import Config, OptionError, option
from punct.errors import MissingDataError, PunctInputError
from punct.labels import get_label_set
from punct.models.base import CHECKPOINT_WEIGHTS, PunctModel
from punct.models.encoders import encoder_from_config, load_encoder
from punct.models.subword.featurizer import SubwordFeaturizer

LOG = logging.getLogger(__name__)
CACHE_FLOATS = 500_000_000  # 2 GB of float32 states at most
LAYER_PATHS = ("encoder.layer", "transformer.layer", "layers", "encoder.layers")


@dataclass
class EncoderOptions:
    """The ``model:`` options of the pretrained encoder (see the module docstring)."""

    encoder_train_layers: int = option(-1, low=-1)  # -1 all, 0 frozen, k top layers
    encoder_lr: float | None = option(None, low=0.0)  # None: the optimizer's lr
    encoder_lr_decay: float = option(1.0, high=1.0)  # layer-wise decay, in (0, 1]

    @property
    def freeze_epochs(self) -> int:
        """Epochs with the encoder frozen (only families with ``freeze_encoder_epochs``)."""
        return 0

    def check(self) -> None:
        if not 0.0 < self.encoder_lr_decay <= 1.0:
            raise OptionError("encoder_lr_decay", f"must be in (0, 1], got "
                                                  f"{self.encoder_lr_decay}")


@dataclass
class FreezingEncoderOptions(EncoderOptions):
    """``EncoderOptions`` with ``freeze_encoder_epochs``: the encoder frozen during the
    first n epochs, then trained."""

    freeze_encoder_epochs: int = option(0, low=0)

    @property
    def freeze_epochs(self) -> int:
        return self.freeze_encoder_epochs


def build_encoder(name: str | None, config_dir: Path | None) -> nn.Module:
    """The pretrained encoder ``name``; the architecture saved in ``config_dir`` with random
    weights when a checkpoint replaces them (``weights_from_checkpoint``: no pretrained
    copy is loaded, no warning), or, with a warning, when ``name`` cannot be loaded."""
    if config_dir is not None and CHECKPOINT_WEIGHTS.get():
        return encoder_from_config(config_dir)
    try:
        return load_encoder(name)
    except MissingDataError:
        if config_dir is None:
            raise
        LOG.warning(
            "pretrained encoder %r unavailable: built from %s with random weights; "
            "they must come from a trained checkpoint",
            name,
            config_dir,
        )
        return encoder_from_config(config_dir)


def layer_list(encoder: nn.Module) -> nn.ModuleList | None:
    """The encoder's stack of Transformer layers (BERT/RoBERTa/XLM-R, DistilBERT, ...)."""
    for path in LAYER_PATHS:
        module: Any = encoder
        for part in path.split("."):
            module = getattr(module, part, None)
            if module is None:
                break
        if isinstance(module, nn.ModuleList):
            return module
    return None


def configure_encoder_training(encoder: nn.Module, train_layers: int) -> None:
    """-1: train everything; 0: freeze everything; k > 0: train only the top k layers.

    The pooler (unused) is always frozen so DDP sees no parameters without gradients.
    """
    encoder.requires_grad_(train_layers != 0)
    if train_layers > 0:
        layers = layer_list(encoder)
        if layers is None:
            raise PunctInputError(
                f"cannot find the layer stack of {type(encoder).__name__} to train its top "
                f"{train_layers} layers; use encoder_train_layers -1 or 0"
            )
        encoder.requires_grad_(False)
        for layer in list(layers)[-train_layers:]:
            layer.requires_grad_(True)
    pooler = getattr(encoder, "pooler", None)
    if isinstance(pooler, nn.Module):
        pooler.requires_grad_(False)


class EncoderStateCache:
    """Encoder states of windows by their piece ids (valid while frozen).

    States are kept apart by how they were computed (inference mode, autocast dtype), so
    a lookup never returns an inference tensor to a training step, nor bf16 states to an
    fp32 pass."""

    def __init__(self, max_floats: int = CACHE_FLOATS):
        self.max_floats = max_floats
        self.states: dict[tuple[bool, str], dict[bytes, torch.Tensor]] = {}
        self.floats = 0

    def clear(self) -> None:
        self.states.clear()
        self.floats = 0

    def __len__(self) -> int:
        return sum(len(space) for space in self.states.values())

    @staticmethod
    def _space(device_type: str) -> tuple[bool, str]:
        autocast = (str(torch.get_autocast_dtype(device_type))
                    if torch.is_autocast_enabled(device_type) else "off")
        return torch.is_inference_mode_enabled(), autocast

    def __call__(self, encoder: nn.Module, ids: torch.Tensor, mask: torch.Tensor
                 ) -> torch.Tensor:
        """States (B, T, H) of a batch, zeros at padding; only unseen windows are encoded."""
        states = self.states.setdefault(self._space(ids.device.type), {})
        lengths = mask.sum(dim=1).tolist()
        keys = [ids[b, :n].cpu().numpy().tobytes() for b, n in enumerate(lengths)]
        rows: dict[int, torch.Tensor] = {b: states[k] for b, k in enumerate(keys)
                                         if k in states}
        missing = [b for b in range(len(keys)) if b not in rows]
        if missing:
            with torch.no_grad():
                out = encoder(input_ids=ids[missing], attention_mask=mask[missing])
            for j, b in enumerate(missing):  # a copy: a view would keep the padded batch
                rows[b] = out.last_hidden_state[j, : lengths[b]].detach().clone()
                if self.floats < self.max_floats:
                    states[keys[b]] = rows[b]
                    self.floats += rows[b].numel()
        hidden = rows[0].new_zeros(ids.shape[0], ids.shape[1], rows[0].shape[-1])
        for b, row in rows.items():
            hidden[b, : row.shape[0]] = row
        return hidden


class EncoderModel(PunctModel):
    """A model around the featurizer's pretrained encoder (see the module docstring).

    ``options`` is the typed ``model`` section (an ``EncoderOptions``) for the subclass.
    """

    def __init__(self, config: Config, featurizer: SubwordFeaturizer):
        super().__init__()
        self.options: EncoderOptions = config.model
        self.n_labels = len(get_label_set(config.label_set).labels)
        if self.n_labels != featurizer.n_labels:
            raise PunctInputError(
                f"label set has {self.n_labels} labels, featurizer {featurizer.n_labels}"
            )
        self.encoder = build_encoder(featurizer.encoder_name, featurizer.encoder_config_dir)
        self.hidden_size = int(self.encoder.config.hidden_size)
        self.train_layers = self.options.encoder_train_layers
        self.freeze_epochs = self.options.freeze_epochs
        self.encoder_lr = self.options.encoder_lr
        self.encoder_lr_decay = self.options.encoder_lr_decay
        if self.encoder_lr_decay < 1.0 and layer_list(self.encoder) is None:
            raise PunctInputError(f"model.encoder_lr_decay needs the layer stack of "
                                  f"{type(self.encoder).__name__}, which was not found")
        self.encoder_frozen = False
        self.state_cache = EncoderStateCache()
        self.eval_cache = False
        self.set_encoder_frozen(self.freeze_epochs > 0)

    def encoder_groups(self, base_lr: float | None, trainable_only: bool = False
                       ) -> list[dict[str, Any]]:
        """The encoder's optimizer groups: one at ``model.encoder_lr`` (default
        ``base_lr``), or, with ``model.encoder_lr_decay`` d < 1, one per layer of L, layer
        i (0 at the bottom) at lr d^(L-1-i) and everything outside the layers (the
        embeddings) at lr d^L. Empty groups are left out."""
        params = [p for p in self.encoder.parameters()
                  if p.requires_grad or not trainable_only]
        if self.encoder_lr_decay == 1.0:
            if not params:
                return []
            return [{"params": params} if self.encoder_lr is None
                    else {"params": params, "lr": self.encoder_lr}]
        lr = self.encoder_lr if self.encoder_lr is not None else base_lr
        if lr is None:
            raise PunctInputError("model.encoder_lr_decay needs model.encoder_lr or "
                                  "train.optimizer.lr")
        layers = layer_list(self.encoder)
        assert layers is not None  # checked in __init__
        wanted = {id(p) for p in params}
        n = len(layers)
        groups = []
        in_layers: set[int] = set()
        for i, layer in enumerate(layers):
            chosen = [p for p in layer.parameters() if id(p) in wanted]
            in_layers.update(id(p) for p in layer.parameters())
            if chosen:
                groups.append({"params": chosen, "lr": lr * self.encoder_lr_decay ** (n - 1 - i)})
        rest = [p for p in params if id(p) not in in_layers]
        if rest:
            groups.insert(0, {"params": rest, "lr": lr * self.encoder_lr_decay ** n})
        return groups

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

    def train(self, mode: bool = True) -> EncoderModel:
        """A frozen encoder stays in eval mode (no dropout noise on fixed features)."""
        super().train(mode)
        if not self.encoder_trains:
            self.encoder.eval()
        return self

    def load_state_dict(self, state_dict: Any, strict: bool = True, assign: bool = False
                        ) -> Any:
        """Load weights; cached encoder states belong to the old ones and are dropped."""
        self.state_cache.clear()
        return super().load_state_dict(state_dict, strict=strict, assign=assign)

    def cache_eval_states(self, enabled: bool = True) -> None:
        """Let the evaluation passes of a training run (dev loss, dev F1, thresholds) reuse
        the frozen encoder's states of each dev window, as the training steps do. Never
        at inference, where the cache would grow with the input."""
        self.eval_cache = enabled

    def encode(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Encoder states (B, T, H); without gradients when the encoder is frozen, and then
        cached in training (and in its dev passes, ``cache_eval_states``)."""
        if not self.encoder_trains and (self.training or self.eval_cache):
            return self.state_cache(self.encoder, batch["input_ids"], batch["attention_mask"])
        with torch.set_grad_enabled(torch.is_grad_enabled() and self.encoder_trains):
            return self.encoder(
                input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
            ).last_hidden_state
