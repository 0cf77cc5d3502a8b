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

from punct.config import resolve_config
from punct.models.brnn import IGNORE, SlotModel
from punct.train.distributed import (
    Dist,
    DistEnv,
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


def _rank_worker(rank: int, world: int, port: int, root: Path, encoder: Path) -> None:
    torch.set_num_threads(1)
    _use_brnn_weight()
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    with Dist(detect_env(), "cpu") as dist:
        for name, config in configs(encoder).items():
            train_experiment(config, root / "train", root / "dev", root / f"{name}_w{world}",
                             quiet=True, dist=dist)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ddp")
    make_set(root / "train", 100, 1)
    make_set(root / "dev", 20, 2)
    encoder = build_tiny_bert(root / "enc", words=WORDS, hidden=16)
    _use_brnn_weight()
    for name, config in configs(encoder).items():
        train_experiment(config, root / "train", root / "dev", root / f"{name}_w1", quiet=True)
    mp.start_processes(_rank_worker, args=(2, free_port(), root, encoder), nprocs=2,
                       start_method="spawn")
    return root


@pytest.mark.slow
@pytest.mark.parametrize("family", ["brnn", "autopunct"])
def test_two_processes_equal_one(runs: Path, family: str) -> None:
    one = torch.load(runs / f"{family}_w1" / "last.pt", weights_only=True)
    two = torch.load(runs / f"{family}_w2" / "last.pt", weights_only=True)
    assert two["world_size"] == 2 and len(two["rng"]) == 2 and one["epoch"] == two["epoch"] == 2
    for key, value in one["model"].items():
        # Attention key biases have a zero true gradient (softmax ignores them); Adam
        # normalises the float noise of that zero, so they drift a little more.
        tol = 1e-3 if key.endswith("in_proj_bias") else 2e-5
        assert torch.allclose(value, two["model"][key], rtol=0, atol=tol), key
    assert one["history"][1]["train_loss"] < one["history"][0]["train_loss"]  # it learns
    for a, b in zip(one["history"], two["history"], strict=True):
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-5)
    # rank 0 alone logged: one start line, one line per epoch
    log = (runs / f"{family}_w2" / "train.log").read_text()
    assert log.count("2 process(es) on cpu") == 1 and log.count(" dev_micro_f1 ") == 2
