"""The job log format (Kaldi run.pl): header, footer and the exit code read back.

Kept free of heavy imports: the per-job wrapper imports it at every job start.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

_ENDED_RE = re.compile(r"^# Ended \(code (-?\d+)\) at ")


def format_date(when: float | None = None) -> str:
    """A date like ``date(1)`` prints it: ``Thu Nov 21 09:05:01 UTC 2024``."""
    return time.strftime("%a %b %d %H:%M:%S %Z %Y", time.localtime(when))


def log_header(command: str, resources: str, start: float | None = None) -> str:
    """The first lines of a job log; ``resources`` is :meth:`Resources.describe` text."""
    return f"# {command}\n# Started at {format_date(start)}\n# Resources: {resources}\n#\n"


def log_footer(code: int, elapsed: float, num_threads: int, end: float | None = None) -> str:
    """The last lines of a job log (Kaldi's run.pl format; times in whole seconds)."""
    secs = round(elapsed)
    return (
        f"# Accounting: time={secs} threads={num_threads}\n"
        f"# Ended (code {code}) at {format_date(end)}, elapsed time {secs} seconds\n"
    )


def log_exit_code(log: Path) -> int | None:
    """The exit code recorded in the last line of ``log``; None if absent or unfinished."""
    try:
        with open(log, "rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - 4096))
            tail = handle.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None
    lines = [line for line in tail.splitlines() if line.strip()]
    if not lines:
        return None
    match = _ENDED_RE.match(lines[-1])
    return int(match.group(1)) if match else None
