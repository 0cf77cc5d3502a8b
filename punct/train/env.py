"""Run environment: thread count and the provenance record written as ``env.json``."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

from punct.engine.heap import heap_state, keep_freed_memory
from punct.engine.precision import cpu_model


def set_num_threads(num_threads: int | None = None) -> int:
    """Set torch's intra-op threads from ``num_threads`` or ``$OMP_NUM_THREADS``.

    Returns the number of threads in effect (torch's default when neither is given).
    """
    if num_threads is None:
        env = os.environ.get("OMP_NUM_THREADS", "").strip()
        if env.isdigit() and int(env) > 0:
            num_threads = int(env)
    if num_threads is not None:
        if num_threads < 1:
            raise ValueError(f"--num-threads must be >= 1, got {num_threads}")
        torch.set_num_threads(num_threads)
    return torch.get_num_threads()


def setup_compute(num_threads: int | None = None) -> int:
    """Set this process up for tensor work: glibc keeps the memory batches free
    (``punct.engine.heap``) and torch runs ``set_num_threads(num_threads)``; returns the
    threads in effect."""
    keep_freed_memory()
    return set_num_threads(num_threads)


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def git_sha(directory: str | Path | None = None) -> str | None:
    """The commit hash of the repository holding this package (None outside git)."""
    where = Path(directory) if directory else Path(__file__).resolve().parents[2]
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True,
                             text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    sha = out.stdout.strip()
    return sha if out.returncode == 0 and sha else None


def collect_env(seed: int | None = None, threads: int | None = None) -> dict[str, Any]:
    """Provenance of a run: code version, library versions, machine, seed, threads, date."""
    return {
        "git_sha": git_sha(),
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "transformers": _version("transformers"),
        "numpy": _version("numpy"),
        "seed": seed,
        "threads": threads if threads is not None else torch.get_num_threads(),
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "heap": heap_state(),
        "device": "cuda" if torch.cuda.is_available() else "cpu",
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "argv": list(sys.argv),
        # the default encoder from another directory (e.g. a float16-packed copy)
        "encoder_dir": os.environ.get("PUNCT_ENCODER_DIR") or None,
    }
