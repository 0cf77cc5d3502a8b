"""A progress bar on stderr for ``punct-restore``: a small one, no dependency.

On a terminal it redraws one line in place (``\\r``) at most ``interval`` times a
second: ``restore: [#####.........]  35% 12,345 words, 2,100 words/s, 0:09 left`` when
the share of the input done is known (input files: bytes read of their total size),
``restore: 12,345 words, 3 documents, 2,100 words/s`` otherwise. Elsewhere (a log,
``--progress`` into a pipe) it writes a plain line every ``LOG_INTERVAL`` seconds. It
shows only once the run has lasted ``delay`` seconds, so short runs print nothing, and
``close`` ends the line.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import BinaryIO, TextIO

BAR_WIDTH = 24
LOG_INTERVAL = 5.0


class InputShare:
    """The share of the input files read: the bytes of finished files and the position
    in the open one, over their total size (unknown for stdin)."""

    def __init__(self, total: int | None = None):
        self.total = total
        self.done = 0
        self.current: BinaryIO | None = None

    def open(self, stream: BinaryIO) -> None:
        self.current = stream

    def close(self, size: int) -> None:
        self.done += size
        self.current = None

    def fraction(self) -> float | None:
        """The share read (None when the total is unknown or zero)."""
        if not self.total:
            return None
        pos = self.current.tell() if self.current is not None else 0
        return min((self.done + pos) / self.total, 1.0)


def _clock_text(seconds: float) -> str:
    minutes, secs = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class ProgressBar:
    """Draws progress on ``stream`` (see the module docstring)."""

    def __init__(self, stream: TextIO, *, tty: bool | None = None, delay: float = 1.0,
                 interval: float = 0.1, clock: Callable[[], float] = time.monotonic):
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.delay = delay
        self.interval = interval if self.tty else LOG_INTERVAL
        self.clock = clock
        self.started = clock()
        self.drawn_at: float | None = None
        self.shown: tuple[int, int, float | None] | None = None  # the state last drawn
        self.width = 0  # characters of the line on screen

    def update(self, words: int, documents: int, fraction: float | None = None,
               force: bool = False) -> None:
        """Redraw if due: ``words`` and ``documents`` done, ``fraction`` of the input."""
        now = self.clock()
        elapsed = now - self.started
        if not force and (elapsed < self.delay or (
                self.drawn_at is not None and now - self.drawn_at < self.interval)):
            return
        self.drawn_at = now
        self.shown = (words, documents, fraction)
        self._draw(self.line(words, documents, fraction, elapsed))

    def line(self, words: int, documents: int, fraction: float | None, elapsed: float) -> str:
        """The progress line (without the carriage return)."""
        rate = f"{words / elapsed:,.0f} words/s" if elapsed > 0 else "- words/s"
        if fraction is None:
            return f"restore: {words:,} words, {documents:,} documents, {rate}"
        filled = round(BAR_WIDTH * fraction)
        left = (f", {_clock_text(elapsed * (1 - fraction) / fraction)} left"
                if fraction > 0 else "")
        return (f"restore: [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {fraction:4.0%} "
                f"{words:,} words, {rate}{left}")

    def _draw(self, text: str) -> None:
        if self.tty:
            self.stream.write("\r" + text + " " * max(self.width - len(text), 0))
            self.width = len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self, words: int, documents: int, fraction: float | None = None) -> None:
        """The final state (if anything was drawn and it changed) and the end of the line."""
        if self.drawn_at is None:
            return
        if self.shown != (words, documents, fraction):
            self.update(words, documents, fraction, force=True)
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
