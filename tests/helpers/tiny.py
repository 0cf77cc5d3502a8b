"""Tiny builders shared by several test modules: untrained experiment dirs, and the words
and marks of the last-piece slot families' tests."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from punct.config import resolve_config, save_config
from punct.kaldi import mark_mid_stream
from punct.labels import get_label_set
from punct.models.base import Registry, WordSeq
from punct.wordtable import WordRow, write_word_table

# The last-piece slot families (Nagy, Courtland): iwslt4 labels, a tiny-BERT vocabulary in
# which "stop", "huh" and "zebra" are several pieces, and the marks those words carry.
LABELS = get_label_set("iwslt4").labels
P = len(LABELS)
VOCAB = ("the", "a", "and", "of", "to", "is", "it", "we", "go", "yes")
MARKS = {"yes": ("COMMA",), "stop": ("PERIOD",), "huh": ("QUESTION",)}


def seq(words: list[str], offset: int = 0) -> WordSeq:
    """One utterance "u" of ``words`` with the ``MARKS`` punctuation, no pauses, no caps."""
    n = len(words)
    punct = np.zeros((n, P), dtype=np.float32)
    for i, w in enumerate(words):
        for mark in MARKS.get(w, ()):
            punct[i, LABELS.index(mark)] = 1.0
    return WordSeq("u", list(words), np.full(n, np.nan, np.float32), punct,
                   np.zeros(n, np.int64), offset=offset)


def save_untrained(config_raw: dict, exp: Path, seed: int,
                   train_seqs: Sequence[WordSeq] = ()) -> Path:
    """An experiment dir with random weights (enough for speed and plumbing): the
    featurizer fitted on ``train_seqs``, the model built after ``torch.manual_seed(seed)``."""
    config = resolve_config(config_raw)
    family = Registry.get(config.family)
    feat = family.make_featurizer(config)
    feat.fit(list(train_seqs))
    torch.manual_seed(seed)
    model = family.make_model(config, feat)
    feat.save(exp / "featurizer")
    torch.save({"model": model.state_dict()}, exp / "best.pt")
    save_config(config, exp / "config.yaml")
    return exp


def tiny_brnn_exp(exp: Path, words: Sequence[str] = ("the", "yes", "stop")) -> Path:
    """An untrained iwslt4 BRNN experiment (hidden 8) whose vocabulary is ``words``."""
    exp.mkdir(parents=True, exist_ok=True)
    return save_untrained({"family": "brnn", "label_set": "iwslt4",
                           "featurizer": {"min_count": 1}, "model": {"hidden": 8}},
                          exp, 0, [seq(list(words))])


def tiny_autopunct_exp(root: Path, words: Sequence[str], bf16: str = "off") -> Path:
    """An untrained pause-aware iwslt4 AutoPunct experiment over a tiny random BERT whose
    vocabulary holds ``words`` (``root/enc``, ``root/exp``)."""
    from helpers.tinybert import build_tiny_bert

    enc = build_tiny_bert(root / "enc", words=tuple(words))
    return save_untrained({
        "family": "autopunct", "label_set": "iwslt4",
        "featurizer": {"encoder": str(enc)},
        "model": {"encoder_train_layers": 0, "silence": {"kind": "continuous"},
                  "head": {"hidden": 16}, "cap_head": {"hidden": 16}},
        "train": {"window": 16, "stride": 8},
        "decode": {"window": 16, "stride": 8, "batch_size": 4, "bf16": bf16},
    }, root / "exp", seed=0)


def nagy_raw(encoder: Path, **model: object) -> dict:
    """A tiny Nagy config (iwslt4) on the tiny BERT at ``encoder``."""
    return {"family": "nagy", "label_set": "iwslt4", "featurizer": {"encoder": str(encoder)},
            "model": {"hidden": 24, "dropout": 0.0, **model}}


def write_marked_set(path: Path, n: int, seed: int) -> None:
    """yes -> COMMA, stop -> PERIOD, huh -> QUESTION, nothing elsewhere (stop and huh are
    several pieces for the tiny tokenizer, so the slot must be their last piece)."""
    rng = random.Random(seed)
    utts = {}
    for u in range(n):
        uid = f"{path.name}{u:04d}"
        words = [rng.choice([*VOCAB, "stop", "huh", "zebra"]) for _ in range(rng.randint(4, 9))]
        utts[uid] = [WordRow(uid, i, w, w, MARKS.get(w, ()), "O", None, None, None)
                     for i, w in enumerate(words)]
    path.mkdir(parents=True, exist_ok=True)
    write_word_table(path / "words.tsv", utts)
    # random word strings whose last word has no final mark: blocks cut out of a stream
    mark_mid_stream(path, "random word strings, not whole documents")
