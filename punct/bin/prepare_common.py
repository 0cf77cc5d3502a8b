"""What the corpus preparation commands (stage 1: prepare_iwslt, prepare_szeged,
prepare_mini) share: the positive-integer option type and running a preparation with its
one-line report. Not a tool itself (no ``main``)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

from punct.errors import PunctInputError, report_error


def positive(text: str) -> int:
    """argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def run_preparation(prog: str, prepare: Callable[[], list[str]], data_dir: Path) -> int:
    """Run ``prepare`` (which returns one summary item per data dir written) and print
    ``prog: item; item -> data_dir (seconds)``; bad or missing input is reported with
    its exit code (1, or 2 for missing data)."""
    start = time.time()
    try:
        summary = prepare()
    except PunctInputError as err:
        return report_error(prog, err)
    print(f"{prog}: {'; '.join(summary)} -> {data_dir} ({time.time() - start:.1f} s)")
    return 0
