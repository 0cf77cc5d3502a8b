"""utils/parse_options.sh: Kaldi option parsing for bash scripts, run through real bash."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PARSE_OPTIONS = REPO / "utils" / "parse_options.sh"

SCRIPT = f"""#!/usr/bin/env bash
set -euo pipefail
stage=0            # first stage to run
nj=4               # number of parallel jobs
use_gpu=false      # train on the GPU
model_name="tiny bert"
lr=2e-5
export EXPORTED_THING=1
arr=(1 2)
help_message="Usage: $0 [options] <data-dir> <exp-dir>"
. {PARSE_OPTIONS}
echo "stage=$stage nj=$nj use_gpu=$use_gpu model_name=$model_name lr=$lr"
echo "nargs=$#"
for a in "$@"; do echo "arg=$a"; done
compgen -v _po_ || echo "no leftovers"
"""


def run_script(tmp_path: Path, *args: str, script: str = SCRIPT) -> subprocess.CompletedProcess:
    path = tmp_path / "myscript.sh"
    path.write_text(script)
    return subprocess.run(
        ["bash", str(path), *args], capture_output=True, text=True, timeout=30, cwd=tmp_path
    )


def values(proc: subprocess.CompletedProcess) -> dict[str, str]:
    first = proc.stdout.splitlines()[0]
    out = {}
    for item in first.split(" "):
        if "=" in item:
            key, _, value = item.partition("=")
            out[key] = value
    return out


def test_defaults_and_no_leftover_helpers(tmp_path: Path) -> None:
    proc = run_script(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == (
        "stage=0 nj=4 use_gpu=false model_name=tiny bert lr=2e-5"
    )
    assert "nargs=0" in proc.stdout
    assert "no leftovers" in proc.stdout


def test_dash_to_underscore_and_equals_form(tmp_path: Path) -> None:
    proc = run_script(tmp_path, "--use-gpu", "true", "--model-name=big one", "--nj=8")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == (
        "stage=0 nj=8 use_gpu=true model_name=big one lr=2e-5"
    )


def test_value_may_contain_equals_sign(tmp_path: Path) -> None:
    proc = run_script(tmp_path, "--model-name=a=b")
    assert proc.returncode == 0, proc.stderr
    assert "model_name=a=b " in proc.stdout


def test_unknown_option_is_an_error_naming_it(tmp_path: Path) -> None:
    proc = run_script(tmp_path, "--stage", "2", "--num-epochs", "3", "data")
    assert proc.returncode == 1
    assert "--num-epochs" in proc.stderr
    assert "num_epochs" in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("option", ["--exported-thing", "--EXPORTED_THING", "--arr", "--a-b-"])
def test_exported_and_array_variables_are_not_options(tmp_path: Path, option: str) -> None:
    proc = run_script(tmp_path, option, "1")
    assert proc.returncode == 1
    assert option in proc.stderr


def test_option_without_value_is_an_error(tmp_path: Path) -> None:
    proc = run_script(tmp_path, "--nj")
    assert proc.returncode == 1
    assert "--nj needs a value" in proc.stderr


def test_boolean_validation(tmp_path: Path) -> None:
    bad = run_script(tmp_path, "--use-gpu", "yes")
    assert bad.returncode == 1
    assert "--use-gpu" in bad.stderr and "true or false" in bad.stderr
    good = run_script(tmp_path, "--use-gpu", "false")
    assert good.returncode == 0
    # a non-boolean variable accepts anything
    assert values(run_script(tmp_path, "--stage", "yes"))["stage"] == "yes"


def test_config_is_read_first_and_later_options_override(tmp_path: Path) -> None:
    (tmp_path / "opts.conf").write_text("# comment line\nnj=16\nstage=7\nlr=1e-3\n")
    proc = run_script(tmp_path, "--stage", "2", "--config", "opts.conf", "--lr=5e-4", "pos")
    assert proc.returncode == 0, proc.stderr
    got = values(proc)
    # --stage 2 came before --config on the line but still overrides the config file
    assert (got["stage"], got["nj"], got["lr"]) == ("2", "16", "5e-4")
    assert "arg=pos" in proc.stdout
    eq_form = run_script(tmp_path, "--config=opts.conf")
    assert values(eq_form)["stage"] == "7"


def test_config_with_unknown_variable_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "bad.conf").write_text("nj=2\n\nnum_epochs=3\n")
    proc = run_script(tmp_path, "--config", "bad.conf")
    assert proc.returncode == 1
    assert "bad.conf:3:" in proc.stderr and "num_epochs" in proc.stderr
    missing = run_script(tmp_path, "--config", "nope.conf")
    assert missing.returncode == 1 and "nope.conf" in missing.stderr


def test_help_lists_every_option_with_its_current_default(tmp_path: Path) -> None:
    proc = run_script(tmp_path, "--help")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("Usage: ") and lines[0].endswith("[options] <data-dir> <exp-dir>")
    opts = [line.split()[:2] for line in lines if line.startswith("  --")]
    assert opts == [
        ["--stage", "0"],
        ["--nj", "4"],
        ["--use-gpu", "false"],
        ["--model-name", "'tiny"],
        ["--lr", "2e-5"],
        ["--config", "FILE"],
        ["--help", "#"],
    ]
    assert any(line.startswith("  --nj 4") and line.endswith("# number of parallel jobs")
               for line in lines)
    assert "  --model-name 'tiny bert'" in lines
    for absent in ("--exported-thing", "--arr", "--help-message"):
        assert absent not in proc.stdout


def test_help_shows_values_after_config_and_earlier_options(tmp_path: Path) -> None:
    (tmp_path / "opts.conf").write_text("nj=16\n")
    proc = run_script(tmp_path, "--stage", "3", "--config", "opts.conf", "-h")
    assert proc.returncode == 0
    assert "  --stage 3 " in proc.stdout and "  --nj 16 " in proc.stdout


def test_positional_arguments_are_left(tmp_path: Path) -> None:
    proc = run_script(tmp_path, "--nj", "2", "data/train", "--stage", "5", "exp")
    assert proc.returncode == 0, proc.stderr
    assert values(proc)["stage"] == "0"  # parsing stopped at data/train
    assert proc.stdout.splitlines()[1:6] == [
        "nargs=4", "arg=data/train", "arg=--stage", "arg=5", "arg=exp"
    ]
    dashdash = run_script(tmp_path, "--nj", "2", "--", "--stage", "5")
    assert dashdash.stdout.splitlines()[1:4] == ["nargs=2", "arg=--stage", "arg=5"]


def test_explicit_option_vars_inside_a_function(tmp_path: Path) -> None:
    script = f"""#!/usr/bin/env bash
set -euo pipefail
helper=1
f() {{
  local lr=0.1 depth=2
  option_vars="lr depth"
  . {PARSE_OPTIONS}
  echo "lr=$lr depth=$depth rest=$*"
}}
f --lr 3 --depth=4 x y
"""
    proc = run_script(tmp_path, script=script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "lr=3 depth=4 rest=x y"
    script_bad = script.replace("f --lr 3", "f --helper 2 --lr 3")
    bad = run_script(tmp_path, script=script_bad)
    assert bad.returncode == 1 and "--helper" in bad.stderr


def test_help_without_help_message(tmp_path: Path) -> None:
    script = f"set -euo pipefail\nnj=3\n. {PARSE_OPTIONS}\n"
    proc = run_script(tmp_path, "--help", script=script)
    assert proc.returncode == 0
    assert proc.stdout.startswith("Usage: myscript.sh [options]")
    assert "  --nj 3" in proc.stdout


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed")
def test_shellcheck_clean() -> None:
    files = [PARSE_OPTIONS, REPO / "utils" / "launch.sh", REPO / "conf" / "cmd.sh"]
    proc = subprocess.run(["shellcheck", *map(str, files)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
