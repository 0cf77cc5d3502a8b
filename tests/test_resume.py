"""Preemption and resume: checkpoint files (atomic, checksummed, previous kept), SIGTERM /
SIGUSR1 -> checkpoint + exit 75, --resume reaches the weights of an uninterrupted run,
a damaged last.pt falls back to last.prev.pt, clear errors when nothing can be resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import yaml
from helpers.tiny import tiny_brnn_exp
from helpers.trainset import TINY, make_set

from punct.bin import export as export_cli
from punct.bin import restore as restore_cli
from punct.bin import train as train_cli
from punct.errors import MissingDataError
from punct.models.brnn import SlotModel
from punct.models.checkpoint import load_checkpoint
from punct.train.checkpoint import (
    PREEMPTED_EXIT,
    CorruptCheckpointError,
    PreemptionGuard,
    clear_checkpoints,
    load_resumable,
    save_atomic,
    save_resumable,
    verify,
)

ROOT = Path(__file__).resolve().parents[1]
# 120 one-window utterances, batch 8: 15 steps per epoch
CONFIG = {**TINY, "train": {**TINY["train"], "epochs": 4}}
STEPS = 15


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("resume")
    make_set(root / "train", 120, 1)
    make_set(root / "dev", 20, 2)
    (root / "tiny.yaml").write_text(yaml.safe_dump(CONFIG))
    return root


def cli(data: Path, exp: Path, *extra: str) -> int:
    return train_cli.main(["--config", str(data / "tiny.yaml"), "--train-dir",
                           str(data / "train"), "--dev-dir", str(data / "dev"), "--exp-dir",
                           str(exp), "--quiet", *extra])


@pytest.fixture(scope="module")
def uninterrupted(data: Path) -> Path:
    exp = data / "full"
    assert cli(data, exp) == 0
    return exp


@pytest.fixture
def signal_at(monkeypatch: pytest.MonkeyPatch) -> Callable[[int, signal.Signals], None]:
    """Make the process signal itself during the n-th training step."""

    def arm(step: int, sig: signal.Signals) -> None:
        calls = {"n": 0}
        original = SlotModel.loss

        def loss(self: SlotModel, batch: dict[str, torch.Tensor]) -> torch.Tensor:
            if self.training:
                calls["n"] += 1
                if calls["n"] == step:
                    os.kill(os.getpid(), sig)
            return original(self, batch)

        monkeypatch.setattr(SlotModel, "loss", loss)

    return arm


def assert_same_run(a: Path, b: Path) -> None:
    for name in ("last.pt", "best.pt"):
        sa = torch.load(a / name, weights_only=True)["model"]
        sb = torch.load(b / name, weights_only=True)["model"]
        assert sa.keys() == sb.keys()
        assert all(torch.equal(sa[k], sb[k]) for k in sa), name
    ha = json.loads((a / "history.json").read_text())
    hb = json.loads((b / "history.json").read_text())
    assert [(h["epoch"], h["train_loss"], h["dev_micro_f1"], h["best"]) for h in ha] == \
        [(h["epoch"], h["train_loss"], h["dev_micro_f1"], h["best"]) for h in hb]


# -- checkpoint files ---------------------------------------------------------------
def test_checkpoints_are_checksummed_and_rotated(tmp_path: Path) -> None:
    save_resumable({"v": torch.tensor([1.0])}, tmp_path)
    assert not (tmp_path / "last.prev.pt").exists()
    save_resumable({"v": torch.tensor([2.0])}, tmp_path)
    verify(tmp_path / "last.pt")
    verify(tmp_path / "last.prev.pt")
    assert torch.load(tmp_path / "last.prev.pt", weights_only=True)["v"].item() == 1.0
    digest = (tmp_path / "last.pt.sha256").read_text().split()
    assert len(digest[0]) == 64 and digest[1] == "last.pt"  # sha256sum -c format
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "last.prev.pt", "last.prev.pt.sha256", "last.pt", "last.pt.sha256"]  # no tmp left
    state, path = load_resumable(tmp_path)
    assert path.name == "last.pt" and state["v"].item() == 2.0


def test_damaged_checkpoints_are_detected(tmp_path: Path) -> None:
    save_resumable({"v": torch.arange(1000.0)}, tmp_path)
    save_resumable({"v": torch.arange(1000.0) * 2}, tmp_path)
    last = tmp_path / "last.pt"
    last.write_bytes(last.read_bytes()[:-100])  # partial write
    with pytest.raises(CorruptCheckpointError, match="corrupt or partial"):
        verify(last)
    warnings: list[str] = []
    state, path = load_resumable(tmp_path, warnings.append)
    assert path.name == "last.prev.pt" and state["v"][1].item() == 1.0
    assert any("corrupt" in w for w in warnings) and any("previous" in w for w in warnings)
    # a damaged last.pt never replaces the good previous one
    save_resumable({"v": torch.zeros(1)}, tmp_path)
    assert torch.load(tmp_path / "last.prev.pt", weights_only=True)["v"][1].item() == 1.0
    (tmp_path / "last.pt.sha256").unlink()
    with pytest.raises(CorruptCheckpointError, match="no checksum"):
        verify(last)
    (tmp_path / "last.prev.pt").write_bytes(b"garbage")
    with pytest.raises(MissingDataError, match="nothing to resume"):
        load_resumable(tmp_path)


def test_clear_and_atomic_best(tmp_path: Path) -> None:
    save_atomic({"model": {}}, tmp_path / "best.pt")
    verify(tmp_path / "best.pt")
    (tmp_path / "last.pt.tmp").write_bytes(b"half")  # left by a killed run
    save_resumable({}, tmp_path)
    clear_checkpoints(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_guard_records_signals_and_restores_handlers() -> None:
    before = signal.getsignal(signal.SIGUSR1)
    with PreemptionGuard() as guard:
        assert guard.active and not guard.requested
        os.kill(os.getpid(), signal.SIGUSR1)
        time.sleep(0.01)
        assert guard.received == signal.SIGUSR1
    assert signal.getsignal(signal.SIGUSR1) == before


# -- preempt and resume -------------------------------------------------------------
@pytest.mark.parametrize(("step", "sig"), [(2 * STEPS + 5, signal.SIGTERM),
                                           (STEPS, signal.SIGUSR1)])
def test_preempt_then_resume_is_identical(data: Path, uninterrupted: Path,
                                          signal_at: Callable[[int, signal.Signals], None],
                                          step: int, sig: signal.Signals,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    exp = data / f"pre_{sig.name}"
    signal_at(step, sig)
    assert cli(data, exp) == PREEMPTED_EXIT
    assert "preempted" in capsys.readouterr().err
    ckpt = torch.load(exp / "last.pt", weights_only=True)
    epoch, done = divmod(step, STEPS)
    if done:  # mid-epoch: the step in progress was finished, then saved
        assert (ckpt["epoch"], ckpt["step"], ckpt["epoch_done"]) == (epoch + 1, done, False)
        assert len(ckpt["history"]) == epoch
    else:  # during the last step of an epoch: evaluated, then saved
        assert (ckpt["epoch"], ckpt["step"], ckpt["epoch_done"]) == (epoch, STEPS, True)
        assert len(ckpt["history"]) == epoch
    assert {"optimizer", "scheduler", "rng", "best", "bad_epochs", "shuffle_state"} <= set(ckpt)
    log = (exp / "train.log").read_text()
    assert f"preempted by {sig.name}" in log and "done:" not in log
    verify(exp / "last.pt")

    assert cli(data, exp, "--resume") == 0
    assert json.loads(capsys.readouterr().out)["epochs_run"] == 4
    assert "resuming from" in (exp / "train.log").read_text()
    assert_same_run(uninterrupted, exp)


def test_corrupt_last_falls_back_to_previous(data: Path, uninterrupted: Path,
                                             signal_at: Callable[[int, signal.Signals], None]
                                             ) -> None:
    exp = data / "corrupt"
    signal_at(2 * STEPS + 3, signal.SIGTERM)  # last.pt: epoch 3 step 3; prev: epoch 2 end
    assert cli(data, exp) == PREEMPTED_EXIT
    raw = bytearray((exp / "last.pt").read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # one flipped byte
    (exp / "last.pt").write_bytes(bytes(raw))
    assert cli(data, exp, "--resume") == 0
    log = (exp / "train.log").read_text()
    assert "warning:" in log and "last.prev.pt: epoch 2 end" in log
    assert_same_run(uninterrupted, exp)


def test_resume_errors(data: Path, uninterrupted: Path, tmp_path: Path,
                       capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(data, tmp_path / "empty", "--resume") == 2
    assert "nothing to resume" in capsys.readouterr().err
    exp = tmp_path / "other"
    exp.mkdir()
    (exp / "config.yaml").write_text((uninterrupted / "config.yaml").read_text())
    assert cli(data, exp, "--resume") == 2
    err = capsys.readouterr().err
    assert "nothing to resume" in err and "last.prev.pt does not exist" in err
    assert cli(data, exp, "--resume", "--set", "train.epochs=9") == 1
    assert "differs from the experiment's in ['train']" in capsys.readouterr().err
    # a finished experiment resumes to its summary without training again
    before = (uninterrupted / "last.pt").read_bytes()
    assert cli(data, uninterrupted, "--resume") == 0
    assert json.loads(capsys.readouterr().out)["epochs_run"] == 4
    assert (uninterrupted / "last.pt").read_bytes() == before


def test_rerun_without_resume_starts_over(data: Path, uninterrupted: Path,
                                          signal_at: Callable[[int, signal.Signals], None]
                                          ) -> None:
    exp = data / "restart"
    signal_at(7, signal.SIGTERM)
    assert cli(data, exp) == PREEMPTED_EXIT
    (exp / "last.pt.tmp").write_bytes(b"left by a killed run")
    signal_at(10**9, signal.SIGTERM)  # disarmed
    assert cli(data, exp) == 0
    assert not (exp / "last.pt.tmp").exists() and "resuming" not in (exp / "train.log").read_text()
    assert_same_run(uninterrupted, exp)


# -- real signals to real processes (2 local ranks) ---------------------------------
@pytest.mark.slow
def test_sigterm_to_two_local_ranks_then_resume(data: Path, tmp_path: Path) -> None:
    exp = tmp_path / "ddp"
    args = [sys.executable, "-m", "punct.bin.train", "--config", str(data / "tiny.yaml"),
            "--train-dir", str(data / "train"), "--dev-dir", str(data / "dev"),
            "--exp-dir", str(exp), "--quiet", "--num-threads", "1", "--nproc", "2",
            "--set", "train.epochs=8", "--set", "train.patience=8"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    log = exp / "train.log"
    deadline = time.monotonic() + 150
    while not (log.is_file() and " dev_micro_f1 " in log.read_text()):
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, "training did not start"
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)  # to the launcher, which forwards it to both ranks
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == PREEMPTED_EXIT, err
    text = log.read_text()
    assert text.count("preempted by SIGTERM") == 1 and "done:" not in text  # rank 0 only
    ckpt = torch.load(exp / "last.pt", weights_only=True)
    assert ckpt["world_size"] == 2 and len(ckpt["rng"]) == 2 and ckpt["epoch"] < 8
    done = subprocess.run([*args, "--resume"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=170, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["epochs_run"] == 8  # one summary line: rank 0's
    history = json.loads((exp / "history.json").read_text())
    assert [h["epoch"] for h in history] == list(range(1, 9))
    assert log.read_text().count("resuming from") == 1


# -- a family with dropout and a pretrained encoder: the random streams are restored ---
@pytest.mark.slow
@pytest.mark.parametrize("train_layers", [-1, 0])  # fine-tuned encoder / frozen and cached
def test_autopunct_resume_is_identical(data: Path, tmp_path: Path, train_layers: int,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from helpers.tinybert import build_tiny_bert

    from punct.config import resolve_config
    from punct.models.autopunct import AutopunctModel
    from punct.train.checkpoint import TrainingPreempted
    from punct.train.trainer import train_experiment

    words = [*(f"w{i}" for i in range(15)), "yes", "stop", "huh", "hola"]
    encoder = build_tiny_bert(tmp_path / "enc", words=words, hidden=16, layers=1)
    config = resolve_config({
        "family": "autopunct", "featurizer": {"encoder": str(encoder)},
        "model": {"encoder_train_layers": train_layers, "head": {"hidden": 16},
                  "cap_head": {"hidden": 16}},  # dropout 0.1 in both heads
        "train": {"epochs": 2, "batch_size": 16, "window": 16, "stride": 16, "seed": 5,
                  "optimizer": {"name": "adamw", "lr": 3e-3}},
    })
    args = (config, data / "train", data / "dev")
    train_experiment(*args, tmp_path / "full", quiet=True)
    calls = {"n": 0}
    original = AutopunctModel.loss

    def loss(self: AutopunctModel, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        if self.training:
            calls["n"] += 1
            if calls["n"] == 11:  # epoch 2, step 3
                os.kill(os.getpid(), signal.SIGUSR1)
        return original(self, batch)

    monkeypatch.setattr(AutopunctModel, "loss", loss)
    with pytest.raises(TrainingPreempted):
        train_experiment(*args, tmp_path / "cut", quiet=True)
    monkeypatch.setattr(AutopunctModel, "loss", original)
    train_experiment(*args, tmp_path / "cut", quiet=True, resume=True)
    assert_same_run(tmp_path / "full", tmp_path / "cut")


@pytest.mark.parametrize("with_sum", [True, False])
def test_truncated_best_pt_is_one_clear_error(tmp_path: Path, with_sum: bool,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """restore and export name the damaged best.pt and the way out, no torch traceback,
    whether or not the trainer's best.pt.sha256 is beside it."""
    exp = tiny_brnn_exp(tmp_path / "exp")
    best = exp / "best.pt"
    if with_sum:
        save_atomic(load_checkpoint(best), best)
    best.write_bytes(best.read_bytes()[: best.stat().st_size // 2])
    assert restore_cli.main(["--exp-dir", str(exp), "--device", "cpu"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("restore: damaged checkpoint: ")
    assert str(best) in err and "--checkpoint last" in err
    assert ("does not match best.pt.sha256" in err) == with_sum
    assert export_cli.main(["--exp-dir", str(exp), "--out", str(tmp_path / "m")]) == 1
    assert "damaged checkpoint" in capsys.readouterr().err
