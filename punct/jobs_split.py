"""Jobs split once: the ``--job J --num-jobs N`` / ``--merge`` options, the per-job id
lists (``<root>/split<N>/<J>/ids``, written by :func:`write_splits` or
``python -m punct.bin.split_data``) that the tools read, and the shared merge helpers."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from punct.atomic import atomic_write_text
from punct.errors import MissingDataError, PunctInputError
from punct.kaldi import c_sorted

T = TypeVar("T")


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


# ----------------------------------------------------------------------------- splits


def assign(ids: Sequence[str], num_jobs: int) -> list[list[str]]:
    """The one assignment rule: the i-th id (0-based) goes to job ``i % num_jobs + 1``.

    Returns one list per job (index 0 is job 1), each in the order of ``ids``.
    """
    if num_jobs < 1:
        raise ValueError(f"num_jobs must be >= 1, got {num_jobs}")
    parts: list[list[str]] = [[] for _ in range(num_jobs)]
    for i, key in enumerate(ids):
        parts[i % num_jobs].append(key)
    return parts


def split_dir(root: str | Path, num_jobs: int) -> Path:
    """Where the splits of ``root`` into ``num_jobs`` jobs live: ``<root>/split<N>``."""
    return Path(root) / f"split{num_jobs}"


def split_file(root: str | Path, job: int, num_jobs: int) -> Path:
    """The id list of job ``job`` (1-based): ``<root>/split<N>/<J>/ids``."""
    return split_dir(root, num_jobs) / str(job) / "ids"


def write_splits(root: str | Path, ids: Sequence[str], num_jobs: int) -> Path:
    """Write the id list of every job (one id a line, atomically); returns the split dir."""
    for job, part in enumerate(assign(ids, num_jobs), start=1):
        atomic_write_text(split_file(root, job, num_jobs),
                          "".join(f"{key}\n" for key in part))
    return split_dir(root, num_jobs)


def read_split(root: str | Path, job: int, num_jobs: int) -> list[str]:
    """The ids of job ``job`` as written by :func:`write_splits` (MissingDataError if not)."""
    path = split_file(root, job, num_jobs)
    if not path.is_file():
        raise MissingDataError(f"no split for job {job} of {num_jobs} "
                               "(python -m punct.bin.split_data writes it)", path)
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line]


def job_ids(root: str | Path, ids: Sequence[str], job: int, num_jobs: int) -> list[str]:
    """The ids of job ``job``: read from its split, written first when the splits are
    missing or no longer list exactly ``ids`` (writes are atomic and deterministic, so
    jobs that start together may all write them). One job takes every id, unwritten."""
    if num_jobs == 1:
        return list(ids)
    try:
        listed = [read_split(root, j, num_jobs) for j in range(1, num_jobs + 1)]
    except MissingDataError:
        listed = None
    if listed is None or sorted(k for part in listed for k in part) != sorted(ids):
        write_splits(root, ids, num_jobs)
    return read_split(root, job, num_jobs)


def job_items(root: str | Path, items: Sequence[T], key: Callable[[T], str], job: int,
              num_jobs: int) -> list[T]:
    """The ``items`` of job ``job`` (``key`` gives an item's id), as its split lists them."""
    by_key = {key(item): item for item in items}
    return [by_key[k] for k in job_ids(root, list(by_key), job, num_jobs)]


# ----------------------------------------------------------------------------- merging


def finished_parts(part: Callable[[int], Path], num_jobs: int) -> list[Path]:
    """The output ``part(job)`` of every job; MissingDataError naming the first unfinished."""
    paths = [Path(part(job)) for job in range(1, num_jobs + 1)]
    for job, path in enumerate(paths, start=1):
        if not path.is_file():
            raise MissingDataError(f"job {job} of {num_jobs} has not finished "
                                   f"(run it with --job {job})", path)
    return paths


def merge_kv_parts(parts: Sequence[Path], out: str | Path) -> int:
    """Merge the ``<key> <value>`` lines of job outputs (e.g. scp files) into ``out``,
    sorted as LC_ALL=C, atomically; a key in two parts is an error. Returns the count."""
    lines: dict[str, str] = {}
    where: dict[str, Path] = {}
    for path in parts:
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            key, sep, value = line.partition(" ")
            if not sep or not value.strip():
                raise PunctInputError("expected '<key> <value>'", path, lineno)
            if key in lines:
                raise PunctInputError(f"{key!r} is also in {where[key]}", path, lineno)
            lines[key], where[key] = value, path
    atomic_write_text(out, "".join(f"{k} {lines[k]}\n" for k in c_sorted(lines)))
    return len(lines)
