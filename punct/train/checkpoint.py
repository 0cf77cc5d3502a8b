"""Checkpoint files that survive crashes and preemption.

Every checkpoint is written to ``<name>.tmp``, flushed to disk and moved into place with
``os.replace``, so a reader never sees a half-written file under the final name. A
sidecar ``<name>.sha256`` (``sha256sum`` format, so ``sha256sum -c`` checks it by hand)
holds the digest of the file; a checkpoint whose digest does not match is treated as
corrupt. The resumable ``last.pt`` keeps its predecessor as ``last.prev.pt``: the old
file is hard-linked (copied where links are not possible) to the new name before
``last.pt`` is replaced, so at every moment at least one of the two is complete and
verified, and ``load_resumable`` falls back to ``last.prev.pt`` with a warning. Checking
and loading a checkpoint (also for decoding and export) is :mod:`punct.models.checkpoint`.

Preemption: ``PreemptionGuard`` turns SIGTERM and SIGUSR1 (Slurm's ``--signal``) into a
flag that the training loop checks after each step; the trainer then writes ``last.pt``
and raises ``TrainingPreempted``, which the command line turns into exit status 75
(EX_TEMPFAIL), so that a recipe stage is not marked done and can be resumed.
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import torch

from punct.atomic import atomic_write_text
from punct.errors import MissingDataError
from punct.models.checkpoint import (
    CorruptCheckpointError,
    file_sha256,
    load_verified,
    sidecar,
    verify,
)

LAST = "last.pt"
PREVIOUS = "last.prev.pt"
BEST = "best.pt"
PREEMPTED_EXIT = 75
"""Exit status of a preempted training run (EX_TEMPFAIL from sysexits.h)."""
PREEMPTION_SIGNALS = (signal.SIGTERM, signal.SIGUSR1)


class TrainingPreempted(RuntimeError):
    """Training stopped on a signal after writing a resumable checkpoint."""

    def __init__(self, message: str, checkpoint: Path):
        super().__init__(message)
        self.checkpoint = checkpoint


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory handles
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _write_tmp(obj: Any, path: Path) -> tuple[Path, str]:
    """torch.save ``obj`` to ``<path>.tmp`` (synced); return the tmp path and its digest."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as handle:
        torch.save(obj, handle)
        handle.flush()
        os.fsync(handle.fileno())
    return tmp, file_sha256(tmp)


def _install(tmp: Path, digest: str, path: Path) -> None:
    """Move a finished tmp file and its checksum into place (checksum first)."""
    atomic_write_text(sidecar(path), f"{digest}  {path.name}\n", sync=True)
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def save_atomic(obj: Any, path: str | Path) -> Path:
    """``torch.save`` to ``path`` via a tmp file and ``os.replace``, with a sha256 sidecar."""
    path = Path(path)
    tmp, digest = _write_tmp(obj, path)
    _install(tmp, digest, path)
    return path


def _keep_previous(last: Path, previous: Path) -> None:
    """Make ``previous`` a verified copy of ``last`` (hard link where possible)."""
    try:
        verify(last)
    except CorruptCheckpointError:
        return  # never replace a good previous checkpoint with a bad one
    tmp = previous.with_name(previous.name + ".tmp")
    tmp.unlink(missing_ok=True)
    try:
        os.link(last, tmp)
    except OSError:
        shutil.copyfile(last, tmp)
    _install(tmp, sidecar(last).read_text(encoding="utf-8").split()[0], previous)


def save_resumable(state: dict[str, Any], directory: str | Path) -> Path:
    """Write ``last.pt`` atomically, keeping the previous good one as ``last.prev.pt``."""
    directory = Path(directory)
    last = directory / LAST
    tmp, digest = _write_tmp(state, last)
    if last.exists():
        _keep_previous(last, directory / PREVIOUS)
    _install(tmp, digest, last)
    return last


def load_resumable(directory: str | Path,
                   warn: Callable[[str], None] | None = None) -> tuple[dict[str, Any], Path]:
    """The newest good resumable checkpoint of an experiment: ``last.pt``, else
    ``last.prev.pt`` (with a warning). MissingDataError when neither is usable."""
    directory = Path(directory)
    problems = []
    for name in (LAST, PREVIOUS):
        path = directory / name
        if not path.exists():
            problems.append(f"{name} does not exist")
            continue
        try:
            state = load_verified(path)
        except CorruptCheckpointError as err:
            problems.append(str(err))
            if warn is not None:
                warn(f"warning: {err}; trying the previous checkpoint")
            continue
        if name == PREVIOUS and warn is not None:
            warn(f"warning: resuming from the previous checkpoint {path}")
        return state, path
    raise MissingDataError(
        "nothing to resume: " + "; ".join(problems)
        + " (run without --resume to train from scratch)", directory)


def clear_checkpoints(directory: str | Path) -> None:
    """Remove checkpoints, sidecars and tmp files of an earlier run."""
    directory = Path(directory)
    for name in (LAST, PREVIOUS, BEST):
        for path in (directory / name, sidecar(directory / name)):
            path.unlink(missing_ok=True)
            path.with_name(path.name + ".tmp").unlink(missing_ok=True)


class PreemptionGuard:
    """Records SIGTERM/SIGUSR1 instead of dying; restores the old handlers on exit.

    Installing handlers is only possible in the main thread; elsewhere the guard is
    inert (``active`` False) and the signals keep their default behaviour.
    """

    def __init__(self, signals: tuple[signal.Signals, ...] = PREEMPTION_SIGNALS):
        self.signals = signals
        self.received: signal.Signals | None = None
        self.active = False
        self._old: dict[signal.Signals, Any] = {}

    @property
    def requested(self) -> bool:
        return self.received is not None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        del frame
        self.received = signal.Signals(signum)

    def __enter__(self) -> PreemptionGuard:
        if threading.current_thread() is threading.main_thread():
            for sig in self.signals:
                self._old[sig] = signal.signal(sig, self._handle)
            self.active = True
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()
        self.active = False
