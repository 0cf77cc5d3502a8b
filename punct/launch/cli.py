"""The job launcher with the Kaldi run.pl interface (``utils/launch.sh`` runs this module).

Usage:
  utils/launch.sh [options] JOB=1:N log/x.JOB.log command args...
  utils/launch.sh [options] log/x.log command args...

The name JOB (any NAME=a:b) is replaced by the job index in the log path and in
the command; the command words are joined with spaces and run by ``bash -c`` (so
quote pipes and redirections: ``'gunzip -c a.gz | wc -l'``), with $JOB set.
Each log starts with ``# <command>`` / ``# Started at <date>`` and ends with
``# Accounting: time=<s> threads=<n>`` / ``# Ended (code <c>) at <date>, elapsed time <s> seconds``.

Options (before the job range / log):
  --num-threads N     threads per job: exports OMP_NUM_THREADS, MKL_NUM_THREADS, ... = N
  --mem M             memory per job (recorded; enforced by the slurm backend only)
  --gpu G             GPUs per job; 0 hides the GPUs (CUDA_VISIBLE_DEVICES="")
  --time T            time limit (recorded; enforced by the slurm backend only)
  --partition P       Slurm partition (ignored by the local backend)
  --ntasks N          processes per job, started by srun inside the Slurm job (e.g. DDP);
                      the local backend accepts only 1
  --max-jobs-run K    run at most K jobs at once (default: all)
  --rerun-failed      run only the jobs whose log does not end with "(code 0)"
  --backend B         local (default) or slurm (sbatch job arrays, see docs/CLUSTER.md)
  --config FILE       backend configuration (slurm: default conf/slurm.conf, which maps
                      the options above to sbatch flags)

Exit status 0 when every job succeeded; otherwise 1 with
``launch.sh: <k> / <n> failed, log is in <log> ...`` on stderr; 128+signal when
interrupted (the running jobs are killed, Slurm jobs cancelled); 2 when the
backend's configuration file is missing.
"""

from __future__ import annotations

import signal
import sys
from dataclasses import dataclass
from types import FrameType

from punct.errors import PunctInputError, report_error
from punct.launch.backend import JobHandle, Placement, get_backend
from punct.launch.jobs import (
    Job,
    JobsCancelled,
    LaunchError,
    Resources,
    expand_jobs,
    needs_rerun,
    parse_job_range,
)

PROG = "launch.sh"
_VALUE_OPTIONS = (
    "num-threads", "mem", "gpu", "time", "partition", "ntasks", "max-jobs-run", "backend",
    "config",
)
_INT_OPTIONS = {"num-threads": 1, "gpu": 0, "ntasks": 1, "max-jobs-run": 1}  # name -> minimum
_HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass
class LaunchOptions:
    """The parsed command line."""

    resources: Resources
    placement: Placement
    backend: str
    max_jobs_run: int | None
    rerun_failed: bool
    jobs: list[Job]


def _parse_bool(option: str, value: str) -> bool:
    if value not in ("true", "false"):
        raise LaunchError(f"option --{option} expects true or false, got '{value}'")
    return value == "true"


def parse_args(argv: list[str]) -> LaunchOptions:
    """Parse the launcher's command line; LaunchError on any bad usage."""
    values: dict[str, str] = {}
    rerun_failed = False
    i = 0
    while i < len(argv) and argv[i].startswith("--"):
        arg = argv[i]
        name, sep, value = arg[2:].partition("=")
        if name == "rerun-failed":
            rerun_failed = _parse_bool(name, value) if sep else True
            i += 1
            continue
        if name not in _VALUE_OPTIONS:
            raise LaunchError(f"unknown option {arg.partition('=')[0]} (see --help)")
        if not sep:
            if i + 1 >= len(argv):
                raise LaunchError(f"option {arg} needs a value")
            value = argv[i + 1]
            i += 1
        values[name] = value
        i += 1
    ints: dict[str, int] = {}
    for name, minimum in _INT_OPTIONS.items():
        if name in values:
            try:
                ints[name] = int(values[name])
            except ValueError:
                msg = f"option --{name} expects an integer, got '{values[name]}'"
                raise LaunchError(msg) from None
            if ints[name] < minimum:
                raise LaunchError(f"option --{name} must be >= {minimum}, got {ints[name]}")
    rest = argv[i:]
    if not rest:
        raise LaunchError("missing the log file (or JOB=a:b and the log file) and the command")
    job_range = parse_job_range(rest[0])
    if job_range is not None:
        rest = rest[1:]
    if not rest:
        raise LaunchError("missing the log file and the command")
    resources = Resources(
        num_threads=ints.get("num-threads"),
        mem=values.get("mem"),
        gpu=ints.get("gpu"),
        time=values.get("time"),
        config=values.get("config"),
    )
    return LaunchOptions(
        resources=resources,
        placement=Placement(partition=values.get("partition"), ntasks=ints.get("ntasks")),
        backend=values.get("backend", "local"),
        max_jobs_run=ints.get("max-jobs-run"),
        rerun_failed=rerun_failed,
        jobs=expand_jobs(job_range, rest[0], rest[1:]),
    )


def failure_message(failed: list[JobHandle], total: int) -> str:
    """``launch.sh: k / n failed, log is in <log1> <log2> ...``."""
    logs = " ".join(str(h.job.log) for h in failed)
    return f"{PROG}: {len(failed)} / {total} failed, log is in {logs}"


def main(argv: list[str] | None = None) -> int:
    """Run the jobs; 0 when all succeed, 1 on failure or bad usage, 128+signal if killed."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("--help", "-h"):
        print(__doc__, file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 1
    try:
        opts = parse_args(argv)
        backend = get_backend(opts.backend, opts.resources, opts.placement)
    except LaunchError as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return 1
    except PunctInputError as err:
        return report_error(PROG, err)
    jobs = [j for j in opts.jobs if needs_rerun(j)] if opts.rerun_failed else opts.jobs
    received: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        received.append(signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in _HANDLED_SIGNALS}
    try:
        handles = backend.run(jobs, opts.max_jobs_run, stop=lambda: bool(received))
    except JobsCancelled:
        name = signal.Signals(received[0]).name
        print(f"{PROG}: received {name}, killed the running jobs", file=sys.stderr)
        return 128 + received[0]
    except LaunchError as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    failed = [h for h in handles if h.returncode != 0]
    if failed:
        print(failure_message(failed, len(opts.jobs)), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
