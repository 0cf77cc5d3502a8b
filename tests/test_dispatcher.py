"""The top-level ./run.sh (set-up, then a recipe; --corpus all), the stage driver's entry
checks and the recipes' data checks (local/<corpus>/check_data.sh)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"

FAKE_RECIPE = """#!/usr/bin/env bash
# a recipe that records its arguments and writes a RESULTS.md (or fails with $1's code)
set -euo pipefail
cd "$(dirname "$0")"
echo "$*" > args
[ "{fail}" = 0 ] || exit {fail}
cat > RESULTS.md <<'MD'
# Results: {name}

| generated | 2026-11-24 06:00:00 UTC |
| git commit | feed (clean) |

## Tables

### Table 1 of {name}

| System | F1 |
|---|---|
| x | 42.0 |
MD
"""


def fake_root(tmp_path: Path) -> Path:
    """A checkout with the real run.sh and path.sh, a set-up that only leaves a mark, and
    recipes: ok (data present), gone (data missing), broken (present, the recipe fails),
    nocheck (no local/nocheck/check_data.sh)."""
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copy(ROOT / "run.sh", root / "run.sh")
    shutil.copy(ROOT / "path.sh", root / "path.sh")
    (root / ".venv").symlink_to((ROOT / ".venv").resolve())
    (root / "punct").symlink_to(ROOT / "punct")
    (root / "setup.sh").write_text("#!/usr/bin/env bash\ntouch \"$(dirname \"$0\")/setup.ran\"\n")
    checks = {"ok": "echo ok: using /data/ok", "broken": "true",
              "gone": "echo 'gone: set GONE in conf/db.sh to your copy'; exit 2"}
    for name, fail in (("ok", 0), ("gone", 0), ("broken", 3), ("nocheck", 0)):
        recipe = root / "egs" / name / "punct1" / "run.sh"
        recipe.parent.mkdir(parents=True)
        recipe.write_text(FAKE_RECIPE.replace("{fail}", str(fail)).replace("{name}", name))
        if name in checks:
            check = root / "local" / name / "check_data.sh"
            check.parent.mkdir(parents=True)
            check.write_text(f"#!/usr/bin/env bash\n[ \"$1\" = downloads ] || exit 9\n"
                             f"{checks[name]}\n")
    for script in root.rglob("*.sh"):
        script.chmod(0o755)
    return root


def run(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(root / "run.sh"), *args], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, **env))


def test_corpus_all_runs_present_recipes_and_combines(tmp_path: Path) -> None:
    root = fake_root(tmp_path)
    proc = run(root, "--corpus", "all", "--stop-stage", "6", "--nj", "1")
    assert proc.returncode == 3, proc.stdout + proc.stderr  # the first failed recipe's exit
    assert (root / "setup.ran").exists()
    egs = root / "egs"
    assert (egs / "ok" / "punct1" / "args").read_text() == "--stop-stage 6 --nj 1\n"
    assert (egs / "broken" / "punct1" / "args").exists()
    assert not (egs / "gone" / "punct1" / "args").exists()  # data missing: not run
    assert not (egs / "nocheck" / "punct1" / "args").exists()  # no data check: not run
    assert "nocheck: no data check" in proc.stdout and "broken: recipe failed" in proc.stderr
    report = (root / "RESULTS_ALL.md").read_text()
    assert "| ok | present | exit 0 | [RESULTS.md](egs/ok/punct1/RESULTS.md)" in report
    assert "| broken | present | **failed (exit 3)** | none |" in report
    assert "| gone | **missing** | not run | none |" in report
    assert "| nocheck | no data check | not run | none |" in report
    assert "### gone\n\n```\ngone: set GONE in conf/db.sh to your copy\n```" in report
    assert "## ok" in report and "#### Table 1 of ok" in report and "| x | 42.0 |" in report
    assert "Recipes run by `./run.sh --corpus all --stop-stage 6 --nj 1`." in report


def test_one_corpus_goes_to_its_recipe(tmp_path: Path) -> None:
    root = fake_root(tmp_path)
    proc = run(root, "--stage", "2", "--corpus=gone")  # no data check for a named recipe
    assert proc.returncode == 0, proc.stderr
    assert (root / "egs" / "gone" / "punct1" / "args").read_text() == "--stage 2\n"
    assert (root / "setup.ran").exists() and not (root / "RESULTS_ALL.md").exists()
    bad = run(root, "--corpus", "nope")
    assert bad.returncode == 1
    assert "no recipe egs/nope/punct1 (known: broken gone nocheck ok)" in bad.stderr
    assert run(root, "--corpus").returncode == 1


def test_help_lists_the_driver_options() -> None:
    proc = run(ROOT, "--help")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("Usage: ./run.sh [--corpus NAME|all]")
    assert "--corpus all    every recipe whose data is present" in out
    for option in ("--stage 0", "--stop-stage 7", "--export-dir", "--baseline-systems",
                   "--report-layouts"):
        assert option in out


def test_driver_needs_a_recipe_dir(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PUNCT_RECIPE_DIR"}
    proc = subprocess.run(["bash", str(ROOT / "utils" / "stage_driver.sh"), "--stage", "9"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "PUNCT_RECIPE_DIR must name the recipe" in proc.stderr
    assert not (tmp_path / "exp").exists()


def stage4(recipe: Path, *options: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """Stage 4 of the stage driver in ``recipe`` with ``options``."""
    env = dict(os.environ, PUNCT_RECIPE_DIR=str(recipe))
    return subprocess.run(
        ["bash", str(ROOT / "utils" / "stage_driver.sh"), "--stage", "4", "--stop-stage", "4",
         *options], cwd=recipe, env=env, capture_output=True, text=True, timeout=timeout)


POOL = ("--model-conf-dir", str(ROOT / "conf" / "model" / "tiny"), "--baseline-systems",
        "brnn_text prosodic_pp", "--train-set", "nope", "--system-jobs", "2",
        "--num-threads", "2")


def test_driver_pool_runs_systems_at_once_and_names_the_failed_ones(tmp_path: Path) -> None:
    """Stage 4 with two job slots: both trainings start (their logs exist), both fail on a
    missing training set, and the driver exits naming both, without a done marker."""
    proc = stage4(tmp_path, *POOL)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    failed = re.search(r"training failed: (.*) \(see exp", proc.stdout)
    assert failed and sorted(failed.group(1).split()) == ["brnn_text", "prosodic_pp"]
    for system in ("brnn_text", "prosodic_pp"):
        log = (tmp_path / "exp" / system / "log" / "train.log").read_text()
        assert "--num-threads 1" in log and "data/nope" in log
    assert not (tmp_path / ".stages" / "4.done").exists()


def test_driver_pool_gives_a_lone_training_every_thread(tmp_path: Path) -> None:
    """Two job slots but one system left to train (the other is done): it gets both
    threads, not one slot's share."""
    (tmp_path / "exp" / "brnn_text").mkdir(parents=True)
    (tmp_path / "exp" / "brnn_text" / ".done").touch()
    proc = stage4(tmp_path, *POOL)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "brnn_text: trained already" in proc.stdout
    assert "training failed: prosodic_pp (see exp" in proc.stdout
    log = (tmp_path / "exp" / "prosodic_pp" / "log" / "train.log").read_text()
    assert "--num-threads 2" in log and "threads=2" in log


def test_driver_stops_at_a_bad_config_before_training(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("family: brnn\nlabel_set: iwslt4\nmodel: {hiden: 3}\n",
                                       encoding="utf-8")
    proc = stage4(tmp_path, "--model-conf-dir", str(tmp_path), "--baseline-systems", "bad",
                  timeout=120)
    assert proc.returncode == 1
    assert "bad.yaml:3: unknown key model.hiden" in proc.stderr
    assert not (tmp_path / ".stages" / "4.done").exists()


def test_recipes_call_the_driver() -> None:
    recipes = sorted(ROOT.glob("egs/*/punct1/run.sh"))
    assert len(recipes) >= 6
    for recipe in recipes:
        text = recipe.read_text(encoding="utf-8")
        corpus = recipe.parents[1].name
        assert "../../../utils/stage_driver.sh" in text and f"--corpus {corpus}" in text, recipe
        assert (ROOT / "local" / corpus / "check_data.sh").is_file(), corpus


@pytest.mark.parametrize(("corpus", "env"), [
    ("iwslt2012", {"IWSLT2012": "{missing}"}),
    ("szeged", {"SZEGED_UD": "{missing}", "NERKOR": "{missing}"}),
    ("babel_hu", {"BABEL_HU": "{missing}"}),
    ("mintzai_st", {"MINTZAI_ST": "{missing}"}),
    ("mtedx", {"MTEDX": "{missing}"}),
])
def test_data_checks_say_what_to_obtain(tmp_path: Path, corpus: str, env: dict) -> None:
    env = {k: v.format(missing=tmp_path / "none") for k, v in env.items()}
    proc = subprocess.run([str(ROOT / "local" / corpus / "check_data.sh"), "downloads"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, **env))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    for variable in env:
        assert f"({variable}, conf/db.sh)" in proc.stdout


@pytest.mark.skipif(not (SHARED / "iwslt2012").is_dir() or not (SHARED / "nerkor_news").is_dir(),
                    reason="no shared corpora")
@pytest.mark.parametrize("corpus", ["mini", "iwslt2012", "szeged"])
def test_data_checks_find_the_shared_copies(tmp_path: Path, corpus: str) -> None:
    proc = subprocess.run([str(ROOT / "local" / corpus / "check_data.sh"), "downloads"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith(f"{corpus}: ")


def test_driver_stage2_names_a_failed_pooled_alignment(tmp_path: Path) -> None:
    """Stage 2 aligns the training set in the job pool (beside the test sets'
    recognition): its failure (audio missing) fails the stage, naming it and its logs."""
    train = tmp_path / "data" / "tr"
    train.mkdir(parents=True)
    (train / "wav.scp").write_text(f"r1 {tmp_path / 'missing.wav'}\n", encoding="utf-8")
    (train / "text").write_text("r1 hello there\n", encoding="utf-8")
    (train / "words.tsv").write_text(
        "utt_id\tidx\tword\tform\tpunct\tcap\tstart\tend\tpause_after\n"
        "r1\t0\thello\tHello\tO\tFIRST_CAP\t\t\t\nr1\t1\tthere\tthere\tPERIOD\tO\t\t\t\n",
        encoding="utf-8")
    env = dict(os.environ, PUNCT_RECIPE_DIR=str(tmp_path))
    proc = subprocess.run(
        ["bash", str(ROOT / "utils" / "stage_driver.sh"), "--stage", "2", "--stop-stage", "2",
         "--train-set", "tr", "--test-sets", "", "--aligner", "vad", "--system-jobs", "2",
         "--num-threads", "2"], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "stage 2 failed: alignment of tr (see log/)" in proc.stdout, proc.stdout
    assert "missing.wav" in (tmp_path / "log" / "align_tr.1.log").read_text(encoding="utf-8")
    assert not (tmp_path / ".stages" / "2.done").exists()


def test_driver_trains_in_the_order_given(tmp_path: Path) -> None:
    """Stages 4 and 5 together: the transformer systems start first, as given (the
    families' answers, asked once for the run, list the baselines first)."""
    proc = subprocess.run(
        ["bash", str(ROOT / "utils" / "stage_driver.sh"), "--stage", "4", "--stop-stage", "5",
         "--model-conf-dir", str(ROOT / "conf" / "model" / "tiny"),
         "--baseline-systems", "brnn_text prosodic_pp", "--transformer-systems", "unipunc",
         "--train-set", "nope", "--system-jobs", "2", "--num-threads", "2"],
        cwd=tmp_path, env=dict(os.environ, PUNCT_RECIPE_DIR=str(tmp_path)),
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "training in this order, 2 at once: unipunc brnn_text prosodic_pp" in proc.stdout
