"""A CI-sized IWSLT 2012 run: stages 0-6 of the real stage driver on 8,000 training words
of the dev2012 fallback, a tiny BRNN, tested on the whole of test2011 and test2011_full.

Checks the fallback split, the repairs report, that the BRNN is clearly above the all-O
baseline on test2011 (micro-F1 of all-O is 0), and that the Courtland/Nagy tables are
built from the scores.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from punct.bin import report, score

ROOT = Path(__file__).resolve().parents[1]
DRIVER = ROOT / "utils" / "stage_driver.sh"  # what egs/<corpus>/punct1/run.sh call
SHARED = ROOT.parent / "shared" / "data" / "iwslt2012"
TINY = ROOT / "egs" / "iwslt2012" / "punct1" / "conf" / "model" / "tiny"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not SHARED.is_dir(), reason="no shared IWSLT 2012 copy"),
]


@pytest.fixture(scope="module")
def recipe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    recipe = tmp_path_factory.mktemp("iwslt_recipe")
    env = dict(os.environ, PUNCT_RECIPE_DIR=str(recipe), IWSLT2012=str(SHARED),
               iwslt_prepare_opts="--max-train-words 8000 --max-dev-words 2000")
    proc = subprocess.run(
        ["bash", str(DRIVER), "--corpus", "iwslt2012", "--model-conf-dir", str(TINY),
         "--aligner", "none", "--test-sets", "test2011 test2011_full",
         "--baseline-systems", "brnn_text", "--transformer-systems", "", "--num-threads", "1",
         "--report-layouts", "courtland nagy"],
        cwd=recipe, env=env, capture_output=True, text=True, timeout=600,
    )
    if proc.returncode != 0:
        pytest.fail(f"recipe failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n"
                    f"{proc.stderr[-4000:]}")
    (recipe / "run.out").write_text(proc.stdout, encoding="utf-8")
    # Score each test set with its data/<set>/score_label_set (full13 for test2011_full),
    # as stage 6 does when it honours that file.
    for test_set in ("test2011", "test2011_full"):
        out = recipe / "exp" / "brnn_text" / f"decode_{test_set}"
        label_set = (recipe / "data" / test_set / "score_label_set").read_text().strip()
        assert score.main([
            "--ref", str(recipe / "data" / test_set / "words.tsv"),
            "--hyp", str(out / "words.tsv"), "--decode-info", str(out / "decode.json"),
            "--label-set", label_set, "--out", str(out / "scores.json")]) == 0
    return recipe


def scores(recipe: Path, test_set: str) -> dict:
    path = recipe / "exp" / "brnn_text" / f"decode_{test_set}" / "scores.json"
    return json.loads(path.read_text(encoding="utf-8"))


def test_stages_ran_with_the_fallback_split(recipe: Path) -> None:
    for stage in range(7):
        assert (recipe / ".stages" / f"{stage}.done").is_file()
    out = (recipe / "run.out").read_text()
    assert "train2012 not found; fallback without train2012" in out
    assert "removed 6 invalid UTF-8 sequence(s) on 4 line(s)" in out
    info = json.loads((recipe / "data" / "train" / "prep.json").read_text())
    assert info["words"] == 8000
    assert json.loads((recipe / "data" / "test2011" / "prep.json").read_text())["words"] == 12626


def test_brnn_clearly_beats_all_o_on_test2011(recipe: Path) -> None:
    m = scores(recipe, "test2011")["metrics"]["all"]
    assert m["words"] == 12626
    assert m["baseline_all_o"]["micro_f1"] == 0.0
    assert m["micro_f1"] > 0.15
    classes = m["punct"]["classes"]
    assert classes["PERIOD"]["f1"] > 0.1 or classes["COMMA"]["f1"] > 0.1
    assert scores(recipe, "test2011")["label_set"] == "iwslt4"
    full = scores(recipe, "test2011_full")
    assert full["label_set"] == "full13"
    assert full["metrics"]["all"]["words"] == 12625
    assert full["metrics"]["all"]["punct"]["classes"]["QUOTE"]["support"] == 68
    assert full["metrics"]["all"]["cap"]["micro"]["support"] > 1000


def test_courtland_and_nagy_tables(recipe: Path) -> None:
    assert (recipe / "results" / "courtland_table1.md").is_file()  # stage 6
    out = recipe / "tables"  # again, after scoring test2011_full with full13
    rc = report.main(["--scores", str(recipe / "exp" / "*" / "decode_*" / "scores.json"),
                      "--out-dir", str(out), "--layouts", "courtland,nagy", "--no-plots"])
    assert rc == 0
    table1 = (out / "courtland_table1.md").read_text()
    ours = [line for line in table1.splitlines() if line.startswith("| ours ")]
    # test2011 only: test2011_full (full13, with colons, quotes...) is not a 3-class test.
    assert len(ours) == 2 and "brnn_text" in ours[0] and "test2011 " in ours[0]
    assert "| published: Nagy 2021 (Table 4)" in (out / "nagy_table4.md").read_text()
