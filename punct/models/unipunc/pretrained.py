"""UniPunc with a pretrained lexical encoder (the paper's main system).

Featurizer: the sub-word windows of ``punct.models.subword.featurizer`` (one prediction
slot per word) plus the window's acoustic frames
(:class:`punct.models.unipunc.audio.AudioSpans`). Model: the pretrained encoder (``H_l``;
trained, frozen or top-k as in AutoPunct) -> acoustic assistant -> coordinate
bootstrapper -> AutoPunct's punctuation head (loss by label set, ``punct.models.marks``)
and capitalisation head (``punct.models.subword.heads``). The paper has no casing head;
the heads are the project's so that the outputs are comparable with AutoPunct's.
"""

from __future__ import annotations

from typing import Any

import torch

from punct.config import Config
from punct.models.subword.featurizer import SubwordFeaturizer
from punct.models.subword.heads import PunctCapModel
from punct.models.unipunc.audio import AudioFeaturizerMixin, AudioSpans
from punct.models.unipunc.layers import AcousticAssistant, CoordinateBootstrapper
from punct.models.unipunc.options import UnipuncOptions


class UnipuncFeaturizer(AudioFeaturizerMixin, SubwordFeaturizer):
    """AutoPunct's sub-word windows, each with the frames of its span (or none)."""

    def __init__(self, config: Config, tokenizer: Any | None = None):
        super().__init__(config, tokenizer)
        # ``load`` restores the saved audio state over this one
        self.audio: AudioSpans | None = (AudioSpans.from_config(config.featurizer)
                                         if config.featurizer.streams else None)


class UnipuncModel(PunctCapModel):
    """Pretrained encoder + acoustic assistant + coordinate bootstrapper + heads."""

    def __init__(self, config: Config, featurizer: UnipuncFeaturizer):
        super().__init__(config, featurizer)
        opts: UnipuncOptions = config.model
        self.add_heads(config, featurizer)
        spans = featurizer._spans()
        self.assistant = AcousticAssistant.from_options(spans.dim, self.hidden_size,
                                                        opts.acoustic)
        self.bootstrapper = CoordinateBootstrapper.from_options(self.hidden_size,
                                                                opts.bootstrapper)

    def contextualise(self, emb: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """The bootstrapper's fusion of the encoder output with the acoustic assistant's
        keys (the window's frames)."""
        keys = self.assistant(batch["audio"].to(emb.dtype), batch["audio_mask"],
                              batch["has_audio"], batch["audio_times"])
        return self.bootstrapper(emb, batch["attention_mask"] > 0, keys, batch["token_times"])
