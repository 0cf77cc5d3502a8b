"""Data-parallel training: environment detection, sharding, and 2 gloo processes on CPU
taking the same steps as 1 process with the same global batch (brnn and autopunct)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.multiprocessing as mp
from helpers.tinybert import build_tiny_bert
from helpers.trainset import TINY, make_set

from punct.bin import train as train_cli
from punct.config import resolve_config
from punct.errors import PunctInputError
from punct.models.brnn import IGNORE, SlotModel
from punct.train.distributed import (
    Dist,
    DistEnv,
    check_local_gpus,
    detect_env,
    first_host,
    free_port,
    loss_weight,
    shard,
    slurm_master_port,
)
from punct.train.trainer import train_experiment

WORDS = [*(f"w{i}" for i in range(15)), "yes", "stop", "huh", "hola"]


# -- environment --------------------------------------------------------------------
def test_torchrun_environment() -> None:
    env = detect_env({"RANK": "1", "WORLD_SIZE": "4", "LOCAL_RANK": "1",
                      "MASTER_ADDR": "n1", "MASTER_PORT": "1234"})
    assert env == DistEnv(1, 4, 1, "n1", 1234, "torchrun")
    assert env.distributed and not env.is_main
    assert detect_env({"WORLD_SIZE": "1", "RANK": "0"}) == DistEnv()
    assert detect_env({}) == DistEnv()
    with pytest.raises(ValueError, match="RANK"):
        detect_env({"WORLD_SIZE": "2"})


def test_slurm_environment() -> None:
    base = {"SLURM_PROCID": "3", "SLURM_NTASKS": "4", "SLURM_LOCALID": "1",
            "SLURM_JOB_ID": "123456", "SLURM_JOB_NODELIST": "gpu[07-08],cpu1"}
    env = detect_env(base)
    assert env == DistEnv(3, 4, 1, "gpu07", 15000 + 123456 % 20000, "slurm")
    step = detect_env({**base, "SLURM_STEP_NUM_TASKS": "2", "SLURM_STEP_NODELIST": "a1",
                       "MASTER_ADDR": "head", "MASTER_PORT": "999"})
    assert (step.world_size, step.master_addr, step.master_port) == (2, "head", 999)
    # an sbatch script with --ntasks 4 but no srun: one process, not a rank
    assert detect_env({"SLURM_NTASKS": "4", "SLURM_JOB_ID": "1"}) == DistEnv()
    assert detect_env({**base, "SLURM_NTASKS": "1"}) == DistEnv()


def test_one_rank_group_environment() -> None:
    """PUNCT_ONE_RANK_GROUP=1 turns a one-process job into a one-rank group; a job of
    several ranks stays as it is; anything but 0/1 is refused."""
    env = detect_env({"PUNCT_ONE_RANK_GROUP": "1", "MASTER_PORT": "4321"})
    assert env == DistEnv(master_port=4321, one_rank_group=True)
    assert detect_env({"PUNCT_ONE_RANK_GROUP": "1", "MASTER_ADDR": "head",
                       "MASTER_PORT": "1"}).master_addr == "head"
    assert env.distributed and env.is_main and env.world_size == 1
    free = detect_env({"PUNCT_ONE_RANK_GROUP": "1", "WORLD_SIZE": "1", "RANK": "0"})
    assert free.one_rank_group and 0 < free.master_port < 65536
    several = {"RANK": "1", "WORLD_SIZE": "2", "MASTER_PORT": "1234"}
    assert detect_env({**several, "PUNCT_ONE_RANK_GROUP": "1"}) == detect_env(several)
    assert detect_env({"PUNCT_ONE_RANK_GROUP": "0"}) == DistEnv()
    with pytest.raises(PunctInputError, match="PUNCT_ONE_RANK_GROUP='yes'"):
        detect_env({"PUNCT_ONE_RANK_GROUP": "yes"})


def test_more_gpus_than_visible_is_refused(monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    check_local_gpus(1)
    with pytest.raises(PunctInputError, match="2 GPU ranks need 2 GPUs but only 1 visible"):
        check_local_gpus(2)
    # the CLI refuses before it starts any rank: --ngpu 2, and --nproc 2 on GPUs
    monkeypatch.setattr(train_cli, "launch_local", lambda *a: pytest.fail("ranks started"))
    for ranks in (["--ngpu", "2"], ["--ngpu", "1", "--nproc", "2"]):
        status = train_cli.main(["--config", "c.yaml", "--train-dir", "t", "--dev-dir", "d",
                                 "--exp-dir", "e", *ranks])
        assert status != 0 and "only 1 visible" in capsys.readouterr().err, ranks


def test_first_host_and_port() -> None:
    assert first_host("node1") == "node1"
    assert first_host("node[003-005,9]") == "node003"
    assert first_host("a1,b[1-2]") == "a1"
    assert first_host("rack[2-3]-n[10-11],x") == "rack2-n10"
    with pytest.raises(ValueError):
        first_host(" ")
    assert slurm_master_port("20001") == 15001
    assert slurm_master_port(None) == 15000


def test_shard_interleaves_the_global_batch() -> None:
    chunk = list(range(7))
    assert shard(chunk, 0, 2) == [0, 2, 4, 6] and shard(chunk, 1, 2) == [1, 3, 5]
    assert sorted(shard(chunk, 0, 3) + shard(chunk, 1, 3) + shard(chunk, 2, 3)) == chunk
    assert shard([5], 1, 2) == []  # a short last batch leaves a rank idle


def test_loss_weight_default_and_hook() -> None:
    batch = {"word_ids": torch.tensor([[-1, 0, 1, -1], [2, -1, -1, -1]])}
    assert loss_weight(torch.nn.Linear(1, 1), batch) == 3.0

    class Weighted(torch.nn.Module):
        def loss_weight(self, batch: dict[str, torch.Tensor]) -> float:
            return 10.0

    assert loss_weight(Weighted(), batch) == 10.0


def test_one_process_dist_is_inert() -> None:
    dist = Dist()
    p = torch.nn.Parameter(torch.ones(2))
    p.grad = torch.tensor([1.0, 2.0])
    with dist:
        out = dist.reduce_step([p], 5.0, 0.25, True, False)
        assert dist.gather_object("x") == ["x"] and dist.any_flag(False, True) == (True, False)
    assert (out.loss, out.preempt, out.nonfinite) == (0.25, True, False)
    assert p.grad.tolist() == [1.0, 2.0]


def test_one_rank_reduction_bit_for_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a group of one rank the reduction gives each gradient back as ``(g * w) / w``
    in float32, as views of one buffer in the parameter's dtype; a parameter without a
    gradient keeps none; the loss and the flags come through."""
    monkeypatch.setenv("PUNCT_ONE_RANK_GROUP", "1")
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(3, 4)), torch.nn.Parameter(torch.randn(5)),
              torch.nn.Parameter(torch.randn(2, dtype=torch.bfloat16))]
    params[0].grad = torch.randn(3, 4)
    params[2].grad = torch.randn(2, dtype=torch.bfloat16)
    expected = [(params[0].grad * 7.3) * (1.0 / 7.3), None,
                ((params[2].grad.float() * 7.3) * (1.0 / 7.3)).to(torch.bfloat16)]
    with Dist(detect_env(), "cpu") as dist:
        out = dist.reduce_step(params, 7.3, 0.25, False, True)
    assert out.preempt is False and out.nonfinite is True
    assert out.loss == pytest.approx(0.25, rel=1e-6)
    assert torch.equal(params[0].grad, expected[0]) and params[1].grad is None
    assert params[2].grad.dtype == torch.bfloat16 and torch.equal(params[2].grad, expected[2])
    assert params[0].grad._base is not None  # a view of the reduced buffer, not a copy


def test_one_rank_group_trains_as_one_process(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A one-rank process group (gloo here, NCCL on a GPU) runs every collective of the
    trainer and takes the steps of the plain one-process run."""
    make_set(tmp_path / "train", 60, 1)
    make_set(tmp_path / "dev", 12, 2)
    _use_brnn_weight()
    config = configs(tmp_path)["brnn"]
    train_experiment(config, tmp_path / "train", tmp_path / "dev", tmp_path / "plain",
                     quiet=True)
    monkeypatch.setenv("PUNCT_ONE_RANK_GROUP", "1")
    calls: list[str] = []
    reduce_step = Dist.reduce_step

    def counted(self: Dist, *args: Any) -> Any:
        calls.append(str(torch.distributed.get_backend()))
        return reduce_step(self, *args)

    monkeypatch.setattr(Dist, "reduce_step", counted)
    with Dist(detect_env(), "cpu") as dist:
        assert dist.backend == "gloo"
        train_experiment(config, tmp_path / "train", tmp_path / "dev", tmp_path / "group",
                         quiet=True, dist=dist)
    assert not torch.distributed.is_initialized() and dist.backend is None
    plain = torch.load(tmp_path / "plain" / "last.pt", weights_only=True)
    group = torch.load(tmp_path / "group" / "last.pt", weights_only=True)
    assert calls and set(calls) == {"gloo"}  # every step went through the all-reduce
    assert plain["epoch"] == group["epoch"] == 2 and run_mismatches(plain, group) == []
    log = (tmp_path / "group" / "train.log").read_text()
    assert "1 process(es) on cpu (process group gloo)" in log
    assert "process group" not in (tmp_path / "plain" / "train.log").read_text()


# -- 1 process vs 2 processes -------------------------------------------------------
def brnn_loss_weight(self: SlotModel, batch: dict[str, torch.Tensor]) -> float:
    """Slots the BRNN cross-entropy averages over (one more per window than words)."""
    return float((batch["target"][:, 1:] != IGNORE).sum())


def _use_brnn_weight() -> None:
    if not hasattr(SlotModel, "loss_weight"):
        SlotModel.loss_weight = brnn_loss_weight  # type: ignore[attr-defined]


def configs(encoder: Path) -> dict[str, dict[str, Any]]:
    brnn = resolve_config(TINY, ["train.epochs=2"])
    autopunct = resolve_config({
        "family": "autopunct", "label_set": "full13",
        "featurizer": {"encoder": str(encoder)},
        "model": {"encoder_train_layers": 0, "silence": {"kind": "continuous"},
                  "custom_bert": {"layers": 1, "heads": 2, "dropout": 0.0},
                  "head": {"hidden": 16, "dropout": 0.0},
                  "cap_head": {"hidden": 16, "dropout": 0.0}},
        "train": {"epochs": 2, "batch_size": 8, "window": 16, "stride": 16, "seed": 3,
                  "optimizer": {"name": "adamw", "lr": 3e-3}, "grad_clip": 1.0},
        "decode": {"window": 16, "stride": 8},
    })
    return {"brnn": brnn, "autopunct": autopunct}


def _missing_world_division(self: Dist, params: Any, weight: float, loss: float,
                            preempt: bool, nonfinite: bool) -> Any:
    """A deliberately wrong all-reduce: the averaged gradient times the world size, as if
    the division by the number of processes were missing."""
    out = _REDUCE_STEP(self, params, weight, loss, preempt, nonfinite)
    for p in params:
        if p.grad is not None:
            p.grad.mul_(self.env.world_size)
    return out


_REDUCE_STEP = Dist.reduce_step


# Another CPU's kernels, forced: no SIMD in ATen, SSE4 in oneDNN and MKL (the variables
# are read when a process first runs a kernel, so they act in the spawned ranks only).
SCALAR_KERNELS = {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41",
                  "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"}


def _rank_worker(rank: int, world: int, port: int, root: Path, encoder: Path,
                 variant: str = "") -> None:
    """One rank of a two-process training; ``variant``: "" (as the one-process run),
    "broken" (the all-reduce without the division by the world size, BRNN only) or
    "scalar" (run under SCALAR_KERNELS by the caller)."""
    torch.set_num_threads(1)
    _use_brnn_weight()
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    families = configs(encoder)
    if variant == "broken":
        Dist.reduce_step = _missing_world_division  # type: ignore[method-assign]
        families = {"brnn": families["brnn"]}
    if variant == "scalar":
        assert torch.backends.cpu.get_cpu_capability() == "DEFAULT"
    suffix = f"_{variant}" if variant else ""
    with Dist(detect_env(), "cpu") as dist:
        for name, config in families.items():
            train_experiment(config, root / "train", root / "dev",
                             root / f"{name}_w{world}{suffix}", quiet=True, dist=dist)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ddp")
    make_set(root / "train", 100, 1)
    make_set(root / "dev", 20, 2)
    encoder = build_tiny_bert(root / "enc", words=WORDS, hidden=16)
    _use_brnn_weight()
    for name, config in configs(encoder).items():
        train_experiment(config, root / "train", root / "dev", root / f"{name}_w1", quiet=True)
    for variant in ("", "broken", "scalar"):
        with pytest.MonkeyPatch.context() as env:
            for key, value in (SCALAR_KERNELS.items() if variant == "scalar" else ()):
                env.setenv(key, value)
            mp.start_processes(_rank_worker, args=(2, free_port(), root, encoder, variant),
                               nprocs=2, start_method="spawn")
    return root


# Why the runs may differ, and by how much. One process sums the global batch's loss terms
# in one order; two processes sum their halves and then all-reduce, so the float32
# gradients differ in their last bits (relative ~K * 2^-24 for K summed terms, and other
# CPUs' BLAS kernels split the sums differently again). Adam divides by the root of the
# second moment, so where a gradient is close to zero those bits become updates of up to
# lr, and training carries any difference forward. No weight can move further than
# steps * lr under Adam (one normalised step is at most ~lr), so the drift is bounded by a
# small share of that distance: WEIGHT_SHARE = 2^-8 of steps * lr (BRNN: 26 steps * 0.01
# -> 1.0e-3). Measured drift: 4e-6 to 9e-6 on an Intel Xeon with AVX512 (the same for two
# processes on scalar kernels against one on AVX512), ~1e-4 on an AMD EPYC;
# a missing division by the world size moves weights by 1e-2 to 1e-1 and Adam's moments
# by 50-300%, which these bounds catch (test_wrong_all_reduce_is_caught).
# Attention key biases have a zero true gradient (softmax ignores them): Adam normalises
# pure float noise there, so they may move by up to the whole steps * lr.
WEIGHT_SHARE = 2.0**-8
MOMENT_SHARE = 2.0**-6  # relative L2 distance of all of Adam's moments together
LOSS_SHARE = 2.0**-12  # relative difference of each epoch's mean training loss


def run_mismatches(one: dict[str, Any], two: dict[str, Any]) -> list[str]:
    """What differs between two checkpoints beyond float32 reordering drift (see above)."""
    states = one["optimizer"]["state"]
    steps = max(int(s["step"]) for s in states.values())
    lr = max(g.get("initial_lr", g["lr"]) for g in one["optimizer"]["param_groups"])
    found = []
    for key, value in one["model"].items():
        if not value.is_floating_point():
            assert torch.equal(value, two["model"][key]), key
            continue
        share = 1.0 if key.endswith("in_proj_bias") else WEIGHT_SHARE
        gap = (value.double() - two["model"][key].double()).abs().max().item()
        if gap > share * steps * lr:
            found.append(f"{key}: {gap:.2e} > {share * steps * lr:.2e}")
    for moment in ("exp_avg", "exp_avg_sq"):
        a = torch.cat([s[moment].reshape(-1) for s in states.values()]).double()
        b = torch.cat([s[moment].reshape(-1) for s in two["optimizer"]["state"].values()])
        rel = ((a - b.double()).norm() / a.norm()).item()
        if rel > MOMENT_SHARE:
            found.append(f"optimizer {moment}: relative distance {rel:.2e}")
    for epoch, (x, y) in enumerate(zip(one["history"], two["history"], strict=True)):
        if abs(x["train_loss"] - y["train_loss"]) > LOSS_SHARE * abs(x["train_loss"]):
            found.append(f"epoch {epoch} train_loss {x['train_loss']} vs {y['train_loss']}")
    return found


@pytest.mark.slow
@pytest.mark.parametrize("kernels", ["", "_scalar"])
@pytest.mark.parametrize("family", ["brnn", "autopunct"])
def test_two_processes_equal_one(runs: Path, family: str, kernels: str) -> None:
    """Two processes train what one does, also when they run other CPU kernels (scalar
    ones against this machine's SIMD: the difference between CI's Intel and AMD CPUs)."""
    one = torch.load(runs / f"{family}_w1" / "last.pt", weights_only=True)
    two = torch.load(runs / f"{family}_w2{kernels}" / "last.pt", weights_only=True)
    assert two["world_size"] == 2 and len(two["rng"]) == 2 and one["epoch"] == two["epoch"] == 2
    assert run_mismatches(one, two) == []
    assert one["history"][1]["train_loss"] < one["history"][0]["train_loss"]  # it learns
    # rank 0 alone logged: one start line, one line per epoch
    log = (runs / f"{family}_w2" / "train.log").read_text()
    assert log.count("2 process(es) on cpu") == 1 and log.count(" dev_micro_f1 ") == 2


@pytest.mark.slow
def test_wrong_all_reduce_is_caught(runs: Path) -> None:
    one = torch.load(runs / "brnn_w1" / "last.pt", weights_only=True)
    broken = torch.load(runs / "brnn_w2_broken" / "last.pt", weights_only=True)
    found = run_mismatches(one, broken)
    assert any(f.startswith("optimizer exp_avg:") for f in found), found
    assert sum(not f.startswith(("optimizer", "epoch")) for f in found) >= 10, found
