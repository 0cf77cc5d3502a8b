"""The backend interface of the launcher and the registry of backends (local, slurm)."""

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


@dataclass(frozen=True)
class Placement:
    """Scheduler-only options: the partition and the number of tasks (processes) per job.

    The local backend ignores the partition (as Kaldi's run.pl does) and refuses
    ``ntasks > 1``; the slurm backend maps both through conf/slurm.conf.
    """

    partition: str | None = None
    ntasks: int | None = None

    def describe(self) -> str:
        """``partition=gpu ntasks=2`` (only the options given), for the log header."""
        parts = [f"{key}={getattr(self, key)}" for key in ("partition", "ntasks")
                 if getattr(self, key) is not None]
        return " ".join(parts)


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

    def __init__(self, resources: Resources, placement: Placement | None = None):
        self.resources = resources
        self.placement = placement if placement is not None else Placement()

    def run(
        self,
        jobs: Sequence[Job],
        max_jobs_run: int | None = None,
        stop: Callable[[], bool] = lambda: False,
    ) -> list[JobHandle]:
        """Run ``jobs`` to the end (at most ``max_jobs_run`` at once); handles in job order.

        The default submits them one by one (:func:`punct.launch.scheduler.run_jobs`);
        a scheduler backend may submit them all at once as an array.
        """
        from punct.launch.scheduler import run_jobs

        return run_jobs(self, jobs, max_jobs_run, stop)

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


def _local(resources: Resources, placement: Placement) -> Backend:
    from punct.launch.local import LocalBackend

    if placement.ntasks is not None and placement.ntasks > 1:
        raise LaunchError(
            f"--ntasks {placement.ntasks} needs --backend slurm (it runs the command under "
            "srun); on one machine start the processes yourself, e.g. the trainer's --ngpu N"
        )
    return LocalBackend(resources)


def _slurm(resources: Resources, placement: Placement) -> Backend:
    from punct.launch.slurm import SlurmBackend

    return SlurmBackend(resources, placement)


BACKENDS: dict[str, Callable[[Resources, Placement], Backend]] = {
    "local": _local,
    "slurm": _slurm,
}


def get_backend(name: str, resources: Resources, placement: Placement | None = None) -> Backend:
    """Build the backend called ``name``; LaunchError for unknown ones or bad options.

    The slurm backend also raises PunctInputError/MissingDataError for its config file.
    """
    try:
        factory = BACKENDS[name]
    except KeyError:
        known = ", ".join(sorted(BACKENDS))
        raise LaunchError(f"unknown backend '{name}' (known: {known})") from None
    return factory(resources, placement if placement is not None else Placement())
