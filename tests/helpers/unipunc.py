"""Synthetic UniPunc sequences (full13, an fbank-like stream) and a small UniPunc config."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from punct.labels import get_label_set
from punct.models.base import WordSeq

LABELS = get_label_set("full13").labels


P = len(LABELS)


COMMA, PERIOD = LABELS.index("COMMA"), LABELS.index("PERIOD")


VOCAB = ("the", "a", "and", "of", "to", "is", "it", "what", "yes", "no", "so", "we", "go")


DIM = 6  # acoustic feature dimension of the synthetic stream


def make_seq(utt: str, n: int, offset: int = 0, seed: int = 0, audio: bool = True) -> WordSeq:
    """n words of 0.3 s each, 0.1 s apart, starting at 0.5 s; frames every 10 ms."""
    rng = np.random.default_rng(seed)
    words = [VOCAB[i % len(VOCAB)] for i in range(n)]
    punct = np.zeros((n, P), dtype=np.float32)
    punct[4::5, PERIOD] = 1.0
    punct[2::5, COMMA] = 1.0
    starts = 0.5 + 0.4 * np.arange(n)
    times = np.stack([starts, starts + 0.3], axis=1)
    seq = WordSeq(utt, words, np.full(n, 0.1, dtype=np.float32), punct,
                  np.zeros(n, dtype=np.int64), offset, "en", times=times)
    if audio:
        n_frames = int(np.ceil((starts[-1] + 1.0) / 0.01))
        seq.feats["fbank"] = rng.normal(2.0, 3.0, (n_frames, DIM)).astype(np.float32)
    return seq


def unipunc_config(encoder: Path | None = None, lexical: str = "pretrained",
                   withhold: float = 0.0, time_encoding: bool = False) -> dict:
    """The plain config data (``punct.config.resolve_config`` types it)."""
    fcfg: dict = {"streams": ["fbank"], "withhold_audio": withhold, "audio_context_s": 0.1}
    model: dict = {"lexical": lexical,
                   "acoustic": {"channels": 16, "kernel": 3, "stride": 2, "dropout": 0.0},
                   "bootstrapper": {"layers": 2, "heads": 2, "dropout": 0.0,
                                    "time_encoding": time_encoding,
                                    "alignment_prior_s": 0.2 if time_encoding else None}}
    if lexical == "pretrained":
        fcfg["encoder"] = str(encoder)
        model.update(head={"dropout": 0.0}, cap_head={"dropout": 0.0})
    else:
        fcfg["min_count"] = 1
        model.update(hidden=16, graft_lr=1e-3)
    return {"family": "unipunc", "label_set": "full13", "featurizer": fcfg, "model": model}
