"""A rule-based featurizer/model pair (iwslt4): the decoding engine without training."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from punct import Restorer
from punct.config import Config, DecodeSection, TrainSection
from punct.data.windows import window_spans
from punct.export.system import System
from punct.labels import get_label_set
from punct.models.base import Featurizer, Prediction, PunctModel, Window, WordSeq

IWSLT = get_label_set("iwslt4")
COMMA, PERIOD = IWSLT.index("COMMA"), IWSLT.index("PERIOD")


class WordFeaturizer(Featurizer):
    """Word-level windows; feature = hash-free word code: 1 for 'stop', 2 for 'then'."""

    def fit(self, train: list[WordSeq]) -> None:
        pass

    def windows(self, seqs: list[WordSeq], window: int, stride: int) -> list[Window]:
        out = []
        for s in seqs:
            for a, b in window_spans(len(s), window, stride):
                code = [1.0 if w == "stop" else 2.0 if w == "then" else 0.0
                        for w in s.words[a:b]]
                out.append({"word_ids": np.arange(s.offset + a, s.offset + b),
                            "code": np.array(code, dtype=np.float32),
                            "pause": np.nan_to_num(s.pauses[a:b], nan=0.0).astype(np.float32)})
        return out

    def collate(self, windows: list[Window]) -> dict[str, torch.Tensor]:
        t = max(len(w["word_ids"]) for w in windows)
        batch = {"word_ids": torch.full((len(windows), t), -1, dtype=torch.long),
                 "code": torch.zeros(len(windows), t), "pause": torch.zeros(len(windows), t)}
        for i, w in enumerate(windows):
            for key in batch:
                batch[key][i, :len(w[key])] = torch.from_numpy(w[key])
        return batch

    def save(self, directory: Path) -> None:
        pass

    @classmethod
    def load(cls, directory: Path, config: Config) -> Featurizer:
        return cls()


class RuleModel(PunctModel):
    """PERIOD after 'stop', COMMA before a pause > 0.5 s; no casing (rule casing)."""

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return torch.zeros(())

    def predict(self, batch: dict[str, torch.Tensor]) -> Prediction:
        punct = torch.full((*batch["code"].shape, 3), 0.1)
        punct[..., PERIOD] = torch.where(batch["code"] == 1, 0.9, 0.1)
        punct[..., COMMA] = torch.where(batch["pause"] > 0.5, 0.8, 0.1)
        return Prediction(punct)


#: The rule pair as a loaded system of the Python API.
# "rule" is no registered family: its config is built from the typed sections directly
RULE_CONFIG = Config("rule", "iwslt4", train=TrainSection(window=4, stride=2),
                     decode=DecodeSection(batch_size=3, aggregate="mean", bf16=False,
                                          threshold=0.5))


def rule_restorer(**kw: int) -> Restorer:
    """PERIOD after 'stop', COMMA before a pause > 0.5 s, rule casing, through the API."""
    system = System(RULE_CONFIG, WordFeaturizer(), RuleModel(), IWSLT, None, Path("rule"), False)
    return Restorer(system, device="cpu", **kw)
