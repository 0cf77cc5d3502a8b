"""The mini recipe end to end (stages 0-6) with the tiny configs, as CI runs it.

Runs the real stage driver in a temporary recipe directory, then checks the stage
contract (done markers, rerun does nothing), the tables (every system row filled)
and that every system beats the all-O baseline on the mini test set.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DRIVER = ROOT / "utils" / "stage_driver.sh"  # what egs/<corpus>/punct1/run.sh call
SYSTEMS = {
    "brnn_text": "brnn", "brnn_pause": "brnn",
    "autopunct_text": "autopunct", "autopunct_dg": "autopunct",
    "prosodic_pp": "prosodic_pp", "unipunc": "unipunc",
}

pytestmark = pytest.mark.slow


def run_recipe(recipe: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PUNCT_RECIPE_DIR=str(recipe))
    return subprocess.run(
        ["bash", str(DRIVER), "--corpus", "mini", "--model-conf-dir", "conf/model/tiny",
         "--baseline-systems", "brnn_text brnn_pause prosodic_pp",
         "--transformer-systems", "autopunct_text autopunct_dg unipunc",
         "--report-layouts", "autopunct moro unipunc",
         "--pause-twins", "brnn_pause:brnn_text autopunct_dg:autopunct_text",
         "--asr", "pocketsphinx", "--num-threads", "1", "--system-jobs", "2",
         "--export-dir", "exp/export/mini", "--export-systems", "brnn_text autopunct_text",
         *args],
        cwd=recipe, env=env, capture_output=True, text=True, timeout=3000,
    )


@pytest.fixture(scope="module")
def recipe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    recipe = tmp_path_factory.mktemp("mini_recipe")
    proc = run_recipe(recipe)
    if proc.returncode != 0:
        pytest.fail(f"recipe failed ({proc.returncode}):\n{proc.stdout[-6000:]}\n"
                    f"{proc.stderr[-6000:]}")
    (recipe / "run.out").write_text(proc.stdout, encoding="utf-8")
    return recipe


def test_every_stage_ran_and_is_marked_done(recipe: Path) -> None:
    for stage in range(8):
        info = json.loads((recipe / ".stages" / f"{stage}.done").read_text())
        assert info["stage"] == stage
    out = (recipe / "run.out").read_text()
    for stage in range(8):
        assert f"Stage {stage}: " in out


def test_stage7_exports_the_better_candidate_on_dev(recipe: Path) -> None:
    dev = {s: json.loads((recipe / "exp" / s / "decode_dev" / "scores.json").read_text())
           ["metrics"]["all"]["micro_f1"] for s in ("brnn_text", "autopunct_text")}
    best = max(dev, key=lambda s: (dev[s], s == "brnn_text"))  # ties: the order given
    card = (recipe / "exp" / "export" / "mini" / "README.md").read_text()
    assert f"# {best}: " in card and "## Selection" in card and "## Training" in card
    assert (recipe / "exp" / "export" / "mini" / "model.safetensors").is_file()


def test_rerun_does_nothing(recipe: Path) -> None:
    before = {p: p.stat().st_mtime_ns for p in (recipe / "exp").rglob("*") if p.is_file()}
    proc = run_recipe(recipe)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("already done") == 8
    after = {p: p.stat().st_mtime_ns for p in (recipe / "exp").rglob("*") if p.is_file()}
    assert before == after


def test_data_dirs_and_alignment(recipe: Path) -> None:
    for split in ("train", "dev", "test"):
        langs = set((recipe / "data" / split / "utt2lang").read_text().split()[1::2])
        assert langs == {"en", "es", "eu", "hu"}
    evaluation = json.loads((recipe / "data/test/align/dtw/eval.json").read_text())
    assert evaluation["overall"]["share_aligned"] == 1.0
    assert evaluation["overall"]["boundary_error_ms"]["median"] < 40


def test_experiment_dirs_are_complete(recipe: Path) -> None:
    for system in SYSTEMS:
        exp = recipe / "exp" / system
        for name in ("config.yaml", "env.json", "train.log"):
            assert (exp / name).is_file(), exp / name
        assert any(exp.glob("*.pt")), f"no checkpoint in {exp}"


def test_every_system_beats_the_all_o_baseline(recipe: Path) -> None:
    for system, _family in SYSTEMS.items():
        scores = json.loads((recipe / f"exp/{system}/decode_test/scores.json").read_text())
        overall = scores["metrics"]["all"]
        assert overall["micro_f1"] > overall["baseline_all_o"]["micro_f1"] + 0.05, system
        assert overall["words"] == 941
        for lang in ("en", "es", "eu", "hu"):
            assert scores["metrics"][lang]["micro_f1"] is not None
        if system.startswith("autopunct"):
            assert scores["cap_modelled"]
            assert overall["cap_micro_f1"] > 0.3


def test_tables_have_every_system_row_filled(recipe: Path) -> None:
    results = recipe / "results"
    for name in ("table4_micro_f1", "table5_class_f1", "table6_cap_f1", "table7_speed"):
        assert (results / f"{name}.md").is_file()
        assert (results / f"{name}.csv").is_file()
    with open(results / "table4_micro_f1.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    ours = {row["System"]: row for row in rows
            if row["System"] in SYSTEMS and row["Data"] == "test"}
    assert set(ours) == set(SYSTEMS)
    for row in ours.values():
        for lang in ("EN", "ES", "EU", "HU", "ALL"):
            assert row[lang] not in ("", "nan"), row
    assert any("BRNN" == row["System"] for row in rows)  # the published row beside ours
    assert (results / "class_f1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = (recipe / "RESULTS.md").read_text()
    assert "Table 4" in text and "autopunct_dg" in text


def test_pause_gain_table(recipe: Path) -> None:
    gains = json.loads((recipe / "exp" / "pause_gain.json").read_text())
    assert set(gains) == {f"{system} ({test_set})" for system in ("brnn_pause", "autopunct_dg")
                          for test_set in ("test", "test_asr")}
    for key, row in gains.items():
        system = key.split()[0]
        decode = f"decode_{row['set']}"
        ours = json.loads((recipe / f"exp/{system}/{decode}/scores.json").read_text())
        twin = json.loads((recipe / f"exp/{row['twin']}/{decode}/scores.json").read_text())
        expected = 100 * (ours["metrics"]["all"]["micro_f1"] - twin["metrics"]["all"]["micro_f1"])
        assert row["micro_gain"] == pytest.approx(expected, abs=0.11)
        assert 0 < row["micro_gain_p"] <= 1
        if row["micro_gain_low"] is not None:  # None below 5 utterances (test_asr)
            assert row["micro_gain_low"] <= row["micro_gain_high"]
    assert "## pause_gain" in (recipe / "RESULTS.md").read_text()


def test_asr_condition(recipe: Path) -> None:
    """Stage 2 with --asr: the English test utterances recognised by pocketsphinx, their
    labels projected; stage 6 scores every system on them against the reference."""
    asr = json.loads((recipe / "data/test_asr/asr.json").read_text())
    assert asr["recognizer"] == "pocketsphinx" and asr["utterances"] == 3
    assert asr["ref_words"] == 248 and 0.0 < asr["wer"] < 1.0
    assert set((recipe / "data/test_asr/utt2lang").read_text().split()[1::2]) == {"en"}
    penalty = json.loads((recipe / "exp" / "asr_penalty.json").read_text())
    assert set(penalty) == {f"{system} (test_asr)" for system in SYSTEMS}
    for key, row in penalty.items():
        system = key.split()[0]
        scores = json.loads((recipe / f"exp/{system}/decode_test_asr/scores.json").read_text())
        overall = scores["metrics"]["all"]
        assert overall["asr"]["wer"] == pytest.approx(asr["wer"])
        assert row["asr_micro_f1"] == pytest.approx(100 * overall["micro_f1"], abs=0.051)
        ref = json.loads((recipe / f"exp/{system}/decode_test/scores.json").read_text())
        assert row["ref_micro_f1"] == pytest.approx(100 * ref["metrics"]["en"]["micro_f1"],
                                                    abs=0.051)
    text = (recipe / "RESULTS.md").read_text()
    assert "## asr_penalty" in text and "## recogniser_test_asr" in text


def test_training_jobs_decode_and_stage_6_skips_what_they_did(recipe: Path) -> None:
    """On CPU each training job decodes and scores its system's test sets (their .done
    holds best.pt's checksum line) and stage 6 finds them done; rerun without its marker,
    stage 6 decodes again only a set whose .done no longer matches best.pt."""
    out = (recipe / "run.out").read_text()
    for system in SYSTEMS:
        stamp = (recipe / "exp" / system / "best.pt.sha256").read_text()
        decodes = [d for d in (recipe / "exp" / system).glob("decode_test*") if d.is_dir()]
        assert {d.name for d in decodes} >= {"decode_test", "decode_test_asr"}
        for d in decodes:
            assert (d / ".done").read_text() == stamp, d
        assert f"  {system}: decoded and scored with this best.pt already" in out
    stale = recipe / "exp" / "brnn_text" / "decode_test_asr"
    (stale / ".done").write_text("0" * 64 + "  best.pt\n")
    kept = recipe / "exp" / "brnn_pause" / "decode_test" / "scores.json"
    before = kept.stat().st_mtime_ns
    (recipe / ".stages" / "6.done").unlink()
    proc = run_recipe(recipe, "--stage", "6", "--stop-stage", "6")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "brnn_text: decoded and scored" not in proc.stdout
    assert proc.stdout.count("decoded and scored with this best.pt already") == len(SYSTEMS) - 1
    assert (stale / ".done").read_text() == (stale.parent / "best.pt.sha256").read_text()
    decode_log = (recipe / "exp" / "brnn_text" / "log" / "decode.log").read_text()
    assert "--data-dir data/test_asr" in decode_log and "--data-dir data/test " not in decode_log
    assert kept.stat().st_mtime_ns == before
