"""punct.bin.pause_gain: pause-aware systems against their text-only twins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.scored import hypothesis, reference, score_system

from punct.bin.pause_gain import main, pair_gain, parse_pair
from punct.errors import PunctInputError
from punct.wordtable import read_word_table, write_word_table


def scored_set(root: Path, test_set: str, misses: dict[str, float],
               label_set: str = "iwslt4") -> dict[str, tuple[float, float]]:
    """A reference set under root/data and one scored system per entry of ``misses``;
    their micro-F1 and macro-F1 in %."""
    ref = reference(30, 25, seed=len(test_set))
    ref_path = root / "data" / test_set / "words.tsv"
    ref_path.parent.mkdir(parents=True)
    write_word_table(ref_path, ref)
    out = {}
    for k, (system, miss) in enumerate(misses.items()):
        path = score_system(root / "exp", system, test_set, ref_path,
                            hypothesis(ref, miss, k), label_set)
        metrics = json.loads(path.read_text())["metrics"]["all"]
        out[system] = (100 * metrics["micro_f1"], 100 * metrics["macro_f1"])
    return out


def test_gain_per_pair_and_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f1 = scored_set(tmp_path, "test", {"brnn_pause": 0.05, "brnn_text": 0.3})
    mixed = scored_set(tmp_path, "test_mixed", {"brnn_pause": 0.2, "brnn_text": 0.2})
    exp = tmp_path / "exp"
    gain = pair_gain(exp, "brnn_pause", "brnn_text", "test", samples=300)
    assert gain is not None
    assert (gain.micro_f1, gain.twin_micro_f1) == (round(f1["brnn_pause"][0], 1),
                                                   round(f1["brnn_text"][0], 1))
    assert gain.micro_gain == pytest.approx(f1["brnn_pause"][0] - f1["brnn_text"][0], abs=0.11)
    assert gain.macro_gain == pytest.approx(f1["brnn_pause"][1] - f1["brnn_text"][1], abs=0.11)
    # a clear gain on 30 utterances: its 95 % interval lies above zero
    assert 0 < gain.micro_gain_low < gain.micro_gain < gain.micro_gain_high
    assert gain.micro_gain_p < 0.01
    out = tmp_path / "gain.json"
    assert main(["--exp-dir", str(exp), "--sets", "test test_mixed", "--pair",
                 "brnn_pause:brnn_text", "--pair", "autopunct_dg:autopunct_text",
                 "--json", str(out), "--samples", "300"]) == 0
    rows = json.loads(out.read_text())
    assert list(rows) == ["brnn_pause (test)", "brnn_pause (test_mixed)"]
    same = rows["brnn_pause (test_mixed)"]  # two systems of the same error rate
    assert same["micro_gain"] == pytest.approx(
        mixed["brnn_pause"][0] - mixed["brnn_text"][0], abs=0.11)
    assert same["micro_gain_low"] < 0 < same["micro_gain_high"] and same["micro_gain_p"] > 0.05
    assert rows["brnn_pause (test)"]["twin"] == "brnn_text"
    captured = capsys.readouterr()
    assert f"{gain.micro_gain:+.1f} (95 % [" in captured.out
    assert "autopunct_dg vs autopunct_text on test left out" in captured.err
    # the decoded word tables pruned since: the figures stay, without the test
    (exp / "brnn_text" / "decode_test" / "words.tsv").unlink()
    pruned = pair_gain(exp, "brnn_pause", "brnn_text", "test")
    assert pruned is not None and pruned.micro_gain == gain.micro_gain
    assert (pruned.micro_gain_low, pruned.micro_gain_high, pruned.micro_gain_p) == (
        None, None, None)
    assert "no significance test" in capsys.readouterr().err


def test_bad_pairs_and_label_sets(tmp_path: Path) -> None:
    assert parse_pair("a:b") == ("a", "b")
    for bad in ("a", "a:", ":b", "a:b:c"):
        with pytest.raises(PunctInputError, match="--pair expects"):
            parse_pair(bad)
    scored_set(tmp_path, "test", {"dense": 0.1}, "moro2")
    ref_path = tmp_path / "data" / "test" / "words.tsv"
    score_system(tmp_path / "exp", "text", "test", ref_path,
                 hypothesis(read_word_table(ref_path), 0.1, 0), "full13")
    with pytest.raises(PunctInputError, match="different label sets"):
        pair_gain(tmp_path / "exp", "dense", "text", "test")
    broken = tmp_path / "exp" / "broken" / "decode_test"
    broken.mkdir(parents=True)
    (broken / "scores.json").write_text("{", encoding="utf-8")
    assert main(["--exp-dir", str(tmp_path / "exp"), "--pair", "broken:text"]) == 1
