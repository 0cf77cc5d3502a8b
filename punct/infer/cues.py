"""Subtitle cues chosen over a whole document by dynamic programming.

A document's timed words are cut into cues of one or two lines. Every cut is chosen
together (``plan_cues``), not greedily, by the least total cost under hard limits:

Limits of a cue of two or more words: at most ``max_chars`` characters, at most
``max_seconds`` from its first word's start to its last word's end, and at most two lines
of ``line_chars`` characters. A single word is always a cue of its own if nothing else
fits (a word longer than a line stands alone).

Cost, compared first by the number of *short* cues (shorter than ``min_seconds``), so a
short cue appears only where nothing else fits (a document shorter than ``min_seconds``,
a word between two limits), then by the sum of:

- ``break_cost`` of every gap where a cue ends: 0 after a sentence end (``.?!…``);
  otherwise ``10 - 6 * min(pause, 1 s) - 3 * clause`` (``clause``: a comma, semicolon,
  colon or dash at the word), so a cue prefers to end at a sentence end, then at a long
  pause (a 0.7 s pause: 5.8), then at a comma (7; a comma before a pause: less), and
  least in the middle of a phrase (10);
- ``SENTENCE_INSIDE`` (3) for every sentence end inside a cue: a new sentence starts a
  new cue where the limits allow;
- ``LINE_WEIGHT`` (0.5) times the cost of the cue's line break (below).

A cue that fits on one line is one line. Otherwise the line break is the gap with the
least ``break_cost + 4 * |first line - second line| / line_chars``: a good place, with
lines of similar length. The end of the document costs nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from punct.errors import PunctInputError

SENTENCE_INSIDE = 3.0
LINE_WEIGHT = 0.5
LINE_BALANCE = 4.0


@dataclass(frozen=True)
class CueWord:
    """One word of a cue: its text (marks included) and what the costs look at."""

    text: str
    start: float
    end: float
    sentence_end: bool = False
    clause: bool = False  # a comma, semicolon, colon or dash at the word


@dataclass(frozen=True)
class CueLimits:
    """The hard limits and the minimum duration of cues (module docstring)."""

    max_chars: int = 84
    max_seconds: float = 7.0
    min_seconds: float = 1.0
    line_chars: int = 42

    def __post_init__(self) -> None:
        if self.max_chars < 1 or self.max_seconds <= 0 or self.line_chars < 1:
            raise PunctInputError("cue limits must be positive")
        if not 0 <= self.min_seconds <= self.max_seconds:
            raise PunctInputError(f"the minimum cue duration ({self.min_seconds} s) must be "
                                  f"between 0 and the maximum ({self.max_seconds} s)")


@dataclass(frozen=True)
class Cue:
    """A planned cue: its words ``[first, last)`` and its lines."""

    first: int
    last: int
    lines: tuple[str, ...]


def break_cost(word: CueWord, pause: float) -> float:
    """The cost of ending a cue (or a line) after ``word``, followed by ``pause`` s."""
    if word.sentence_end:
        return 0.0
    return 10.0 - 6.0 * min(max(pause, 0.0), 1.0) - 3.0 * word.clause


class CueCosts:
    """Prefix sums and gap costs of one document's words."""

    def __init__(self, words: Sequence[CueWord], limits: CueLimits):
        self.words, self.limits = words, limits
        self.chars = [0]
        self.ends = [0]  # sentence ends among the first k words
        for w in words:
            self.chars.append(self.chars[-1] + len(w.text))
            self.ends.append(self.ends[-1] + w.sentence_end)
        self.gap = [break_cost(w, nxt.start - w.end) for w, nxt in itertools.pairwise(words)]

    def width(self, i: int, j: int) -> int:
        """Characters of words ``[i, j)`` joined by spaces."""
        return self.chars[j] - self.chars[i] + (j - i - 1)

    def lines(self, i: int, j: int) -> tuple[float, int] | None:
        """(cost, first word of the second line or ``j``) of the best line break of
        ``[i, j)``; None when two lines cannot hold it."""
        line = self.limits.line_chars
        if self.width(i, j) <= line or j - i == 1:
            return 0.0, j
        best: tuple[float, int] | None = None
        for k in range(i + 1, j):
            a, b = self.width(i, k), self.width(k, j)
            if a > line:
                break
            if b > line:
                continue
            cost = self.gap[k - 1] + LINE_BALANCE * abs(a - b) / line
            if best is None or cost < best[0]:
                best = (cost, k)
        return best

    def line_texts(self, i: int, j: int, k: int) -> tuple[str, ...]:
        texts = [w.text for w in self.words[i:j]]
        cut = k - i
        return (" ".join(texts[:cut]),) + ((" ".join(texts[cut:]),) if cut < len(texts) else ())

    def cue(self, i: int, j: int) -> tuple[int, float, int] | None:
        """(1 if short else 0, cost, line break) of a cue of words ``[i, j)``, the break
        after it included; None when it breaks a limit."""
        lim, words = self.limits, self.words
        width, seconds = self.width(i, j), words[j - 1].end - words[i].start
        if j - i > 1 and (width > lim.max_chars or seconds > lim.max_seconds):
            return None
        split = self.lines(i, j)
        if split is None:
            return None
        inside = self.ends[j - 1] - self.ends[i]  # sentence ends before the last word
        end_cost = self.gap[j - 1] if j < len(words) else 0.0
        cost = end_cost + SENTENCE_INSIDE * inside + LINE_WEIGHT * split[0]
        return int(seconds < lim.min_seconds), cost, split[1]


def plan_cues(words: Sequence[CueWord], limits: CueLimits | None = None) -> list[Cue]:
    """The cues of a document of timed words, in order (module docstring)."""
    lim = limits or CueLimits()
    doc = CueCosts(words, lim)
    n = len(words)
    best: list[tuple[int, float]] = [(0, 0.0)] + [(n + 1, 0.0)] * n  # (short, cost) of [0, j)
    back: list[tuple[int, int]] = [(0, 0)] * (n + 1)  # (cue start, line break) of the last cue
    reach = min(lim.max_chars, 2 * lim.line_chars + 1)  # no wider cue fits
    for j in range(1, n + 1):
        for i in range(j - 1, -1, -1):
            if j - i > 1 and (doc.width(i, j) > reach
                              or words[j - 1].end - words[i].start > lim.max_seconds):
                break
            cue = doc.cue(i, j)
            if cue is None:
                continue
            total = (best[i][0] + cue[0], best[i][1] + cue[1])
            if total < best[j]:
                best[j], back[j] = total, (i, cue[2])
    cues: list[Cue] = []
    j = n
    while j > 0:
        i, k = back[j]
        cues.append(Cue(i, j, doc.line_texts(i, j, k)))
        j = i
    return cues[::-1]
