"""Run-time records of a recipe: stage markers and per-system training provenance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from punct.bin import stage_times
from punct.score.training import system_training


def write_exp(exp: Path, seconds: list[float], best: list[bool], sha: str = "a" * 40) -> None:
    exp.mkdir(parents=True)
    history = [{"epoch": k + 1, "seconds": s, "best": b}
               for k, (s, b) in enumerate(zip(seconds, best, strict=True))]
    (exp / "history.json").write_text(json.dumps(history), encoding="utf-8")
    (exp / "env.json").write_text(json.dumps({"git_sha": sha, "threads": 2, "device": "cpu"}),
                                  encoding="utf-8")


def test_training_records_per_system(tmp_path: Path) -> None:
    stages = tmp_path / ".stages"
    stages.mkdir()
    for n, (name, sec) in enumerate([("data", 3), ("prepare", 4)]):
        (stages / f"{n}.done").write_text(json.dumps({"stage": n, "name": name, "seconds": sec}))
    write_exp(tmp_path / "exp" / "nagy", [120.0, 60.0, 60.0], [True, True, False], "b" * 40)
    (tmp_path / "exp" / "nagy" / "train.log").write_text(
        "2026-11-24 07:02:49 train nagy on 10 words; seed 1; precision fp32 (train.precision: "
        "auto); dropout masks bytes\nepoch 1\n"
        "2026-11-24 08:00:00 train nagy on 10 words; seed 1; precision bf16 (train.precision: "
        "auto); dropout masks bytes\n", encoding="utf-8")  # resumed: the last header counts
    (tmp_path / "exp" / "untrained").mkdir()
    out, train_out = tmp_path / "st.json", tmp_path / "tt.json"
    assert stage_times.main(["--stages-dir", str(stages), "--out", str(out),
                             "--exp-dir", str(tmp_path / "exp"),
                             "--systems", "nagy untrained missing",
                             "--train-out", str(train_out)]) == 0
    assert json.loads(out.read_text())["total_seconds"] == 7
    record = json.loads(train_out.read_text())
    assert record == {"nagy": {"train_minutes": 4.0, "epochs": 3, "best_epoch": 2,
                               "git_sha": "bbbbbbbbbb", "threads": 2, "device": "cpu", "cpu": None,
                               "precision": "bf16"}}
    # a training outside a git checkout records no commit; without a log, no precision
    write_exp(tmp_path / "exp" / "nogit", [30.0], [True], sha="")
    record = system_training(tmp_path / "exp" / "nogit")
    assert record["git_sha"] == "unknown"
    assert record["precision"] is None


def test_bad_history_names_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exp = tmp_path / "exp" / "x"
    exp.mkdir(parents=True)
    (exp / "history.json").write_text("{not json", encoding="utf-8")
    assert stage_times.main(["--stages-dir", str(tmp_path), "--out", str(tmp_path / "o.json"),
                             "--exp-dir", str(tmp_path / "exp"), "--systems", "x",
                             "--train-out", str(tmp_path / "t.json")]) == 1
    assert "history.json" in capsys.readouterr().err


def test_train_out_needs_the_exp_dir(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as err:
        stage_times.main(["--out", str(tmp_path / "o.json"), "--train-out", str(tmp_path / "t")])
    assert err.value.code == 2
