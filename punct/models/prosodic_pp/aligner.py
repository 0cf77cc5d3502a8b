"""Automatic phonological-phrase alignment: 7 GMM-HMMs in a Viterbi loop, and their training.

Frames: the 10 ms prosody matrix averaged over ``hop`` frames (default 2: 20 ms), so an
11-state model lasts at least 220 ms, close to the paper's 250 ms minimum phrase length.

Training (Viterbi / hard EM, like HTK's HInit + embedded re-estimation):
1. initial segments from :func:`punct.models.prosodic_pp.pp_labels.rule_phrases`;
   each model's states get a uniform split of its segments' frames;
2. ``n_iter`` rounds: fit the state GMMs (mixtures grow 1 -> 2 -> 4 by ``mix_schedule``)
   and the stay/advance probabilities from the state occupancies; then re-align every
   training utterance to its PP *label sequence* (forced Viterbi through the concatenated
   models), which moves the phrase boundaries to where the models fit best.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from punct.config import OptionError, option
from punct.models.prosodic_pp.hmm import (
    DiagGMM,
    PhraseHMM,
    transitions_from_durations,
    viterbi_chain,
    viterbi_loop,
)
from punct.models.prosodic_pp.pp_labels import PP_TYPES, Phrase


def decimate(feats: np.ndarray, hop: int) -> np.ndarray:
    """Mean of every ``hop`` consecutive frames (the last group may be shorter)."""
    feats = np.asarray(feats, dtype=np.float64)
    if hop <= 1 or len(feats) == 0:
        return feats
    n = int(np.ceil(len(feats) / hop))
    pad = n * hop - len(feats)
    padded = np.vstack([feats, np.repeat(feats[-1:], pad, axis=0)]) if pad else feats
    return padded.reshape(n, hop, feats.shape[1]).mean(axis=1)


@dataclass
class HMMConfig:
    """PP model settings (``featurizer.hmm`` of prosodic_pp)."""

    n_states: int = option(11, low=1)
    n_mix: int = option(4, low=1)
    hop: int = option(2, low=1)  # frames averaged into one HMM frame
    n_iter: int = option(4, low=1)
    # mixture components of each round (the last one repeats), at most n_mix
    mix_schedule: list[int] = field(default_factory=lambda: [1, 2, 4, 4])
    frame_shift: float = option(0.01, low=0.0)
    var_floor: float = option(1e-2, low=0.0)

    def check(self) -> None:
        if not self.mix_schedule or min(self.mix_schedule) < 1:
            raise OptionError("mix_schedule", "a list of positive mixture sizes")


@dataclass
class PPAligner:
    """The 7 PP models (in ``labels`` order) and the loop recogniser."""

    models: list[PhraseHMM]
    labels: tuple[str, ...] = PP_TYPES
    hop: int = 2
    frame_shift: float = 0.01
    history: list[float] = field(default_factory=list)

    @property
    def hmm_shift(self) -> float:
        return self.hop * self.frame_shift

    def align(self, feats: np.ndarray, insertion: float = 0.0) -> list[Phrase]:
        """PP segmentation of one utterance's prosody matrix (seconds)."""
        x = decimate(feats, self.hop)
        if len(x) == 0:
            return []
        lls = [m.state_loglik(x) for m in self.models]
        segments, _ = viterbi_loop(lls, self.models, insertion)
        total = len(feats) * self.frame_shift
        return [Phrase(self.labels[s.model], s.start * self.hmm_shift,
                       min(s.end * self.hmm_shift, total)) for s in segments]

    def to_dict(self) -> dict[str, Any]:
        return {"labels": list(self.labels), "hop": self.hop, "frame_shift": self.frame_shift,
                "history": self.history, "models": [m.to_dict() for m in self.models]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PPAligner:
        return cls([PhraseHMM.from_dict(m) for m in d["models"]], tuple(d["labels"]),
                   int(d["hop"]), float(d["frame_shift"]), list(d.get("history", [])))


def _to_frames(phrases: Sequence[Phrase], n: int, shift: float, n_states: int
               ) -> list[tuple[int, int, int]]:
    """(label index, start, end) in HMM frames; phrases too short for the model are merged
    into their predecessor (or successor)."""
    bounds = [(PP_TYPES.index(p.label), round(p.start / shift), round(p.end / shift))
              for p in phrases]
    out: list[list[int]] = []
    for lab, s, e in bounds:
        s, e = max(0, min(s, n)), max(0, min(e, n))
        if out:
            s = out[-1][2]
        if e - s < n_states:
            if out:
                out[-1][2] = max(out[-1][2], e)
                continue
        out.append([lab, s, e])
    if len(out) > 1 and out[0][2] - out[0][1] < n_states:
        out[1][1] = out[0][1]
        out.pop(0)
    if out:
        out[-1][2] = n
    return [(a, b, c) for a, b, c in out if c - b >= n_states]


def _uniform_states(length: int, n_states: int) -> np.ndarray:
    return np.minimum((np.arange(length) * n_states) // max(length, 1), n_states - 1)


def _fit_models(pools: list[list[list[np.ndarray]]], occupancy: np.ndarray, n_mix: int,
                cfg: HMMConfig, dim: int, old: list[PhraseHMM] | None) -> list[PhraseHMM]:
    models = []
    for k, states in enumerate(pools):
        gmms = []
        for s, frames in enumerate(states):
            if frames:
                gmms.append(DiagGMM.fit(np.vstack(frames), n_mix, var_floor=cfg.var_floor))
            elif old is not None:
                gmms.append(old[k].gmms[s])
            else:  # a type never seen in training: a broad standard-normal state
                gmms.append(DiagGMM(np.ones(1), np.zeros((1, dim)), np.ones((1, dim))))
        stay, nxt = transitions_from_durations(occupancy[k])
        models.append(PhraseHMM(gmms, stay, nxt))
    return models


def train_aligner(utts: Sequence[tuple[np.ndarray, Sequence[Phrase]]],
                  cfg: HMMConfig | None = None) -> PPAligner:
    """Train the PP models on (prosody matrix, rule phrases) pairs (module docstring)."""
    cfg = cfg or HMMConfig()
    shift = cfg.hop * cfg.frame_shift
    data = []
    for feats, phrases in utts:
        x = decimate(feats, cfg.hop)
        segs = _to_frames(phrases, len(x), shift, cfg.n_states)
        if segs:
            data.append((x, segs))
    if not data:
        raise ValueError("no training utterance has a phrase long enough for the PP models")
    dim = data[0][0].shape[1]
    k_len, s_len = len(PP_TYPES), cfg.n_states
    # state alignment per utterance: (label index, state) per frame
    align = []
    for x, segs in data:
        lab = np.full(len(x), -1)
        st = np.zeros(len(x), dtype=np.int64)
        for k, s, e in segs:
            lab[s:e] = k
            st[s:e] = _uniform_states(e - s, s_len)
        align.append((lab, st))
    models: list[PhraseHMM] | None = None
    history: list[float] = []
    for it in range(cfg.n_iter):
        pools: list[list[list[np.ndarray]]] = [[[] for _ in range(s_len)] for _ in range(k_len)]
        frames = np.zeros((k_len, s_len))
        visits = np.zeros((k_len, s_len))
        for (x, _), (lab, st) in zip(data, align, strict=True):
            for k in range(k_len):
                for s in range(s_len):
                    mask = (lab == k) & (st == s)
                    if mask.any():
                        pools[k][s].append(x[mask])
                        frames[k, s] += mask.sum()
            change = np.flatnonzero(np.diff(np.concatenate([[-1], lab * s_len + st])) != 0)
            for t in change:
                if lab[t] >= 0:
                    visits[lab[t], st[t]] += 1
        occupancy = np.where(visits > 0, frames / np.maximum(visits, 1), 2.0)
        n_mix = min(cfg.n_mix, cfg.mix_schedule[min(it, len(cfg.mix_schedule) - 1)])
        models = _fit_models(pools, occupancy, n_mix, cfg, dim, models)
        total = 0.0
        new_align = []
        for (x, segs), (lab, st) in zip(data, align, strict=True):
            labels = [k for k, _, _ in segs]
            lls = [m.state_loglik(x) for m in models]
            chain = np.hstack([lls[k] for k in labels])
            stay = np.concatenate([models[k].log_stay for k in labels])
            nxt = np.concatenate([models[k].log_next for k in labels])
            try:
                path, score = viterbi_chain(chain, stay, nxt)
            except ValueError:
                new_align.append((lab, st))
                continue
            total += score
            new_align.append((np.asarray(labels)[path // s_len], path % s_len))
        align = new_align
        history.append(total / sum(len(x) for x, _ in data))
    assert models is not None
    return PPAligner(models, PP_TYPES, cfg.hop, cfg.frame_shift, history)
