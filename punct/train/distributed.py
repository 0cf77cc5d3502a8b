"""Data-parallel training plumbing: who am I, how to talk to the others, how to launch.

Where the rank comes from (``detect_env``):
- torchrun (or ``--ngpu N`` / ``--nproc N`` of ``punct.bin.train``, which start N local
  processes the same way): ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``,
  ``MASTER_PORT``;
- srun with more than one task: ``SLURM_PROCID``, ``SLURM_NTASKS`` (the step's
  ``SLURM_STEP_NUM_TASKS`` when set), ``SLURM_LOCALID``; ``MASTER_ADDR`` is the first
  host of ``SLURM_STEP_NODELIST``/``SLURM_JOB_NODELIST`` unless set, ``MASTER_PORT``
  is derived from ``SLURM_JOB_ID`` unless set;
- ``PUNCT_ONE_RANK_GROUP=1`` in a job of one process: it still opens a process group of
  one rank and runs every collective (NCCL on a GPU), so that the data-parallel code runs
  on a machine with a single GPU (NCCL refuses two ranks on one device). ``MASTER_PORT``
  if set, else a free port.

How ranks cooperate (``Dist``), with the semantics of DistributedDataParallel: every rank
draws the same seeded permutation of the training windows and takes the windows
``rank, rank + W, ...`` of each global batch (``shard``); after ``backward`` the gradients
are averaged over ranks in one all-reduce per step, weighted by the number of loss terms
of each rank (the model's ``loss_weight(batch)`` when it defines one, else the number of
positions with ``word_ids >= 0``), so that a step equals the single-process step on the
whole global batch up to float rounding. The same all-reduce carries the preemption and
non-finite-loss flags, so all ranks stop at the same step. The reduction is explicit
(rather than the ``DistributedDataParallel`` wrapper) because the trainer calls
``model.loss``, not ``forward``, and because families change their trainable set during
training (frozen stage-1 models, encoders unfrozen by ``on_epoch_start``, cached
frozen-encoder states): only parameters that require a gradient are reduced, whichever
they are at that step. Rank 0 evaluates, logs and writes checkpoints; the others wait.
gloo on CPU, NCCL on GPU.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any, TypeVar

import torch
import torch.distributed as tdist

from punct.errors import PunctInputError

T = TypeVar("T")
DEFAULT_TIMEOUT_S = 3 * 3600
"""Collective timeout: other ranks wait this long while rank 0 evaluates on dev."""


@dataclass(frozen=True)
class DistEnv:
    """This process's place in a (possibly one-process) training job."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    master_addr: str = "127.0.0.1"
    master_port: int = 29500
    source: str = "single"  # single | torchrun | slurm
    one_rank_group: bool = False  # a process group even for one rank (PUNCT_ONE_RANK_GROUP)

    @property
    def distributed(self) -> bool:
        """Whether this process is in a process group (and runs the collectives)."""
        return self.world_size > 1 or self.one_rank_group

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def _int(environ: Mapping[str, str], name: str, default: int | None = None) -> int:
    value = environ.get(name, "").strip()
    if not value:
        if default is None:
            raise PunctInputError(f"distributed training: ${name} is not set")
        return default
    try:
        return int(value)
    except ValueError:
        raise PunctInputError(f"distributed training: ${name}={value!r} is not an "
                              "integer") from None


def first_host(nodelist: str) -> str:
    """The first host of a Slurm host list: ``gpu[03-05,9],cpu1`` -> ``gpu03``."""
    nodelist = nodelist.strip()
    if not nodelist:
        raise PunctInputError("empty Slurm node list")
    depth, end = 0, len(nodelist)
    for i, char in enumerate(nodelist):  # first top-level comma ends the first entry
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            end = i
            break
    entry = nodelist[:end]
    # each bracket group contributes its first element: "n[2-4,7]" -> "n2"
    return re.sub(r"\[([^\],-]+)[^\]]*\]", r"\1", entry)


def slurm_master_port(job_id: str | int | None) -> int:
    """A port every task of a Slurm job derives alike: 15000 + job id mod 20000."""
    try:
        return 15000 + int(job_id or 0) % 20000
    except ValueError:
        return 29500


def _slurm_master_addr(environ: Mapping[str, str]) -> str:
    nodelist = environ.get("SLURM_STEP_NODELIST") or environ.get("SLURM_JOB_NODELIST") or ""
    if not nodelist:
        return "127.0.0.1"
    try:
        return first_host(nodelist)
    except ValueError:
        pass
    try:  # unusual syntax: ask Slurm
        out = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True,
                             text=True, timeout=30, check=True)
        return out.stdout.split()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        raise PunctInputError(f"cannot find the first host of Slurm node list "
                              f"{nodelist!r}") from None


ONE_RANK_GROUP = "PUNCT_ONE_RANK_GROUP"


def detect_env(environ: Mapping[str, str] | None = None) -> DistEnv:
    """The rank/world of this process from torchrun's or srun's environment; a job of one
    process with ``PUNCT_ONE_RANK_GROUP=1`` is a one-rank group (module docstring)."""
    env = os.environ if environ is None else environ
    found = _detect_ranks(env)
    flag = env.get(ONE_RANK_GROUP, "").strip()
    if flag not in ("", "0", "1"):
        raise PunctInputError(f"${ONE_RANK_GROUP}={flag!r}: give 1 (a process group of one "
                              "rank) or 0")
    if flag == "1" and not found.distributed:
        return DistEnv(master_addr=env.get("MASTER_ADDR") or "127.0.0.1",
                       master_port=_int(env, "MASTER_PORT", 0) or free_port(),
                       one_rank_group=True)
    return found


def _detect_ranks(env: Mapping[str, str]) -> DistEnv:
    if _int(env, "WORLD_SIZE", 1) > 1:
        world = _int(env, "WORLD_SIZE")
        rank = _int(env, "RANK")
        return DistEnv(rank, world, _int(env, "LOCAL_RANK", 0),
                       env.get("MASTER_ADDR") or "127.0.0.1",
                       _int(env, "MASTER_PORT", 29500), "torchrun")
    tasks = _int(env, "SLURM_STEP_NUM_TASKS", 0) or _int(env, "SLURM_NTASKS", 1)
    if tasks > 1 and "SLURM_PROCID" in env:
        port = _int(env, "MASTER_PORT", 0) or slurm_master_port(env.get("SLURM_JOB_ID"))
        return DistEnv(_int(env, "SLURM_PROCID"), tasks, _int(env, "SLURM_LOCALID", 0),
                       env.get("MASTER_ADDR") or _slurm_master_addr(env), port, "slurm")
    return DistEnv()


def choose_device(ngpu: int, env: DistEnv) -> torch.device:
    """CPU for ``ngpu == 0``; else this rank's GPU (``local_rank`` modulo visible GPUs)."""
    if ngpu < 0:
        raise PunctInputError(f"--ngpu must be >= 0, got {ngpu}")
    if ngpu == 0:
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise PunctInputError(f"--ngpu {ngpu} asked for GPUs but CUDA is not available here")
    index = env.local_rank % torch.cuda.device_count()
    torch.cuda.set_device(index)
    return torch.device("cuda", index)


def check_local_gpus(ranks: int) -> None:
    """Refuse ``ranks`` local GPU ranks (``--ngpu N``, or ``--nproc N`` with ``--ngpu``)
    when fewer GPUs are visible: the ranks would share a device, which NCCL refuses only
    later, in every rank."""
    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if ranks > visible:
        raise PunctInputError(
            f"{ranks} GPU ranks need {ranks} GPUs but only {visible} visible (NCCL cannot "
            f"run two ranks on one GPU); {ONE_RANK_GROUP}=1 with --ngpu 1 runs the "
            "data-parallel code on a single GPU")


def shard(chunk: Sequence[T], rank: int, world_size: int) -> list[T]:
    """This rank's part of one global batch (DistributedSampler's interleaving)."""
    return list(chunk[rank::world_size])


def loss_weight(model: Any, batch: Mapping[str, torch.Tensor]) -> float:
    """Number of terms the model's mean loss averages over in ``batch``."""
    hook = getattr(model, "loss_weight", None)
    if callable(hook):
        return float(hook(batch))
    return float((batch["word_ids"] >= 0).sum())


@dataclass
class StepReduction:
    """What one step's all-reduce tells every rank."""

    loss: float  # loss of the global batch (weighted mean over ranks)
    preempt: bool  # some rank received SIGTERM/SIGUSR1
    nonfinite: bool  # some rank computed a non-finite loss


class Dist:
    """Collectives of a training job; every method is a no-op in a one-process job
    without a process group (``DistEnv.distributed`` False)."""

    def __init__(self, env: DistEnv | None = None, device: torch.device | str = "cpu"):
        self.env = env or DistEnv()
        self.device = torch.device(device)
        self.initialised = False
        self.backend: str | None = None  # the process group's, once open

    @property
    def distributed(self) -> bool:
        """Whether the collectives run (a process group, even of one rank)."""
        return self.env.distributed

    @property
    def rank(self) -> int:
        return self.env.rank

    @property
    def world_size(self) -> int:
        return self.env.world_size

    @property
    def is_main(self) -> bool:
        return self.env.is_main

    def __enter__(self) -> Dist:
        if self.env.distributed and not tdist.is_initialized():
            backend = "nccl" if self.device.type == "cuda" else "gloo"
            timeout = int(os.environ.get("PUNCT_DIST_TIMEOUT_S", DEFAULT_TIMEOUT_S))
            tdist.init_process_group(
                backend, init_method=f"tcp://{self.env.master_addr}:{self.env.master_port}",
                rank=self.env.rank, world_size=self.env.world_size,
                timeout=_dt.timedelta(seconds=timeout),
                device_id=self.device if self.device.type == "cuda" else None)
            self.initialised = True
        if self.env.distributed and tdist.is_initialized():
            self.backend = str(tdist.get_backend())
        return self

    def __exit__(self, *exc: object) -> None:
        if self.initialised:
            tdist.destroy_process_group()
            self.initialised = False
            self.backend = None

    # -- collectives ---------------------------------------------------------------
    def barrier(self) -> None:
        if self.env.distributed:
            tdist.barrier()

    def broadcast_module(self, module: torch.nn.Module) -> None:
        """Rank 0's parameters and buffers to every rank (DDP's start-up broadcast)."""
        if not self.env.distributed:
            return
        with torch.no_grad():
            for tensor in [*module.parameters(), *module.buffers()]:
                if tensor.dtype != torch.bool:  # constant masks; gloo has no bool type
                    tdist.broadcast(tensor.data, src=0)

    def gather_object(self, obj: Any) -> list[Any]:
        """Every rank's ``obj``, in rank order (on every rank)."""
        if not self.env.distributed:
            return [obj]
        out: list[Any] = [None] * self.world_size
        tdist.all_gather_object(out, obj)
        return out

    def any_flag(self, local: bool, main_decides: bool | None = None) -> tuple[bool, bool]:
        """(rank 0's ``main_decides``, whether any rank has ``local`` set)."""
        if not self.env.distributed:
            return bool(main_decides), local
        flags = torch.tensor([float(bool(main_decides)) if self.is_main else 0.0,
                              float(local)], device=self.device)
        tdist.all_reduce(flags, op=tdist.ReduceOp.MAX)
        return bool(flags[0] > 0), bool(flags[1] > 0)

    def reduce_step(self, params: Sequence[torch.nn.Parameter], weight: float, loss: float,
                    preempt: bool, nonfinite: bool) -> StepReduction:
        """Average gradients over ranks weighted by ``weight``; share loss and flags.

        Each rank's gradient is of its own mean loss; the result on every rank is
        ``sum_r w_r g_r / sum_r w_r``. A parameter keeps ``grad is None`` only when no
        rank produced a gradient for it (so optimizers skip it exactly as in one process).
        """
        if not self.env.distributed:
            return StepReduction(loss, preempt, nonfinite)
        # one buffer, weighted and scaled by one operation each (not one per parameter:
        # on a GPU every operation is a kernel launched from Python); the gradients come
        # back as views of it
        pieces = [(p.grad if p.grad is not None else torch.zeros_like(p)).detach().reshape(-1)
                  .float() for p in params]
        tail = [weight, loss * weight, float(preempt), float(nonfinite)]
        tail += [float(p.grad is not None) for p in params]
        pieces.append(torch.tensor(tail, dtype=torch.float32, device=self.device))
        flat = torch.cat(pieces)
        n_grad = len(flat) - len(tail)
        grads = flat[:n_grad]
        grads.mul_(weight)
        tdist.all_reduce(flat)
        total_weight, loss_sum, n_preempt, n_nonfinite, *present = flat[n_grad:].tolist()
        scale = 1.0 / total_weight if total_weight > 0 else 0.0
        grads.mul_(scale)
        offset = 0
        for p, has in zip(params, present, strict=True):
            size = p.numel()
            p.grad = grads[offset:offset + size].view_as(p).to(p.dtype) if has > 0 else None
            offset += size
        return StepReduction(loss_sum * scale, n_preempt > 0, n_nonfinite > 0)


def free_port() -> int:
    """A TCP port free on this host right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def launch_local(nproc: int, command: Sequence[str], poll_s: float = 0.2,
                 grace_s: float = 60.0) -> int:
    """Run ``command`` as ``nproc`` ranks on this host (what torchrun does), forwarding
    SIGTERM/SIGUSR1/SIGINT to all of them; the exit status is 0 when all succeed, 75
    when they were preempted, else the first failure (the others are then stopped)."""
    port = free_port()
    procs: list[subprocess.Popen[bytes]] = []
    for rank in range(nproc):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(nproc),
                   LOCAL_WORLD_SIZE=str(nproc), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen(list(command), env=env))

    def forward(signum: int, frame: FrameType | None) -> None:
        del frame
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signum)

    forwarded = (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT)
    old = {sig: signal.signal(sig, forward) for sig in forwarded}
    try:
        failed_at: float | None = None
        while any(proc.poll() is None for proc in procs):
            codes = [proc.returncode for proc in procs if proc.returncode is not None]
            if failed_at is None and any(code not in (0, 75) for code in codes):
                failed_at = time.monotonic()  # a rank died: the others cannot finish
                for proc in procs:
                    if proc.poll() is None:
                        proc.terminate()
            if failed_at is not None and time.monotonic() - failed_at > grace_s:
                for proc in procs:
                    if proc.poll() is None:
                        proc.kill()
            time.sleep(poll_s)
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    codes = [proc.returncode for proc in procs]
    bad = [code for code in codes if code not in (0, 75)]
    if bad:
        print(f"launch: ranks exited with {codes}", file=sys.stderr)
        return bad[0] if bad[0] > 0 else 1
    return 75 if 75 in codes else 0
