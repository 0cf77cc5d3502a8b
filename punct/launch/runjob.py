"""Run one job command under ``bash -c`` and write its log (header, output, footer).

Every backend runs this wrapper on the host that executes the job::

    python -m punct.launch.runjob --log LOG [--threads N] [--resources TEXT]
        [--setenv NAME=VALUE ...] -- COMMAND

It exits with the command's exit status (128 + signal number when killed by a signal).
A SIGTERM/SIGINT/SIGHUP it receives is passed on to the command; the footer is
still written, so the log records the failure.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

from punct.launch.logformat import log_footer, log_header

FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1,
                     signal.SIGUSR2)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="runjob", description=__doc__.splitlines()[0])
    parser.add_argument("--log", required=True, help="log file (its directory is created)")
    parser.add_argument("--threads", type=int, default=1, help="threads, for the accounting")
    parser.add_argument("--resources", default="threads=1", help="resources line of the header")
    parser.add_argument("--setenv", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("command", help="the command, run by bash -c")
    return parser.parse_args(argv)


def run_logged(
    command: str, log: Path, env: dict[str, str], threads: int = 1, resources: str = "threads=1"
) -> int:
    """Run ``command`` with its output appended to ``log`` between header and footer lines."""
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.time()
    tick = time.monotonic()
    received: list[int] = []
    proc: subprocess.Popen[bytes] | None = None

    def on_signal(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        if proc is not None and proc.poll() is None:
            proc.send_signal(signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in FORWARDED_SIGNALS}
    try:
        with open(log, "w", encoding="utf-8") as out:
            out.write(log_header(command, resources, start))
            out.flush()
            if received:
                code = 128 + received[0]
            else:
                proc = subprocess.Popen(
                    ["bash", "-c", command], stdin=subprocess.DEVNULL, stdout=out,
                    stderr=subprocess.STDOUT, env=env,
                )
                code = proc.wait()
        if code < 0:
            code = 128 - code
        with open(log, "a", encoding="utf-8") as out:
            out.write(log_footer(code, time.monotonic() - tick, threads))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return code


def main(argv: list[str] | None = None) -> int:
    """Entry point: parse the wrapper's arguments and run the job."""
    args = _parse_args(argv)
    env = dict(os.environ)
    for item in args.setenv:
        name, sep, value = item.partition("=")
        if not sep or not name:
            print(f"runjob: bad --setenv {item!r}: expected NAME=VALUE", file=sys.stderr)
            return 1
        env[name] = value
    return run_logged(args.command, Path(args.log), env, args.threads, args.resources)


if __name__ == "__main__":
    raise SystemExit(main())
