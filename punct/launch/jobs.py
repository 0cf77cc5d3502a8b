"""Job descriptions for the launcher: JOB=a:b arrays, resources, log header and footer."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from punct.launch.logformat import log_exit_code

THREAD_ENV_VARS = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "PUNCT_NUM_THREADS",
)
"""Variables exported as --num-threads N (torch sizes its intra-op pool from OMP_NUM_THREADS)."""

_RANGE_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(\d+):(\d+)$")


class JobsCancelled(Exception):
    """A stop request (e.g. a signal) arrived: the running jobs were cancelled."""


class LaunchError(Exception):
    """A usage or configuration error of the launcher (exit code 1)."""


@dataclass(frozen=True)
class JobRange:
    """A job array ``NAME=start:end`` (both ends included)."""

    name: str
    start: int
    end: int

    @property
    def indices(self) -> range:
        """The job indices, in order."""
        return range(self.start, self.end + 1)


@dataclass(frozen=True)
class Resources:
    """What each job asks for; the local backend records mem/time but does not enforce them.

    ``num_threads`` and ``gpu`` are None when not given: the job's environment is then
    left as it is.
    """

    num_threads: int | None = None
    mem: str | None = None
    gpu: int | None = None
    time: str | None = None
    config: str | None = None

    @property
    def threads(self) -> int:
        """Threads per job for accounting (1 when --num-threads was not given)."""
        return self.num_threads if self.num_threads is not None else 1

    def describe(self) -> str:
        """One line for the log header, e.g. ``threads=1 mem=4G gpu=0 time=1:00:00``."""
        parts = [f"threads={self.threads}"]
        for key in ("mem", "gpu", "time", "config"):
            value = getattr(self, key)
            if value is not None:
                parts.append(f"{key}={value}")
        return " ".join(parts)


@dataclass(frozen=True)
class Job:
    """One job: its array index (None for the single-job form), command and log file."""

    index: int | None
    command: str
    log: Path
    env: dict[str, str] = field(default_factory=dict)


def parse_job_range(arg: str) -> JobRange | None:
    """Parse ``JOB=1:4``; None when ``arg`` is not of that form (then it is a log path)."""
    match = _RANGE_RE.match(arg)
    if match is None:
        return None
    name, start, end = match.group(1), int(match.group(2)), int(match.group(3))
    if end < start:
        raise LaunchError(f"invalid job range {arg}: end {end} is before start {start}")
    return JobRange(name, start, end)


def expand_jobs(job_range: JobRange | None, log: str, args: Sequence[str]) -> list[Job]:
    """The jobs of one launcher call.

    Every occurrence of the range's name (e.g. ``JOB``) in the log path and in the
    command words is replaced by the job index (substring replacement, as in Kaldi's
    run.pl, except that the shell references ``$JOB`` and ``${JOB...}`` are kept: the
    environment variable NAME is set to the index too). The command is the words
    joined with single spaces, to be run by ``bash -c``.
    """
    if not args:
        raise LaunchError("no command given")
    if job_range is None:
        return [Job(None, " ".join(args), Path(log))]
    if job_range.end > job_range.start and job_range.name not in log:
        raise LaunchError(
            f"running jobs {job_range.name}={job_range.start}:{job_range.end} but the log "
            f"path {log} does not contain {job_range.name}: every job would write the same log"
        )
    pattern = re.compile(r"(?<!\$)(?<!\$\{)" + re.escape(job_range.name))
    jobs = []
    for index in job_range.indices:
        sub = str(index)
        command = " ".join(pattern.sub(sub, arg) for arg in args)
        jobs.append(Job(index, command, Path(pattern.sub(sub, log)), {job_range.name: sub}))
    return jobs


def job_environment(job: Job, resources: Resources) -> dict[str, str]:
    """Environment variables to set for ``job`` on top of the launcher's environment."""
    env = dict(job.env)
    if resources.num_threads is not None:
        for var in THREAD_ENV_VARS:
            env[var] = str(resources.num_threads)
    if resources.gpu is not None and resources.gpu <= 0:
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def needs_rerun(job: Job) -> bool:
    """True unless the job's existing log ends with ``(code 0)``."""
    return log_exit_code(job.log) != 0
