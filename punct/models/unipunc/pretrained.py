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

from punct.errors import PunctInputError
from punct.models.options import checked_options
from punct.models.subword.featurizer import SubwordFeaturizer
from punct.models.subword.heads import PUNCT_CAP_KEYS, PunctCapModel
from punct.models.unipunc.audio import (
    AudioFeaturizerMixin,
    AudioSpans,
    split_featurizer_config,
)
from punct.models.unipunc.layers import (
    ACOUSTIC_KEYS,
    BOOTSTRAPPER_KEYS,
    AcousticAssistant,
    CoordinateBootstrapper,
)

UNIPUNC_MODEL_KEYS = {"lexical", "acoustic", "bootstrapper"}
AUTOPUNCT_ONLY = ("silence", "custom_bert")  # accepted when empty, as before


class UnipuncFeaturizer(AudioFeaturizerMixin, SubwordFeaturizer):
    """AutoPunct's sub-word windows, each with the frames of its span (or none)."""

    def __init__(self, config: dict[str, Any], tokenizer: Any | None = None):
        audio_opts, rest = split_featurizer_config(config.get("featurizer"))
        super().__init__(dict(config, featurizer=rest), tokenizer)
        # ``load`` rebuilds from a config without audio options, then restores the state
        self.audio: AudioSpans | None = AudioSpans.from_config(audio_opts) if audio_opts \
            else None


def model_options(config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any],
                                                   dict[str, Any]]:
    """(acoustic, bootstrapper, the other model options) of a unipunc config."""
    mcfg = dict(config.get("model") or {})
    acoustic = checked_options(mcfg.pop("acoustic", None), ACOUSTIC_KEYS, "model.acoustic")
    boot = checked_options(mcfg.pop("bootstrapper", None), BOOTSTRAPPER_KEYS, "model.bootstrapper")
    mcfg.pop("lexical", None)
    return acoustic, boot, mcfg


class UnipuncModel(PunctCapModel):
    """Pretrained encoder + acoustic assistant + coordinate bootstrapper + heads."""

    def __init__(self, config: dict[str, Any], featurizer: UnipuncFeaturizer):
        acoustic, boot, rest = model_options(config)
        for key in AUTOPUNCT_ONLY:
            if rest.pop(key, None):
                raise PunctInputError(f"model.{key} is an AutoPunct option; unipunc takes its "
                                      "acoustic information from the acoustic assistant")
        super().__init__(dict(config, model=rest), featurizer, PUNCT_CAP_KEYS)
        self.add_heads(config, featurizer)
        spans = featurizer._spans()
        self.assistant = AcousticAssistant(spans.dim, self.hidden_size, **acoustic)
        self.bootstrapper = CoordinateBootstrapper(self.hidden_size, **boot)

    def contextualise(self, emb: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """The bootstrapper's fusion of the encoder output with the acoustic assistant's
        keys (the window's frames)."""
        keys = self.assistant(batch["audio"].to(emb.dtype), batch["audio_mask"],
                              batch["has_audio"], batch["audio_times"])
        return self.bootstrapper(emb, batch["attention_mask"] > 0, keys, batch["token_times"])
