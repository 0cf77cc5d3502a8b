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

from punct.config import Config, OptimizerSection
from punct.models.brnn import BRNNFeaturizer, BRNNText
from punct.models.unipunc.audio import AudioFeaturizerMixin, AudioSpans
from punct.models.unipunc.layers import AcousticAssistant, CoordinateBootstrapper
from punct.models.unipunc.options import UnipuncOptions


class UnipuncBRNNFeaturizer(AudioFeaturizerMixin, BRNNFeaturizer):
    """The BRNN's word windows, each with the frames of its span (or none)."""

    TOKENS_KEY = "ids"

    @classmethod
    def from_config(cls, config: Config) -> UnipuncBRNNFeaturizer:
        feat = super().from_config(config)
        assert isinstance(feat, UnipuncBRNNFeaturizer)
        feat.audio = AudioSpans.from_config(config.featurizer)
        return feat


class UnipuncBRNN(BRNNText):
    """punctuator2 whose BiGRU context is replaced by UniPunc's hybrid representation."""

    def __init__(self, featurizer: UnipuncBRNNFeaturizer, options: UnipuncOptions):
        super().__init__(len(featurizer.vocab), featurizer.membership(),
                         np.asarray(featurizer.opening), options.hidden, options.embedding,
                         options.checkpoint_attention)
        d_model = 2 * self.hidden
        self.assistant = AcousticAssistant.from_options(featurizer._spans().dim, d_model,
                                                        options.acoustic)
        self.bootstrapper = CoordinateBootstrapper.from_options(d_model, options.bootstrapper)
        self.graft_lr = options.graft_lr
        self._batch: dict[str, torch.Tensor] | None = None

    def param_groups(self, opts: OptimizerSection) -> list[dict[str, Any]]:
        """punctuator2's parameters at ``train.optimizer.lr``; the grafted assistant and
        bootstrapper at ``model.graft_lr`` when set (attention layers want a smaller rate
        than the BRNN's Adam 0.01)."""
        graft = [*self.assistant.parameters(), *self.bootstrapper.parameters()]
        ids = {id(p) for p in graft}
        rest = [p for p in self.parameters() if p.requires_grad and id(p) not in ids]
        if self.graft_lr is None:
            return [{"params": rest + graft}]
        return [{"params": rest}, {"params": graft, "lr": self.graft_lr}]

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
