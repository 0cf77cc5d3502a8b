"""The backend interface of the launcher, :func:`get_backend` and :func:`run_jobs`.

Backends (local, slurm) are named in the ``backend`` table of :mod:`punct.registry`.
"""

from __future__ import annotations

import os
import sys
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from punct.launch.jobs import Job, JobsCancelled, LaunchError, Resources, job_environment
from punct.registry import UnknownNameError, lookup

POLL_SECONDS = 0.5
"""How long one backend.wait call may block before ``stop`` is asked again."""

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

        The default submits them one by one (:func:`run_jobs`); a scheduler backend may
        submit them all at once as an array.
        """
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


def get_backend(name: str, resources: Resources, placement: Placement | None = None) -> Backend:
    """Build the backend called ``name`` (the ``backend`` table of :mod:`punct.registry`).

    LaunchError for unknown ones or bad options; the slurm backend also raises
    PunctInputError/MissingDataError for its config file.
    """
    try:
        backend_class = lookup("backend", name)
    except UnknownNameError as err:
        raise LaunchError(str(err)) from None
    return backend_class(resources, placement if placement is not None else Placement())


def run_jobs(
    backend: Backend,
    jobs: Sequence[Job],
    max_jobs_run: int | None = None,
    stop: Callable[[], bool] = lambda: False,
) -> list[JobHandle]:
    """Submit ``jobs`` in order, keeping at most ``max_jobs_run`` running (None: all at once).

    Returns the finished handles in job order. When ``stop()`` turns true (e.g. a
    signal was received) or the loop fails, the running jobs are cancelled; then
    :class:`JobsCancelled` (or the failure) is raised.
    """
    limit = len(jobs) if max_jobs_run is None or max_jobs_run <= 0 else max_jobs_run
    pending = deque(jobs)
    running: list[JobHandle] = []
    finished: list[JobHandle] = []
    try:
        while pending or running:
            while pending and len(running) < limit and not stop():
                job = pending.popleft()
                job.log.parent.mkdir(parents=True, exist_ok=True)
                running.append(backend.submit(job))
            if stop():
                raise JobsCancelled(f"cancelled {len(running)} running job(s)")
            for handle in backend.wait(running, timeout=POLL_SECONDS):
                running.remove(handle)
                finished.append(handle)
    except BaseException:
        backend.cancel(running)
        raise
    order = {id(job): i for i, job in enumerate(jobs)}
    return sorted(finished, key=lambda h: order[id(h.job)])
