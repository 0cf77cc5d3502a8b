"""The Slurm backend: one job array per launcher call, polled until every task has ended.

Each call writes a batch script to ``<log dir>/q/`` whose array task ``i`` runs the
per-job log wrapper :mod:`punct.launch.runjob` for job ``i`` (so logs look the same as
with the local backend; their Resources line adds the Slurm job id and node). It is
submitted with ``sbatch --parsable --array=<indices>[%K]`` plus the flags that
``conf/slurm.conf`` maps the generic options to; Slurm's own output of task ``i`` goes
to ``q/slurm-<jobid>_<i>.out``. The launcher then polls ``squeue`` until the tasks have
left the queue and reads each exit code from its log footer (then from ``scontrol``
or ``sacct`` when a task ended without writing one, e.g. cancelled while pending,
killed for memory or node failure: a footer saying so is appended to its log).
Interrupting the launcher cancels the tasks with ``scancel``.

``--ntasks N`` (N > 1) allocates N Slurm tasks and runs the command under ``srun``
inside the job (one log, written by the wrapper of the batch step), e.g. for DDP.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from punct.launch.backend import (
    PACKAGE_ROOT,
    Backend,
    JobHandle,
    Placement,
    wrapper_command,
    wrapper_environment,
)
from punct.launch.jobs import Job, JobsCancelled, LaunchError, Resources
from punct.launch.logformat import log_exit_code, log_footer
from punct.launch.slurmconf import SlurmConfig, read_slurm_config

DEFAULT_CONFIG = Path("conf/slurm.conf")
"""Used when --config is not given (relative to the working directory, else to the repo)."""

ACTIVE_STATES = frozenset({
    "PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED",
    "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED",
    "PREEMPTED", "RESV_DEL_HOLD",
})
"""squeue states of a task that has not ended (a preempted task may be requeued)."""

RAN_STATES = frozenset({"COMPLETED", "FAILED"})
"""Final states of a task whose batch script ran to its end (its log should have a footer)."""

QUERY_RETRIES = 30
"""Consecutive failed squeue calls tolerated (the controller may be busy) before giving up."""

_TRANSIENT = ("temporarily", "timed out", "unable to contact", "try again", "connection refused")


@dataclass(frozen=True)
class TaskState:
    """A task's state as Slurm reports it: ``FAILED`` and ``1:0`` (exit code:signal)."""

    state: str
    exit_code: str = ""

    def returncode(self) -> int:
        """The exit status implied by Slurm's ``code:signal`` (1 when it says nothing)."""
        match = re.fullmatch(r"(\d+):(\d+)", self.exit_code)
        if match is None:
            return 1
        code, sig = int(match.group(1)), int(match.group(2))
        if code:
            return code
        if sig:
            return 128 + sig
        return 0 if self.state == "COMPLETED" else 1


def array_spec(indices: Sequence[int], throttle: int | None = None) -> str:
    """``--array`` value: sorted indices as ranges (``1-3,7``), ``%K`` for at most K at once."""
    ordered = sorted(set(indices))
    if not ordered:
        raise ValueError("no array indices")
    parts: list[str] = []
    start = prev = ordered[0]
    for index in [*ordered[1:], None]:
        if index is not None and index == prev + 1:
            prev = index
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if index is not None:
            start = prev = index
    spec = ",".join(parts)
    if throttle is not None and throttle < len(ordered):
        spec += f"%{throttle}"
    return spec


def parse_squeue(text: str) -> dict[str, str]:
    """``squeue -h -r -o '%i %T'`` output -> {``<jobid>[_<task>]``: state}."""
    states = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 2:
            states[words[0]] = words[1]
    return states


def parse_scontrol(text: str) -> dict[str, TaskState]:
    """``scontrol -o show job`` output -> {``<arrayjob>_<task>`` or ``<jobid>``: state}.

    Records of pending array remainders (``ArrayTaskId=3-5``) are skipped.
    """
    states = {}
    for line in text.splitlines():
        fields = dict(word.split("=", 1) for word in line.split() if "=" in word)
        if "JobId" not in fields or "JobState" not in fields:
            continue
        task = fields.get("ArrayTaskId")
        if task is not None and not task.isdigit():
            continue
        key = f"{fields['ArrayJobId']}_{task}" if task is not None else fields["JobId"]
        states[key] = TaskState(fields["JobState"], fields.get("ExitCode", ""))
    return states


def parse_sacct(text: str) -> dict[str, TaskState]:
    """``sacct -n -P -X -o JobID,State,ExitCode`` output -> {JobID: state}.

    States like ``CANCELLED by 0`` keep their first word.
    """
    states = {}
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) >= 3 and parts[0]:
            states[parts[0]] = TaskState(parts[1].split()[0] if parts[1] else "", parts[2])
    return states


def resolve_config_path(config: str | None) -> Path:
    """--config (or conf/slurm.conf): as given if it exists, else relative to the repo root."""
    path = Path(config) if config is not None else DEFAULT_CONFIG
    if path.is_absolute() or path.exists():
        return path
    in_repo = PACKAGE_ROOT / path
    return in_repo if in_repo.exists() else path


def option_values(resources: Resources, placement: Placement) -> dict[str, str]:
    """The generic options given on the command line, as slurm.conf rule values."""
    values = {
        "num-threads": resources.num_threads,
        "mem": resources.mem,
        "gpu": resources.gpu,
        "time": resources.time,
        "partition": placement.partition,
        "ntasks": placement.ntasks,
    }
    return {name: str(value) for name, value in values.items() if value is not None}


def _job_name(job: Job) -> str:
    """A job name from its log file: ``align_train`` for ``log/align_train.3.log``."""
    stem = job.log.name.removesuffix(".log")
    if job.index is not None:
        stem = re.sub(rf"[._-]?{job.index}$", "", stem) or stem
    return stem or "launch"


class SlurmBackend(Backend):
    """Submits job arrays with sbatch and polls squeue; see the module docstring."""

    name = "slurm"

    def __init__(
        self,
        resources: Resources,
        placement: Placement | None = None,
        config: SlurmConfig | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        super().__init__(resources, placement)
        if config is None:
            config = read_slurm_config(resolve_config_path(resources.config))
        self.config = config
        self.clock = clock
        self._sbatch_flags = config.flags(option_values(resources, self.placement))
        self._next_poll = 0.0
        self._delay = 0.5
        self._failures = 0
        self._qdirs: dict[str, Path] = {}  # job id -> where its script and outputs are

    # ---- submission ----

    def task_command(self, job: Job) -> str:
        """The shell line of the batch script that runs ``job`` under the log wrapper."""
        if (self.placement.ntasks or 1) > 1:
            srun = " ".join(shlex.quote(word) for word in self.config.srun)
            job = Job(job.index, f"{srun} bash -c {shlex.quote(job.command)}", job.log, job.env)
        argv = wrapper_command(job, self.resources)
        at = argv.index("--resources") + 1
        words = [shlex.quote(word) for word in argv]
        extra = self.placement.describe()
        slurm_id = "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}" if job.index is not None \
            else "${SLURM_JOB_ID}"
        words[at] = '"' + " ".join(
            p for p in (argv[at], extra, f"slurm_job={slurm_id}", "node=${SLURMD_NODENAME}") if p
        ) + '"'
        return "exec " + " ".join(words)

    def batch_script(self, jobs: Sequence[Job]) -> str:
        """The batch script: a case over SLURM_ARRAY_TASK_ID (or the one job's line)."""
        lines = [
            "#!/bin/bash",
            f"# Written by launch.sh (punct.launch.slurm) for {len(jobs)} job(s); "
            f"first log: {jobs[0].log}",
            "set -u",
            # srun no longer inherits --cpus-per-task from the allocation (Slurm >= 22.05).
            '[ -n "${SLURM_CPUS_PER_TASK:-}" ] && export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK',
        ]
        if len(jobs) == 1 and jobs[0].index is None:
            lines.append(self.task_command(jobs[0]))
        else:
            lines.append('case "${SLURM_ARRAY_TASK_ID:-}" in')
            for job in jobs:
                lines.append(f"  {job.index}) {self.task_command(job)} ;;")
            lines.append('  *) echo "launch.sh: no task ${SLURM_ARRAY_TASK_ID:-} in this '
                         'script" >&2; exit 1 ;;')
            lines.append("esac")
        return "\n".join(lines) + "\n"

    def sbatch_command(self, jobs: Sequence[Job], script: Path, qdir: Path,
                       max_jobs_run: int | None = None) -> list[str]:
        """The sbatch argv for ``jobs`` (the script's path last)."""
        argv = [*self.config.command, "--parsable", "--kill-on-invalid-dep=yes",
                f"--job-name={_job_name(jobs[0])}"]
        if len(jobs) == 1 and jobs[0].index is None:
            argv.append(f"--output={qdir}/slurm-%j.out")
        else:
            indices = [j.index for j in jobs if j.index is not None]
            if len(indices) != len(jobs):
                raise LaunchError("a job array needs an index for every job")
            argv += [f"--array={array_spec(indices, max_jobs_run)}",
                     f"--output={qdir}/slurm-%A_%a.out"]
        return [*argv, *self._sbatch_flags, str(script)]

    def submit_array(self, jobs: Sequence[Job], max_jobs_run: int | None = None) -> list[JobHandle]:
        """Submit ``jobs`` as one sbatch call; their handles, in the order given."""
        if not jobs:
            return []
        for job in jobs:  # a stale footer would read as this run's exit code
            job.log.unlink(missing_ok=True)
        qdir = jobs[0].log.parent.resolve() / "q"
        qdir.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix="submit.", suffix=".sh", dir=qdir)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(self.batch_script(jobs))
        script = Path(name)
        argv = self.sbatch_command(jobs, script, qdir, max_jobs_run)
        output = self._call(argv, "sbatch", retries=3)
        job_id = output.strip().split(";")[0]
        if not job_id.isdigit():
            raise LaunchError(f"sbatch printed '{output.strip()}', expected a job id: {argv}")
        script.replace(qdir / f"slurm-{job_id}.sh")
        self._qdirs[job_id] = qdir
        self._next_poll = 0.0
        self._delay = 0.5
        if len(jobs) == 1 and jobs[0].index is None:
            return [JobHandle(jobs[0], job_id)]
        return [JobHandle(job, f"{job_id}_{job.index}") for job in jobs]

    def submit(self, job: Job) -> JobHandle:
        """Submit one job (an array of one task when it has an index)."""
        return self.submit_array([job])[0]

    def run(self, jobs: Sequence[Job], max_jobs_run: int | None = None,
            stop: Callable[[], bool] = lambda: False) -> list[JobHandle]:
        """Submit all jobs as one array (``%K`` limits the running ones) and wait for them."""
        for job in jobs:
            job.log.parent.mkdir(parents=True, exist_ok=True)
        handles = self.submit_array(jobs, max_jobs_run)
        try:
            while any(h.returncode is None for h in handles):
                if stop():
                    raise JobsCancelled(f"cancelled {len(handles)} Slurm task(s)")
                self.wait(handles, timeout=0.25)
        except BaseException:
            self.cancel(handles)
            raise
        return handles

    # ---- waiting ----

    def _call(self, argv: list[str], what: str, retries: int = 0, timeout: float = 120) -> str:
        """Run a Slurm client; its stdout. LaunchError (with its stderr) when it fails.

        Errors that read as transient (controller busy or unreachable) are retried
        ``retries`` times, after 2, 4, ... seconds.
        """
        for attempt in range(retries + 1):
            try:
                proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                                      env=wrapper_environment(), stdin=subprocess.DEVNULL)
            except FileNotFoundError:
                raise LaunchError(f"{argv[0]} not found: is Slurm installed here?") from None
            except subprocess.TimeoutExpired:
                error = f"timed out after {timeout:.0f} s"
            else:
                if proc.returncode == 0:
                    return proc.stdout
                error = proc.stderr.strip() or f"exit code {proc.returncode}"
            transient = any(word in error.lower() for word in _TRANSIENT)
            if not transient or attempt == retries:
                break
            time.sleep(2.0 * (attempt + 1))
        raise LaunchError(f"{what} failed: {error}\n  command: {shlex.join(argv)}")

    def queue_states(self, ids: Sequence[str]) -> dict[str, str]:
        """{task id: state} of the given jobs' tasks still in the queue."""
        bases = sorted({i.split("_")[0] for i in ids}, key=int)
        argv = ["squeue", "-h", "-r", "-o", "%i %T", "-j", ",".join(bases)]
        try:
            return parse_squeue(self._call(argv, "squeue"))
        except LaunchError as err:
            if "invalid job id" not in str(err).lower():
                raise
        states: dict[str, str] = {}  # some id is gone: ask for each alone
        for base in bases:
            try:
                states.update(parse_squeue(self._call([*argv[:-1], base], "squeue")))
            except LaunchError as err:
                if "invalid job id" not in str(err).lower():
                    raise
        return states

    def final_state(self, slurm_id: str) -> TaskState | None:
        """How a task that left the queue ended, from scontrol, else sacct; None if unknown."""
        try:
            text = self._call(["scontrol", "-o", "show", "job", slurm_id], "scontrol")
            state = parse_scontrol(text).get(slurm_id)
            if state is not None:
                return state
        except LaunchError:
            pass
        try:
            argv = ["sacct", "-n", "-P", "-X", "-j", slurm_id, "-o", "JobID,State,ExitCode"]
            return parse_sacct(self._call(argv, "sacct")).get(slurm_id)
        except LaunchError:
            return None

    def _finish(self, handle: JobHandle, log_wait: float) -> None:
        """Set ``handle.returncode`` from the log footer, else from Slurm (noting it in the log)."""
        code = log_exit_code(handle.job.log)
        if code is None:
            state = self.final_state(handle.backend_id)
            if state is None or state.state in RAN_STATES:
                deadline = self.clock() + log_wait  # a shared filesystem may lag
                while code is None and self.clock() < deadline:
                    time.sleep(0.5)
                    code = log_exit_code(handle.job.log)
            if code is None:
                code = state.returncode() if state is not None else 1
                code = code or 1
                self._note_in_log(handle, state, code)
        handle.returncode = code

    def _note_in_log(self, handle: JobHandle, state: TaskState | None, code: int) -> None:
        """Append why the task ended and a footer to a log the task did not finish."""
        base, _, task = handle.backend_id.partition("_")
        qdir = self._qdirs.get(base, handle.job.log.parent.resolve() / "q")
        out = qdir / (f"slurm-{base}_{task}.out" if task else f"slurm-{base}.out")
        how = (f"in state {state.state} (exit code {state.exit_code or '?'})"
               if state is not None else "in an unknown state (no longer known to Slurm)")
        with open(handle.job.log, "a", encoding="utf-8") as log:
            log.write(f"# launch.sh: Slurm job {handle.backend_id} ended {how} without the "
                      f"task's footer; Slurm's output is in {out}\n")
            log.write(log_footer(code, 0.0, self.resources.threads))

    def wait(self, handles: Sequence[JobHandle], timeout: float | None = None) -> list[JobHandle]:
        """Poll squeue (at growing intervals up to poll_interval) until a task has ended."""
        deadline = None if timeout is None else self.clock() + timeout
        while True:
            live = [h for h in handles if h.returncode is None]
            if not live:
                return []
            now = self.clock()
            if now >= self._next_poll:
                done = self._poll(live)
                self._delay = min(self._delay * 1.5, max(self.config.poll_interval, 0.1))
                self._next_poll = self.clock() + self._delay
                if done:
                    return done
            wake = self._next_poll if deadline is None else min(self._next_poll, deadline)
            if deadline is not None and self.clock() >= deadline:
                return []
            time.sleep(max(0.0, min(wake - self.clock(), 1.0)))

    def _poll(self, live: Sequence[JobHandle]) -> list[JobHandle]:
        """One squeue call; finishes and returns the handles no longer active."""
        try:
            states = self.queue_states([h.backend_id for h in live])
            self._failures = 0
        except LaunchError:
            self._failures += 1
            if self._failures > QUERY_RETRIES:
                raise
            return []
        done = []
        for handle in live:
            if states.get(handle.backend_id, "") not in ACTIVE_STATES:
                self._finish(handle, self.config.log_wait)
                done.append(handle)
        return done

    def cancel(self, handles: Sequence[JobHandle]) -> None:
        """scancel the live tasks and wait (up to a minute) until they have left the queue."""
        live = [h for h in handles if h.returncode is None]
        if not live:
            return
        self._call(["scancel", *[h.backend_id for h in live]], "scancel", retries=1, timeout=60)
        deadline = self.clock() + 60.0
        while live and self.clock() < deadline:
            try:
                states = self.queue_states([h.backend_id for h in live])
            except LaunchError:
                states = {h.backend_id: "UNKNOWN" for h in live}
            for handle in [h for h in live if states.get(h.backend_id, "") not in ACTIVE_STATES]:
                self._finish(handle, log_wait=2.0)
                live.remove(handle)
            if live:
                time.sleep(0.5)
