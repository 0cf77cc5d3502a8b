"""Decisions restricted to the sets of marks seen in training (decode.combinations)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from punct.config import deep_merge, resolve_config
from punct.engine.combinations import combination_matrix, constrained_marks, seen_combinations
from punct.engine.decode import WordPredictions, decide, decode_settings
from punct.errors import PunctInputError
from punct.train.thresholds import tune_thresholds
from punct.train.trainer import _resolve_combinations
from punct.wordtable import WordRow, write_word_table

LABELS = ("PERIOD", "EXCLAMATION", "QUOTE")


def test_seen_combinations_lists_distinct_sets_in_order() -> None:
    a = np.array([[1, 0, 0], [0, 0, 0], [1, 0, 1], [1, 0, 0]], dtype=np.float32)
    b = np.array([[0, 1, 1], [0, 1, 0], [1, 0, 1]], dtype=np.float32)
    assert seen_combinations([a, b], LABELS) == [
        ["PERIOD"], ["EXCLAMATION"], ["PERIOD", "QUOTE"], ["EXCLAMATION", "QUOTE"]]
    assert seen_combinations([np.zeros((0, 3))], LABELS) == []


def test_constrained_decision_picks_best_allowed_set() -> None:
    allowed = combination_matrix([["PERIOD"], ["EXCLAMATION"], ["PERIOD", "QUOTE"]], LABELS)
    assert allowed.tolist()[0] == [False, False, False]  # the empty set is always allowed
    probs = np.array([
        [0.8, 0.7, 0.1],   # both final marks above 0.5: never seen together -> PERIOD
        [0.6, 0.9, 0.2],   # -> EXCLAMATION, the stronger one
        [0.7, 0.1, 0.8],   # PERIOD + QUOTE was seen
        [0.05, 0.2, 0.9],  # QUOTE alone was never seen; PERIOD+QUOTE sums -2.9 + 2.2 < 0
                           # (the empty set) -> O
        [0.2, 0.1, 0.3],   # nothing above threshold -> O
    ])
    marks = constrained_marks(probs, 0.5, allowed)
    assert marks.tolist() == [
        [True, False, False], [False, True, False], [True, False, True],
        [False, False, False], [False, False, False]]
    # without a restriction (every set allowed) the rule is plain thresholding
    every = np.array([[i >> k & 1 for k in range(3)] for i in range(8)], dtype=bool)
    thr = np.array([0.3, 0.6, 0.5])
    assert (constrained_marks(probs, thr, every) == (probs >= thr)).all()
    with pytest.raises(ValueError, match="unknown mark"):
        combination_matrix([["COMMA"]], LABELS)


def test_decide_and_settings_use_the_trained_list() -> None:
    plain = {"family": "autopunct", "label_set": "full13",
             "decode": {"combinations": [["PERIOD"], ["EXCLAMATION"]]}}
    config = resolve_config(plain)
    st = decode_settings(config)
    assert st.combinations == (("PERIOD",), ("EXCLAMATION",))
    labels = ("COMMA", "PERIOD", "QUESTION", "EXCLAMATION") + ("x",) * 9
    punct = np.zeros((1, 13))
    punct[0, 1], punct[0, 3] = 0.6, 0.9
    pred = WordPredictions(punct, None, np.ones(1), 0.0, 1, False)
    from helpers.tiny import seq
    one = [seq(["wow"])]
    free, _ = decide(pred, one, labels, 0.5)
    assert free[0, [1, 3]].tolist() == [True, True]
    marks, _ = decide(pred, one, labels, 0.5, combinations=st.combinations)
    assert marks[0].nonzero()[0].tolist() == [3]
    # "seen" in a config that was never trained decodes without a restriction
    untrained = resolve_config(deep_merge(plain, {"decode": {"combinations": "seen"}}))
    assert decode_settings(untrained).combinations is None
    # an exclusive label set decodes by argmax whatever the setting
    iwslt = config.replace(label_set="iwslt4")
    assert decode_settings(iwslt).combinations is None


def test_config_validation_names_the_key(tmp_path: Path) -> None:
    base = {"family": "autopunct"}
    resolve_config(deep_merge(base, {"decode": {"combinations": "seen"}}))
    resolve_config(deep_merge(base, {"decode": {"combinations": [["PERIOD", "QUOTE"]]}}))
    with pytest.raises(PunctInputError, match=r"decode\.combinations"):
        resolve_config(deep_merge(base, {"decode": {"combinations": "some"}}), path=tmp_path)
    with pytest.raises(PunctInputError, match=r"decode\.combinations"):
        resolve_config(deep_merge(base, {"decode": {"combinations": ["PERIOD"]}}))


def test_trainer_resolves_seen_from_the_training_table(tmp_path: Path) -> None:
    rows = {"u1": [WordRow("u1", 0, "hi", "Hi", ("EXCLAMATION", "QUOTE"), "FIRST_CAP",
                           None, None, None),
                   WordRow("u1", 1, "yes", "yes", ("PERIOD",), "O", None, None, None),
                   WordRow("u1", 2, "no", "no", (), "O", None, None, None)]}
    (tmp_path / "train").mkdir()
    write_word_table(tmp_path / "train" / "words.tsv", rows)
    config = resolve_config({"family": "autopunct", "decode": {"combinations": "seen"}})
    resolved = _resolve_combinations(config, tmp_path / "train")
    assert resolved.decode.combinations == [["PERIOD"], ["EXCLAMATION", "QUOTE"]]
    assert config.decode.combinations == "seen"  # the caller's config is untouched
    yaml.safe_dump(resolved.to_dict())  # plain lists: config.yaml can hold them
    iwslt = config.replace(label_set="iwslt4")
    assert _resolve_combinations(iwslt, tmp_path / "train").decode.combinations == "all"


def test_thresholds_tuned_under_the_restriction() -> None:
    rng = np.random.default_rng(0)
    n = 400
    ref = np.zeros((n, 3), dtype=bool)
    ref[:100, 0] = True            # PERIOD
    ref[100:160, 1] = True         # EXCLAMATION
    probs = rng.uniform(0.0, 0.3, (n, 3))
    probs[:100, 0] = rng.uniform(0.85, 0.99, 100)
    probs[:100, 1] = rng.uniform(0.6, 0.8, 100)     # EXCLAMATION fires beside PERIOD ...
    probs[100:160, 1] = rng.uniform(0.7, 0.95, 60)  # ... as strongly as where it is right
    allowed = combination_matrix([["PERIOD"], ["EXCLAMATION"]], LABELS)
    free = tune_thresholds(probs, ref, LABELS)
    tied = tune_thresholds(probs, ref, LABELS, allowed=allowed)
    assert tied.f1_after >= tied.f1_before
    assert tied.f1_after > free.f1_after
    assert tied.f1_after == pytest.approx(1.0)
