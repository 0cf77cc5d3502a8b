"""The ``--job J --num-jobs N`` / ``--merge`` options of the tools that split a data dir
into jobs (job J takes every N-th utterance) and then merge the job outputs."""

from __future__ import annotations

import argparse


def add_job_options(p: argparse.ArgumentParser,
                    merge_help: str = "merge the job outputs") -> None:
    """Add ``--job``, ``--num-jobs`` and ``--merge`` to ``p``."""
    p.add_argument("--job", type=int, default=None, help="1-based job index")
    p.add_argument("--num-jobs", type=int, default=1, help="number of jobs")
    p.add_argument("--merge", action="store_true", help=merge_help)


def check_job_options(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Exit through ``p.error`` unless 1 <= job <= num_jobs and job and merge are apart."""
    if args.num_jobs < 1:
        p.error("--num-jobs must be >= 1")
    if args.job is not None and not 1 <= args.job <= args.num_jobs:
        p.error(f"--job must be in 1..{args.num_jobs}")
    if args.job is not None and args.merge:
        p.error("--job and --merge are separate steps")
