"""Errors raised for bad input: they always name the file and, where known, the line."""

from __future__ import annotations

import sys
from pathlib import Path


class PunctInputError(ValueError):
    """Bad input data. ``str(err)`` reads ``path:line: message``."""

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        where = ""
        if self.path is not None:
            where = self.path + (f":{line}" if line is not None else "") + ": "
        elif line is not None:
            where = f"line {line}: "
        super().__init__(where + message)


class MissingDataError(PunctInputError):
    """Required data is absent (exit code 2 in the command-line tools)."""


def report_error(prog: str, err: Exception) -> int:
    """Print ``prog: message`` to stderr and return the exit code (2 missing data, else 1)."""
    print(f"{prog}: {err}", file=sys.stderr)
    return 2 if isinstance(err, MissingDataError) else 1
