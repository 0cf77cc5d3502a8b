"""The package on its own: build the wheel, install it into a fresh venv (offline: no index,
no dependencies; torch & co. come from this environment's site-packages through a .pth
file), and restore text with an exported tiny model, away from the repository."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from helpers.tiny import save_untrained, seq

from punct.bin import export as export_cli

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _run(cmd: list[str], cwd: Path, env: dict[str, str], stdin: str | None = None
         ) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, cwd=cwd, env=env, input=stdin, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """(bin dir of a fresh venv holding only the built wheel, a clean environment)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "punct", src / "punct",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PIP_NO_INDEX"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-index",
          "--no-build-isolation", "-w", str(tmp / "dist"), str(src)], tmp, env)
    wheels = sorted((tmp / "dist").glob("punct_recipes-*.whl"))
    assert len(wheels) == 1
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp, env)
    py = venv / "bin" / "python"
    site = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     tmp, env).stdout.strip())
    # this environment's packages (torch, transformers, ...) after the venv's own; the
    # editable install of the checkout is a .pth *inside* that dir, which is not processed
    (site / "zz_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(py), "install", "--quiet", "--no-deps",
          "--no-index", str(wheels[0])], tmp, env)
    return venv / "bin", env


def test_installed_wheel_restores_with_an_exported_model(
        installed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    bin_dir, env = installed
    exp = tmp_path / "exp"
    exp.mkdir()
    save_untrained({"family": "brnn", "label_set": "iwslt4", "featurizer": {"min_count": 1},
                    "model": {"hidden": 8}}, exp, 0, [seq(["the", "yes", "stop", "go"])])
    model = tmp_path / "model"
    assert export_cli.main(["--exp-dir", str(exp), "--out", str(model)]) == 0
    shutil.rmtree(exp)
    work = tmp_path / "elsewhere"
    work.mkdir()
    where = _run([str(bin_dir / "python"), "-I", "-c",
                  "import punct, punct.align.auto as a, json; "
                  "print(json.dumps([punct.__file__, str(a.DEFAULT_TABLE), "
                  "a.DEFAULT_TABLE.is_file()]))"], work, env)
    pkg_file, table, table_ok = json.loads(where.stdout)
    assert Path(pkg_file).is_relative_to(bin_dir.parent) and table_ok
    assert not Path(pkg_file).is_relative_to(ROOT) and Path(table).name == "align.yaml"
    out = _run([str(bin_dir / "punct-restore"), "--model", str(model), "--device", "cpu"],
               work, env, stdin="the yes go 😀 stop\n")
    assert [w.strip(",.?") for w in out.stdout.split()] == ["The", "yes", "go", "😀", "stop"]
    assert "1 documents, 5 words" in out.stderr and "1 words with 1 symbols" in out.stderr
    # the non-speech maps are package data (punct/conf/nonspeech/*.yaml)
    ns = _run([str(bin_dir / "punct-restore"), "--model", str(model), "--device", "cpu",
               "--nonspeech", "babel"], work, env, stdin="the <hes> yes ~ stop\n")
    assert ns.stdout.split()[1] == "<hes>" and ns.stdout.split()[3] == "~"
    assert "2 non-speech tokens (babel map)" in ns.stderr
    api = _run([str(bin_dir / "python"), "-I", "-c",
                "import sys; from punct import Restorer; "
                "r = Restorer.from_pretrained(sys.argv[1], device='cpu'); "
                "print(r.restore('the yes go 😀 stop'))", str(model)], work, env)
    assert api.stdout == out.stdout
    helps = _run([str(bin_dir / "punct"), "--help"], work, env).stdout
    assert "restore" in helps and "export" in helps
    assert "--exp-dir" in _run([str(bin_dir / "punct-export"), "--help"], work, env).stdout
    assert "--input-format" in _run([str(bin_dir / "punct"), "restore", "--help"],
                                    work, env).stdout
