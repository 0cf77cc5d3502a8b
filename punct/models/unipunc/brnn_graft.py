"""UniPunc grafted onto the BRNN (the paper's Table 3, "BiLSTM-UniPunc").

The lexical encoder is punctuator2's word embedding + BiGRU (``BRNNText.context``); its
states ``H_l`` (2 x hidden) go through the coordinate bootstrapper with the acoustic
assistant's keys, and the hybrid states replace the BiGRU context in the rest of
punctuator2 (attention, late fusion, output GRU, slot softmax over mark combinations).
Everything else (vocabulary, slots, loss, read-out) is the ``brnn`` family's, so
``brnn_text`` vs ``unipunc_brnn`` isolates the graft.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from punct.errors import PunctInputError
from punct.models.brnn import BRNNFeaturizer, BRNNText
from punct.models.unipunc.audio import (
    AudioFeaturizerMixin,
    AudioSpans,
    split_featurizer_config,
)
from punct.models.unipunc.layers import AcousticAssistant, CoordinateBootstrapper

BRNN_MODEL_KEYS = {"hidden", "embedding", "checkpoint_attention", "graft_lr"}


class UnipuncBRNNFeaturizer(AudioFeaturizerMixin, BRNNFeaturizer):
    """The BRNN's word windows, each with the frames of its span (or none)."""

    TOKENS_KEY = "ids"

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> UnipuncBRNNFeaturizer:
        audio_opts, rest = split_featurizer_config(config.get("featurizer"))
        feat = super().from_config(dict(config, featurizer=rest))
        assert isinstance(feat, UnipuncBRNNFeaturizer)
        feat.audio = AudioSpans.from_config(audio_opts)
        return feat


class UnipuncBRNN(BRNNText):
    """punctuator2 whose BiGRU context is replaced by UniPunc's hybrid representation."""

    def __init__(self, featurizer: UnipuncBRNNFeaturizer, model_cfg: dict[str, Any],
                 acoustic: dict[str, Any], bootstrapper: dict[str, Any]):
        unknown = set(model_cfg) - BRNN_MODEL_KEYS
        if unknown:
            raise PunctInputError(f"unknown unipunc (brnn) model options {sorted(unknown)}; "
                                  f"known {sorted(BRNN_MODEL_KEYS)} + lexical, acoustic, "
                                  "bootstrapper")
        super().__init__(len(featurizer.vocab), featurizer.membership(),
                         np.asarray(featurizer.opening), int(model_cfg.get("hidden", 256)),
                         model_cfg.get("embedding"),
                         bool(model_cfg.get("checkpoint_attention", True)))
        d_model = 2 * self.hidden
        self.assistant = AcousticAssistant(featurizer._spans().dim, d_model, **acoustic)
        self.bootstrapper = CoordinateBootstrapper(d_model, **bootstrapper)
        self.graft_lr = model_cfg.get("graft_lr")
        self._batch: dict[str, torch.Tensor] | None = None

    def param_groups(self, opts: dict[str, Any]) -> list[dict[str, Any]]:
        """punctuator2's parameters at ``train.optimizer.lr``; the grafted assistant and
        bootstrapper at ``model.graft_lr`` when set (attention layers want a smaller rate
        than the BRNN's Adam 0.01)."""
        graft = [*self.assistant.parameters(), *self.bootstrapper.parameters()]
        ids = {id(p) for p in graft}
        rest = [p for p in self.parameters() if p.requires_grad and id(p) not in ids]
        if self.graft_lr is None:
            return [{"params": rest + graft}]
        return [{"params": rest}, {"params": graft, "lr": float(self.graft_lr)}]

    def fused_states(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """punctuator2's fused states, computed over the hybrid context."""
        self._batch = batch  # read by ``context``, which punctuator2 calls with ids only
        try:
            return super().fused_states(batch)
        finally:
            self._batch = None

    def context(self, ids: torch.Tensor, lengths: torch.Tensor,
                pauses: torch.Tensor | None = None) -> torch.Tensor:
        """BiGRU states (``H_l``) -> coordinate bootstrapper -> hybrid states (B, T, 2H)."""
        ctx = super().context(ids, lengths, pauses)
        batch = self._batch
        if batch is None:
            raise RuntimeError("UnipuncBRNN.context needs the batch (call fused_states)")
        valid = torch.arange(ids.shape[1], device=ids.device)[None, :] < lengths[:, None]
        keys = self.assistant(batch["audio"].to(ctx.dtype), batch["audio_mask"],
                              batch["has_audio"], batch["audio_times"])
        return self.bootstrapper(ctx, valid.to(ctx.device), keys, batch["token_times"])
