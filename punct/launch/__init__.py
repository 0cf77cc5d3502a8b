"""The job launcher (Kaldi run.pl interface): ``utils/launch.sh`` -> :mod:`punct.launch.cli`.

Modules: :mod:`~punct.launch.jobs` (job arrays, resources, log format),
:mod:`~punct.launch.backend` (the ``Backend`` interface and registry),
:mod:`~punct.launch.local` (local process groups), :mod:`~punct.launch.scheduler`
(at most K jobs at once), :mod:`~punct.launch.runjob` (the per-job log wrapper).
"""

from __future__ import annotations

from punct.launch.backend import BACKENDS, Backend, JobHandle, get_backend
from punct.launch.jobs import Job, JobRange, LaunchError, Resources, expand_jobs, parse_job_range
from punct.launch.scheduler import JobsCancelled, run_jobs

__all__ = [
    "BACKENDS",
    "Backend",
    "Job",
    "JobHandle",
    "JobRange",
    "JobsCancelled",
    "LaunchError",
    "Resources",
    "expand_jobs",
    "get_backend",
    "parse_job_range",
    "run_jobs",
]
