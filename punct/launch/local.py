"""The local backend: jobs run as process groups on this machine (Kaldi's run.pl)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from collections.abc import Sequence

from punct.launch.backend import (
    Backend,
    JobHandle,
    Placement,
    wrapper_command,
    wrapper_environment,
)
from punct.launch.jobs import Job, LaunchError, Resources


class LocalBackend(Backend):
    """Each job is the wrapper process in a new session; cancel kills the whole group.

    ``--mem`` and ``--time`` are recorded in the log header but not enforced;
    ``--gpu 0`` hides the GPUs (CUDA_VISIBLE_DEVICES="").
    """

    name = "local"

    def __init__(self, resources: Resources, placement: Placement | None = None,
                 kill_grace: float = 5.0):
        super().__init__(resources, placement)
        if self.placement.ntasks is not None and self.placement.ntasks > 1:
            raise LaunchError(
                f"--ntasks {self.placement.ntasks} needs --backend slurm (it runs the command "
                "under srun); on one machine start the processes yourself, e.g. the trainer's "
                "--ngpu N"
            )
        self.kill_grace = kill_grace
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    def submit(self, job: Job) -> JobHandle:
        """Start the job's wrapper as the leader of a new process group."""
        proc = subprocess.Popen(
            wrapper_command(job, self.resources),
            env=wrapper_environment(),
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        handle = JobHandle(job, str(proc.pid))
        self._procs[handle.backend_id] = proc
        return handle

    def _poll(self, handle: JobHandle) -> bool:
        """Update ``handle.returncode``; True once the job has finished."""
        if handle.returncode is None:
            code = self._procs[handle.backend_id].poll()
            if code is not None:
                handle.returncode = code if code >= 0 else 128 - code
                del self._procs[handle.backend_id]
                return True
            return False
        return True

    def wait(self, handles: Sequence[JobHandle], timeout: float | None = None) -> list[JobHandle]:
        """Block (on pidfds where the kernel has them, else by polling) until a job finishes."""
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.002
        while True:
            live = [h for h in handles if h.returncode is None]
            done = [h for h in live if self._poll(h)]
            if done or not live:
                return done
            left = 1.0 if deadline is None else deadline - time.monotonic()
            if left <= 0:
                return []
            if not _wait_pidfds([int(h.backend_id) for h in live], min(left, 1.0)):
                time.sleep(min(delay, left))
                delay = min(delay * 2, 0.05)

    def cancel(self, handles: Sequence[JobHandle]) -> None:
        """SIGTERM each job's process group, then SIGKILL what is left after the grace time."""
        live = [h for h in handles if h.returncode is None]
        for handle in live:
            _signal_group(int(handle.backend_id), signal.SIGTERM)
        deadline = time.monotonic() + self.kill_grace
        while any(not self._poll(h) for h in live) and time.monotonic() < deadline:
            time.sleep(0.02)
        for handle in live:
            _signal_group(int(handle.backend_id), signal.SIGKILL)
            if handle.returncode is None:
                self._procs[handle.backend_id].wait()
                self._poll(handle)


def _wait_pidfds(pids: list[int], timeout: float) -> bool:
    """Wait up to ``timeout`` s for one of ``pids`` to exit; False if pidfds are unsupported."""
    fds: list[int] = []
    try:
        for pid in pids:
            fds.append(os.pidfd_open(pid))
    except (AttributeError, OSError):
        for fd in fds:
            os.close(fd)
        return False
    try:
        select.select(fds, [], [], timeout)
    finally:
        for fd in fds:
            os.close(fd)
    return True


def _signal_group(pgid: int, sig: int) -> None:
    """Send ``sig`` to the process group ``pgid`` if it still has members."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
