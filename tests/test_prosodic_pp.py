"""The prosodic_pp family: rule PP labels, PP slots, window targets, a tiny end-to-end run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.pp import LABELS, seq_of, synthetic_corpus

from punct.config import resolve_config
from punct.engine.decode import predict_words
from punct.errors import PunctInputError
from punct.models.base import Registry
from punct.models.prosodic_pp.featurizer import (
    IGNORE,
    PPFeaturizer,
    PPFeaturizerOptions,
    slot_class,
)
from punct.models.prosodic_pp.pp_labels import PP_TYPES, Phrase, rule_phrases
from punct.models.prosodic_pp.slots import build_slots, sil_durations, slot_features


class StubAligner:
    """Returns fixed phrases, whatever the features."""

    frame_shift = 0.01

    def __init__(self, phrases: list[Phrase]):
        self.phrases = phrases

    def align(self, feats: np.ndarray, insertion: float = 0.0) -> list[Phrase]:
        return self.phrases


# words: w0 0.0-0.5 (COMMA), w1 0.8-1.2, w2 1.2-1.6, w3 1.7-2.0 (PERIOD); audio 2.2 s
TIMES = [(0.0, 0.5), (0.8, 1.2), (1.2, 1.6), (1.7, 2.0)]
MARKS = ["COMMA", None, None, "PERIOD"]
PHRASES = [Phrase("io", 0.0, 0.5),  # ends at w0 -> w0
           Phrase("sil", 0.5, 0.8),  # ends in w0's pause region too -> duplicate
           Phrase("ss", 0.8, 1.0),  # ends inside w1 -> unmatched
           Phrase("ie", 1.0, 2.02),  # ends at w3 -> w3
           Phrase("sil", 2.02, 2.2)]  # utterance end, w3's region again -> duplicate


def test_slots_match_ends_to_words_by_hand() -> None:
    seq = seq_of(TIMES, MARKS, 220)
    slots = build_slots(PHRASES, seq.times, seq.pauses, 2.2)
    assert slots.word.tolist() == [0, -1, -1, 3, -1]
    assert slots.unmatched.tolist() == [False, False, True, False, False]
    # w1, w2 have no PP end: w1 ends at 1.2 -> slot 3 (ends 2.02); w2 ends 1.6 -> slot 3
    assert slots.uncovered == [[], [], [], [1, 2], []]
    # SIL_dur: closest word end within 250 ms: w0 (0.3 s pause) for 0.5 and 0.8 (0.3 away
    # from 0.5 -> none, so 0), none for 1.0, w3 (0.2 s) for 2.02 and 2.2
    np.testing.assert_allclose(slots.pause, [0.3, 0.0, 0.0, 0.2, 0.2], atol=1e-6)
    feats = slot_features(slots, ["label", "duration", "pause"])
    assert feats.shape == (5, len(PP_TYPES) + 2)
    assert feats[2, PP_TYPES.index("ss")] == 1.0 and feats[2, :7].sum() == 1.0
    assert slot_features(slots, ["label"]).shape == (5, 7)


def test_sil_duration_takes_the_closest_word_end() -> None:
    times = np.array([[0.0, 1.0], [1.1, 1.2]])
    out = sil_durations(np.array([1.15, 3.0]), times, np.array([0.1, 0.5]), 0.25)
    np.testing.assert_allclose(out, [0.5, 0.0])  # 1.2 is 0.05 away, 1.0 is 0.15 away


def test_window_targets_and_word_ids_by_hand() -> None:
    feat = PPFeaturizer(LABELS, PPFeaturizerOptions(pp_features=["label"]))
    feat.aligner = StubAligner(PHRASES)
    seq = seq_of(TIMES, MARKS, 220, offset=10)
    wins = feat.windows([seq], window=4, stride=4)
    assert len(wins) == len(PHRASES)
    assert [int(w["target"][0]) for w in wins] == [1, 0, 0, 2, 0]  # COMMA, O, O, PERIOD, O
    assert [w["word_ids"].tolist() for w in wins] == [[10], [-1], [-1], [13, 11, 12], [-1]]
    # target slot j sits at position W-2; position W-1 is the next phrase (or padding)
    onehot = [w["feats"].argmax(axis=1).tolist() for w in wins]
    types = [PP_TYPES.index(p.label) for p in PHRASES]
    for j, w in enumerate(wins):
        assert onehot[j][2] == types[j]
        assert w["feats"][3].sum() == (1.0 if j + 1 < len(PHRASES) else 0.0)
        assert w["feats"][0].sum() == (1.0 if j >= 2 else 0.0)
    batch = feat.collate(wins)
    assert batch["feats"].shape == (5, 4, 7) and batch["word_ids"].shape == (5, 3)
    assert batch["word_ids"][0].tolist() == [10, -1, -1]
    stats = feat.slot_stats([seq])
    assert (stats["pp_slots"], stats["matched"], stats["unmatched"], stats["duplicate"]) == (
        5, 2, 1, 2)
    assert stats["smr"] == pytest.approx(0.5) and stats["missed_punct_ratio"] == 0.0


def test_utterance_without_prosody_gets_zero_predictions() -> None:
    feat = PPFeaturizer(LABELS, PPFeaturizerOptions())
    feat.aligner = StubAligner(PHRASES)
    seq = seq_of(TIMES, MARKS, 220)
    seq.feats = {}
    (win,) = feat.windows([seq], 4, 1)
    assert win["word_ids"].tolist() == [-1, 0, 1, 2, 3] and win["target"][0] == IGNORE


def test_slot_class_prefers_period() -> None:
    assert slot_class(np.array([0.0, 0.0])) == 0
    assert slot_class(np.array([1.0, 0.0])) == 1
    assert slot_class(np.array([1.0, 1.0])) == 2


def test_rule_phrases_on_a_flat_contour() -> None:
    feats = np.zeros((300, 9), np.float32)
    times = np.array([[0.1, 0.5], [0.5, 0.9], [1.5, 2.0], [2.0, 2.6]])
    phrases = rule_phrases(feats, times, 3.0)
    # gap 0.9-1.5 and 2.6-3.0 are silences; flat F0: no stress, no rise -> one io per IP
    assert [(p.label, p.start, p.end) for p in phrases] == [
        ("io", 0.0, 0.9), ("sil", 0.9, 1.5), ("io", 1.5, 2.6), ("sil", 2.6, 3.0)]


def test_tiny_end_to_end_fit_predict_save_load(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    train = synthetic_corpus(6, rng)
    test = synthetic_corpus(2, rng)
    config = resolve_config({
        "family": "prosodic_pp", "label_set": "moro2",
        "featurizer": {"streams": ["prosody"], "hmm": {"n_states": 3, "n_mix": 1, "n_iter": 2}},
        "train": {"window": 4, "stride": 1},
    })
    family = Registry.get("prosodic_pp")
    feat = family.make_featurizer(config)
    feat.fit(train)
    assert feat.class_weights.shape == (3,) and feat.class_weights[0] < feat.class_weights[2]
    model = family.make_model(config, feat)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    batch = feat.collate(feat.windows(train, 4, 1))
    first = model.loss(batch).item()
    for _ in range(30):
        opt.zero_grad()
        loss = model.loss(batch)
        loss.backward()
        opt.step()
    assert model.loss(batch).item() < first
    pred = predict_words(model, feat, test, 4, 1)
    assert pred.punct.shape == (12, 2) and (pred.counts >= 1).all()
    assert (pred.punct.sum(axis=1) <= 1.0 + 1e-6).all()
    feat.save(tmp_path)
    again = family.load_featurizer(tmp_path, config)
    for a, b in zip(feat.windows(test, 4, 1), again.windows(test, 4, 1), strict=True):
        np.testing.assert_array_equal(a["feats"], b["feats"])
        np.testing.assert_array_equal(a["word_ids"], b["word_ids"])
    assert isinstance(again, PPFeaturizer)


def test_option_errors_name_the_key_and_the_allowed_keys() -> None:
    def config(featurizer: dict, model: dict | None = None) -> object:
        return resolve_config({"family": "prosodic_pp", "label_set": "moro2",
                               "featurizer": featurizer, "model": model or {}})

    with pytest.raises(PunctInputError, match=r"unknown key featurizer\.bogus; allowed: "
                                              r"class_weights, hmm, insertion"):
        config({"bogus": 1})
    with pytest.raises(PunctInputError, match=r"unknown key featurizer\.hmm\.n_state; "
                                              r"allowed: frame_shift, hop, mix_schedule"):
        config({"hmm": {"n_state": 3}})
    with pytest.raises(PunctInputError, match=r"unknown key featurizer\.rules\.min_silence; "
                                              r"allowed: final_span, frame_shift, min_pp"):
        config({"rules": {"min_silence": 0.2}})
    with pytest.raises(PunctInputError, match=r"featurizer\.class_weights = 'inverse' is not "
                                              r"one of: balanced, none"):
        config({"class_weights": "inverse"})
    with pytest.raises(PunctInputError, match=r"featurizer\.pp_features: unknown PP feature "
                                              r"groups \['pitch'\]"):
        config({"pp_features": ["label", "pitch"]})
    with pytest.raises(PunctInputError, match=r"featurizer\.streams: prosodic_pp needs the "
                                              r"'prosody' stream"):
        config({"streams": ["fbank"]})
    with pytest.raises(PunctInputError, match=r"unknown key model\.hidden; allowed: dropout1, "
                                              r"dropout2, hidden1, hidden2"):
        config({}, {"hidden": 8})
    typed = config({"hmm": {"mix_schedule": [1, 2]}})
    assert typed.featurizer.hmm.mix_schedule == [1, 2] and typed.featurizer.hmm.n_states == 11
