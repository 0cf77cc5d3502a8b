"""The backend interface of the launcher (local now; slurm plugs in here later)."""

from __future__ import annotations

import os
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from punct.launch.jobs import Job, LaunchError, Resources, job_environment

PACKAGE_ROOT = Path(__file__).resolve().parents[2]
"""The directory holding the ``punct`` package (put on PYTHONPATH of the job wrapper)."""


@dataclass
class JobHandle:
    """A submitted job; ``returncode`` is set once the backend has seen it finish."""

    job: Job
    backend_id: str
    returncode: int | None = None


class Backend(ABC):
    """Runs jobs somewhere. A scheduler calls submit, then wait until all are done.

    Every backend runs the same wrapper on the execution host
    (:func:`wrapper_command`), so logs look the same whatever the backend.
    """

    name: str = ""

    def __init__(self, resources: Resources):
        self.resources = resources

    @abstractmethod
    def submit(self, job: Job) -> JobHandle:
        """Start ``job`` (its log directory already exists) and return its handle."""

    @abstractmethod
    def wait(self, handles: Sequence[JobHandle], timeout: float | None = None) -> list[JobHandle]:
        """Block until at least one of ``handles`` has finished (or ``timeout`` seconds).

        Returns the handles that finished, with ``returncode`` set.
        """

    @abstractmethod
    def cancel(self, handles: Sequence[JobHandle]) -> None:
        """Stop the given running jobs and everything they started; returns when they are gone."""


def wrapper_command(job: Job, resources: Resources) -> list[str]:
    """The argv that runs ``job`` under the log-writing wrapper :mod:`punct.launch.runjob`."""
    argv = [sys.executable, "-m", "punct.launch.runjob", "--log", str(job.log)]
    argv += ["--resources", resources.describe(), "--threads", str(resources.threads)]
    for key, value in sorted(job_environment(job, resources).items()):
        argv += ["--setenv", f"{key}={value}"]
    argv += ["--", job.command]
    return argv


def wrapper_environment() -> dict[str, str]:
    """The launcher's environment with the package root first on PYTHONPATH."""
    env = dict(os.environ)
    root = str(PACKAGE_ROOT)
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in parts:
        env["PYTHONPATH"] = os.pathsep.join([root, *parts])
    return env


def _local(resources: Resources) -> Backend:
    from punct.launch.local import LocalBackend

    return LocalBackend(resources)


def _slurm(resources: Resources) -> Backend:
    raise LaunchError(
        "--backend slurm is not implemented yet; use --backend local (the default), "
        "e.g. keep train_cmd=\"utils/launch.sh\" in conf/cmd.sh"
    )


BACKENDS: dict[str, Callable[[Resources], Backend]] = {"local": _local, "slurm": _slurm}


def get_backend(name: str, resources: Resources) -> Backend:
    """Build the backend called ``name``; LaunchError for unknown or unimplemented ones."""
    try:
        factory = BACKENDS[name]
    except KeyError:
        known = ", ".join(sorted(BACKENDS))
        raise LaunchError(f"unknown backend '{name}' (known: {known})") from None
    return factory(resources)
