"""Run a list of jobs through a backend with at most K of them at once."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

from punct.launch.backend import Backend, JobHandle
from punct.launch.jobs import Job

POLL_SECONDS = 0.5
"""How long one backend.wait call may block before ``stop`` is asked again."""


class JobsCancelled(Exception):
    """``stop()`` became true: the running jobs were cancelled."""


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
