"""punct.bin.pause_gain: pause-aware systems against their text-only twins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from punct.bin.pause_gain import main, pair_gain, parse_pair
from punct.errors import PunctInputError


def write_scores(exp: Path, system: str, test_set: str, micro: float, macro: float,
                 label_set: str = "full13") -> None:
    out = exp / system / f"decode_{test_set}"
    out.mkdir(parents=True)
    (out / "scores.json").write_text(json.dumps({
        "format": "punct-scores/1", "system": system, "test_set": test_set,
        "label_set": label_set,
        "metrics": {"all": {"micro_f1": micro, "macro_f1": macro}}}), encoding="utf-8")


def test_gain_per_pair_and_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_scores(tmp_path, "brnn_pause", "test", 0.2734, 0.061)
    write_scores(tmp_path, "brnn_text", "test", 0.2152, 0.053)
    write_scores(tmp_path, "brnn_pause", "test_mixed", 0.20, 0.05)
    write_scores(tmp_path, "brnn_text", "test_mixed", 0.2152, 0.053)
    gain = pair_gain(tmp_path, "brnn_pause", "brnn_text", "test")
    assert gain is not None
    assert (gain.micro_f1, gain.twin_micro_f1, gain.micro_gain) == (27.3, 21.5, 5.8)
    assert gain.macro_gain == pytest.approx(0.8)
    out = tmp_path / "gain.json"
    assert main(["--exp-dir", str(tmp_path), "--sets", "test test_mixed", "--pair",
                 "brnn_pause:brnn_text", "--pair", "autopunct_dg:autopunct_text",
                 "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert list(rows) == ["brnn_pause (test)", "brnn_pause (test_mixed)"]
    assert rows["brnn_pause (test_mixed)"]["micro_gain"] == pytest.approx(-1.5)
    assert rows["brnn_pause (test)"]["twin"] == "brnn_text"
    captured = capsys.readouterr()
    assert "+5.8" in captured.out
    assert "autopunct_dg vs autopunct_text on test left out" in captured.err


def test_bad_pairs_and_label_sets(tmp_path: Path) -> None:
    assert parse_pair("a:b") == ("a", "b")
    for bad in ("a", "a:", ":b", "a:b:c"):
        with pytest.raises(PunctInputError, match="--pair expects"):
            parse_pair(bad)
    write_scores(tmp_path, "dense", "test", 0.5, 0.5, "moro2")
    write_scores(tmp_path, "text", "test", 0.4, 0.4, "full13")
    with pytest.raises(PunctInputError, match="different label sets"):
        pair_gain(tmp_path, "dense", "text", "test")
    (tmp_path / "broken" / "decode_test").mkdir(parents=True)
    (tmp_path / "broken" / "decode_test" / "scores.json").write_text("{", encoding="utf-8")
    assert main(["--exp-dir", str(tmp_path), "--pair", "broken:text"]) == 1
