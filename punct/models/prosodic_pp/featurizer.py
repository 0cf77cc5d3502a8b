"""The ``prosodic_pp`` featurizer: PP models, PP alignment, windows of W phrase slots.

``fit`` derives rule PP labels on the training set (``pp_labels``), trains the 7 PP
GMM-HMMs (``aligner``) and the class weights of the slot targets. ``windows`` aligns
every utterance (Viterbi loop, ``insertion`` log-likelihood per phrase: 0 dense, -50
sparse), builds the PP slots (``slots``) and makes one window per PP slot ``j``: the
phrases ``j-W+2 .. j+1`` (zeros outside the utterance), so that the target slot W-1 (the
end of phrase j) precedes the last phrase of the window. Each window carries ``word_ids``
= [the word matched to slot j, or -1] + the uncovered words assigned to slot j (they get a
zero prediction -> O). ``stride`` is ignored: the window always moves by one phrase.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from punct.config import Config, OptionError, option
from punct.labels import get_label_set
from punct.models.base import Featurizer, Window, WordSeq
from punct.models.prosodic_pp.aligner import HMMConfig, PPAligner, train_aligner
from punct.models.prosodic_pp.pp_labels import RuleConfig, rule_phrases
from punct.models.prosodic_pp.slots import (
    FEATURE_GROUPS,
    UttSlots,
    build_slots,
    feature_dim,
    slot_features,
)

STATE_FILE = "prosodic_pp.json"
STREAM = "prosody"
IGNORE = -100
CLASS_WEIGHTINGS = ("balanced", "none")


@dataclass
class PPFeaturizerOptions:
    """``featurizer:`` of prosodic_pp (see the module docstring and docs/PROSODIC_PP.md)."""

    streams: list[str] = field(default_factory=lambda: [STREAM])  # must include prosody
    insertion: float = 0.0  # log-likelihood per phrase of the PP loop (0 dense, -50 sparse)
    pp_features: list[str] = field(default_factory=lambda: list(FEATURE_GROUPS))  # [] : all
    match_tolerance: float = option(0.1, low=0.0)  # seconds between a PP end and a word end
    pause_window: float = option(0.25, low=0.0)
    class_weights: str = option("balanced", choices=CLASS_WEIGHTINGS)
    hmm: HMMConfig = field(default_factory=HMMConfig)
    rules: RuleConfig = field(default_factory=RuleConfig)

    def check(self) -> None:
        if STREAM not in self.streams:
            raise OptionError("streams", f"prosodic_pp needs the '{STREAM}' stream")
        unknown = [group for group in self.pp_features if group not in FEATURE_GROUPS]
        if unknown:
            raise OptionError("pp_features", f"unknown PP feature groups {unknown}; known: "
                                             f"{', '.join(FEATURE_GROUPS)}")


def slot_class(punct_row: np.ndarray) -> int:
    """Target class of a word slot: 0 = O, else 1 + index of the last mark present
    (moro2: PERIOD wins over COMMA)."""
    on = np.flatnonzero(punct_row > 0.5)
    return int(on[-1]) + 1 if on.size else 0


class PPFeaturizer(Featurizer):
    """PP alignment + slot features + windows for the prosodic-phrase system."""

    def __init__(self, labels: Sequence[str], opts: PPFeaturizerOptions | None = None):
        opts = opts if opts is not None else PPFeaturizerOptions()
        self.labels = tuple(labels)
        self.streams = list(opts.streams)
        self.insertion = opts.insertion
        self.groups = tuple(opts.pp_features or FEATURE_GROUPS)
        slot_features(UttSlots([], np.zeros(0), np.zeros(0, bool), np.zeros(0), []),
                      self.groups)  # validates the groups
        self.tolerance = opts.match_tolerance
        self.pause_window = opts.pause_window
        self.weighting = opts.class_weights
        self.hmm_config = opts.hmm
        self.rule_config = opts.rules
        self.aligner: PPAligner | None = None
        self.class_weights = np.ones(len(self.labels) + 1)
        self._cache: dict[tuple, UttSlots] = {}

    @classmethod
    def from_config(cls, config: Config) -> PPFeaturizer:
        return cls(get_label_set(config.label_set).labels, config.featurizer)

    @property
    def dim(self) -> int:
        return feature_dim(self.groups)

    # -- fitting -------------------------------------------------------------------
    def _usable(self, seq: WordSeq) -> bool:
        feats = seq.feats.get(STREAM)
        return feats is not None and len(feats) > 0

    def fit(self, train: list[WordSeq]) -> None:
        pairs = []
        for seq in train:
            if not self._usable(seq) or seq.times is None:
                continue
            known = np.isfinite(seq.times).all(axis=1)
            if not known.all():
                continue  # rule labels need every word's timing
            feats = seq.feats[STREAM]
            duration = len(feats) * self.hmm_config.frame_shift
            pairs.append((feats, rule_phrases(feats, seq.times, duration, self.rule_config)))
        if not pairs:
            raise ValueError("prosodic_pp: no training utterance has prosody features and "
                             "word timings (run make_prosody and the aligner first)")
        self.aligner = train_aligner(pairs, self.hmm_config)
        self._cache = {}
        counts = np.zeros(len(self.labels) + 1)
        for seq in train:
            for target in self._targets(seq):
                counts[target] += 1
        if self.weighting == "balanced" and counts.min() > 0:
            self.class_weights = counts.sum() / (len(counts) * counts)
        else:
            self.class_weights = np.ones(len(counts))

    # -- alignment -----------------------------------------------------------------
    def slots(self, seq: WordSeq) -> UttSlots | None:
        """The PP slots of one utterance (None without prosody features); cached."""
        if not self._usable(seq):
            return None
        if self.aligner is None:
            raise RuntimeError("prosodic_pp featurizer used before fit/load")
        feats = seq.feats[STREAM]
        key = (seq.utt_id, feats.shape, float(np.asarray(feats[:, 0], np.float64).sum()),
               len(seq), self.insertion)
        if key not in self._cache:
            duration = len(feats) * self.aligner.frame_shift
            times = seq.times if seq.times is not None else np.full((len(seq), 2), np.nan)
            phrases = self.aligner.align(feats, self.insertion)
            self._cache[key] = build_slots(phrases, times, seq.pauses, duration,
                                           self.tolerance, self.pause_window)
        return self._cache[key]

    def _targets(self, seq: WordSeq) -> list[int]:
        slots = self.slots(seq)
        if slots is None:
            return []
        return [slot_class(seq.punct[w]) if w >= 0 else 0 for w in slots.word]

    # -- windows -------------------------------------------------------------------
    def windows(self, seqs: list[WordSeq], window: int, stride: int) -> list[Window]:
        if window < 2:
            raise ValueError(f"prosodic_pp needs windows of at least 2 phrases, got {window}")
        out: list[Window] = []
        for seq in seqs:
            slots = self.slots(seq)
            if slots is None or len(slots) == 0:
                out.append({"feats": np.zeros((window, self.dim), np.float32),
                            "word_ids": np.concatenate([[-1], seq.offset + np.arange(len(seq))]
                                                       ).astype(np.int64),
                            "target": np.array([IGNORE], np.int64)})
                continue
            feats = slot_features(slots, self.groups)
            n = len(slots)
            padded = np.zeros((n + window, self.dim), np.float32)
            padded[window - 2:window - 2 + n] = feats
            targets = [slot_class(seq.punct[w]) if w >= 0 else 0 for w in slots.word]
            for j in range(n):
                ids = [seq.offset + int(slots.word[j]) if slots.word[j] >= 0 else -1]
                ids += [seq.offset + i for i in slots.uncovered[j]]
                out.append({"feats": padded[j:j + window],
                            "word_ids": np.asarray(ids, np.int64),
                            "target": np.array([targets[j]], np.int64)})
        return out

    def collate(self, windows: list[Window]) -> dict[str, torch.Tensor]:
        t_max = max(len(w["word_ids"]) for w in windows)
        word_ids = torch.full((len(windows), t_max), -1, dtype=torch.long)
        for i, w in enumerate(windows):
            word_ids[i, :len(w["word_ids"])] = torch.from_numpy(w["word_ids"])
        feats = torch.from_numpy(np.stack([w["feats"] for w in windows]))
        target = torch.from_numpy(np.concatenate([w["target"] for w in windows]))
        return {"feats": feats, "word_ids": word_ids, "target": target}

    # -- statistics ----------------------------------------------------------------
    def decode_statistics(self, seqs: list[WordSeq]) -> dict[str, Any]:
        """The PP slot statistics of a decoded set (its slots are cached by then)."""
        return {"pp": self.slot_stats(seqs)}

    def slot_stats(self, seqs: Sequence[WordSeq]) -> dict[str, Any]:
        """PP slot counts and the Slot Miss Ratio of a set (docs/PROSODIC_PP.md)."""
        pp = matched = unmatched = duplicate = punct_words = missed = 0
        durations: list[float] = []
        for seq in seqs:
            has_mark = seq.punct.sum(axis=1) > 0.5
            punct_words += int(has_mark.sum())
            slots = self.slots(seq)
            covered: set[int] = set()
            if slots is not None:
                pp += len(slots)
                matched += int((slots.word >= 0).sum())
                unmatched += int(slots.unmatched.sum())
                duplicate += int(((slots.word < 0) & ~slots.unmatched).sum())
                durations += [p.duration for p in slots.phrases]
                covered = set(slots.word[slots.word >= 0].tolist())
            missed += sum(1 for i in np.flatnonzero(has_mark) if int(i) not in covered)
        return {"pp_slots": pp, "matched": matched, "unmatched": unmatched,
                "duplicate": duplicate, "punct_word_slots": punct_words,
                "missed_punct_slots": missed,
                "smr": unmatched / punct_words if punct_words else None,
                "missed_punct_ratio": missed / punct_words if punct_words else None,
                "mean_pp_duration": float(np.mean(durations)) if durations else None,
                "insertion": self.insertion}

    # -- persistence ---------------------------------------------------------------
    def save(self, directory: Path) -> None:
        if self.aligner is None:
            raise RuntimeError("nothing to save: the featurizer is not fitted")
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        state = {"labels": list(self.labels), "insertion": self.insertion,
                 "class_weights": self.class_weights.tolist(),
                 "aligner": self.aligner.to_dict()}
        (directory / STATE_FILE).write_text(json.dumps(state), encoding="utf-8")

    @classmethod
    def load(cls, directory: Path, config: Config) -> PPFeaturizer:
        """Rebuild from ``save``: PP models and class weights from the directory, slot
        options (``pp_features``, ``insertion``, ...) from ``config``."""
        state = json.loads((Path(directory) / STATE_FILE).read_text(encoding="utf-8"))
        feat = cls.from_config(config)
        if tuple(state["labels"]) != feat.labels:
            raise ValueError(f"featurizer in {directory} was built for labels "
                             f"{state['labels']}, config asks for {list(feat.labels)}")
        feat.aligner = PPAligner.from_dict(state["aligner"])
        feat.class_weights = np.asarray(state["class_weights"], dtype=np.float64)
        return feat
