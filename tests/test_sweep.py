"""Predictions-per-token sweep: rows, Courtland Table 2 layout, plot."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from helpers.tiny import save_untrained
from helpers.tinybert import build_tiny_bert

from punct.bin import sweep as sweep_cli
from punct.wordtable import WordRow, write_word_table


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """An untrained AutoPunct system (window 16 pieces) and a 3-utterance test set."""
    root = tmp_path_factory.mktemp("sweep")
    words = ("yes", "no", "stop", "go")
    enc = build_tiny_bert(root / "enc", words=words)
    exp = save_untrained({
        "family": "autopunct", "label_set": "iwslt4", "featurizer": {"encoder": str(enc)},
        "model": {"encoder_train_layers": 0, "head": {"hidden": 16}, "cap_head": {"hidden": 16}},
        "train": {"window": 16, "stride": 16},
        "decode": {"batch_size": 8, "bf16": "off"},
    }, root / "exp", seed=1)
    utts = {}
    for u in range(3):
        utts[f"u{u}"] = [WordRow(f"u{u}", i, words[(i + u) % 4], words[(i + u) % 4],
                                 ("PERIOD",) if words[(i + u) % 4] == "stop" else (), "O",
                                 None, None, None) for i in range(30)]
    data = root / "test"
    write_word_table(data / "words.tsv", utts)
    return exp, data


def test_sweep_cli_rows_files_and_trend(tiny: tuple[Path, Path], tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    exp, data = tiny
    out = tmp_path / "sweep"
    rc = sweep_cli.main(["--exp-dir", str(exp), "--data-dir", str(data), "--out-dir", str(out),
                         "--per-token", "3", "1", "2", "--reps", "1", "--aggregate", "sum"])
    assert rc == 0
    assert "N=3" in capsys.readouterr().out
    rows = json.loads((out / "sweep.json").read_text())["rows"]
    assert [r["per_token"] for r in rows] == [1, 2, 3]
    assert [r["stride"] for r in rows] == [16, 8, 5]  # window 16 // N
    assert all(r["aggregate"] == "sum" and r["window"] == 16 for r in rows)
    assert rows[0]["relative_runtime"] == 1.0
    # 30 one-piece words, 14 per window: N=1 predicts every word once, more N more often
    assert rows[0]["predictions_per_word"] == 1.0
    assert 1.0 < rows[1]["predictions_per_word"] < rows[2]["predictions_per_word"] <= 3.0
    assert all(0.0 <= r["micro_f1"] <= 1.0 and r["seconds"] > 0 for r in rows)
    frame = pd.read_csv(out / "sweep.csv")
    assert list(frame["per_token"]) == [1, 2, 3] and "relative_runtime" in frame
    assert (out / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (out / "sweep.md").read_text()
    assert "| Predictions per token | exp micro F1 | exp macro F1 | exp CPU Runtime |" in md
    assert "| 1 | " in md and "| 76.3 | 1.0x |" in md


def test_table2_markdown_hand_checked() -> None:
    rows = [{"system": "a", "per_token": 1, "micro_f1": 0.5, "macro_f1": 0.25,
             "relative_runtime": 1.0},
            {"system": "a", "per_token": 6, "micro_f1": 0.625, "macro_f1": 0.5,
             "relative_runtime": 4.96},
            {"system": "b", "per_token": 6, "micro_f1": 0.7, "macro_f1": 0.6,
             "relative_runtime": 3.0}]
    lines = sweep_cli.table2_markdown(rows, "cpu").splitlines()
    assert lines[2] == ("| Predictions per token | a micro F1 | a macro F1 | a CPU Runtime "
                        "| b micro F1 | b macro F1 | b CPU Runtime | Courtland Overall F1 "
                        "(macro) | Courtland CPU Runtime |")
    assert lines[4] == "| 1 | 50.0 | 25.0 | 1.0x |  |  |  | 76.3 | 1.0x |"
    assert lines[5] == "| 6 | 62.5 | 50.0 | 5.0x | 70.0 | 60.0 | 3.0x | 83.2 | 5.2x |"
    gpu = sweep_cli.table2_markdown(rows[:1], "cuda").splitlines()
    assert gpu[4] == "| 1 | 50.0 | 25.0 | 1.0x | 76.3 | 1.0x |" and "GPU Runtime" in gpu[2]


def test_sweep_cli_errors(tiny: tuple[Path, Path], tmp_path: Path,
                          capsys: pytest.CaptureFixture[str]) -> None:
    exp, data = tiny
    base = ["--exp-dir", str(exp), "--data-dir", str(data), "--out-dir", str(tmp_path / "o")]
    assert sweep_cli.main([*base, "--per-token", "0"]) == 1
    assert "must be >= 1" in capsys.readouterr().err
    assert sweep_cli.main([*base, "--per-token", "20"]) == 1  # more than the window
    assert "predictions per token must be in 1..16" in capsys.readouterr().err
    assert sweep_cli.main(["--exp-dir", str(tmp_path / "none"), "--data-dir", str(data),
                           "--out-dir", str(tmp_path / "o")]) == 2
