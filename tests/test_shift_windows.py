"""train.shift_windows: each epoch after the first cuts the utterances at a random word."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.tiny import seq
from helpers.trainset import TINY, make_set

from punct.config import deep_merge, resolve_config
from punct.data.sequences import cut_seq
from punct.errors import PunctInputError
from punct.train.trainer import train_experiment


def test_cut_seq_keeps_words_marks_and_offsets() -> None:
    s = seq("the yes stop we go".split())
    s.offset = 40
    head, tail = cut_seq(s, 2)
    assert head.words == ["the", "yes"] and tail.words == ["stop", "we", "go"]
    assert (head.offset, tail.offset) == (40, 42)
    assert np.array_equal(np.concatenate([head.punct, tail.punct]), s.punct)
    assert np.array_equal(np.concatenate([head.cap, tail.cap]), s.cap)
    assert cut_seq(s, 0) == [s] and cut_seq(s, 5) == [s]
    s.feats["fbank"] = np.zeros((10, 4), dtype=np.float32)
    with pytest.raises(PunctInputError, match="acoustic streams"):
        cut_seq(s, 2)


def _weights(exp: Path) -> dict[str, torch.Tensor]:
    return torch.load(exp / "last.pt", weights_only=True)["model"]


def test_shifted_epochs_differ_are_reproducible_and_learn(tmp_path: Path) -> None:
    make_set(tmp_path / "train", 120, 1)
    make_set(tmp_path / "dev", 30, 2)
    base = deep_merge(TINY, {"train": {"epochs": 6, "patience": 6, "window": 6, "stride": 6}})
    runs = {}
    for name, shift in (("plain", False), ("shift", True), ("again", True)):
        cfg = resolve_config(deep_merge(base, {"train": {"shift_windows": shift}}))
        runs[name] = train_experiment(cfg, tmp_path / "train", tmp_path / "dev",
                                      tmp_path / name, threads=1, quiet=True)
    plain, shift, again = (_weights(tmp_path / n) for n in ("plain", "shift", "again"))
    assert any(not torch.equal(plain[k], shift[k]) for k in plain)
    assert all(torch.equal(shift[k], again[k]) for k in shift)
    log = (tmp_path / "shift" / "train.log").read_text(encoding="utf-8")
    assert runs["shift"]["dev_micro_f1"] > 0.5, log  # all-O gives 0
    # epoch 1 is the same in both runs: the shift starts with epoch 2
    hist = {n: json.loads((tmp_path / n / "history.json").read_text(encoding="utf-8"))
            for n in ("plain", "shift")}
    assert hist["plain"][0]["train_loss"] == hist["shift"][0]["train_loss"]
    assert hist["plain"][1]["train_loss"] != hist["shift"][1]["train_loss"]
