"""Praat TextGrid reader (text files, "short" and "long" format).

Both text formats are the same sequence of numbers, strings and flags; the long format
adds ``name =`` labels and ``[n]`` indices, which the tokenizer skips. Interval tiers
hold words; intervals with empty (blank) text are silences. Files may be UTF-8 or
UTF-16 (with BOM). Binary TextGrids are rejected with a clear error. The ``textgrid``
aligner is :mod:`punct.align.textgrid`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from punct.data.timed import TimedWord
from punct.errors import MissingDataError, PunctInputError

_TOKEN = re.compile(
    r'(?P<str>"(?:[^"]|"")*")'
    r"|(?P<num>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?![\w.])"
    r"|(?P<flag><exists>|<absent>)"
    r"|(?P<skip>\s+|\[\s*\d*\s*\]|[A-Za-z_][A-Za-z_0-9]*\??|[=:]|![^\n]*)"
)


@dataclass(frozen=True)
class Interval:
    """One interval (or point, with start == end) of a tier; ``line``: source line."""

    start: float
    end: float
    text: str
    line: int | None = field(default=None, compare=False)


@dataclass
class Tier:
    """An IntervalTier or TextTier (points are stored as zero-length intervals)."""

    name: str
    kind: str
    xmin: float
    xmax: float
    intervals: list[Interval]


@dataclass
class TextGrid:
    """A parsed TextGrid: time domain and tiers in file order."""

    xmin: float
    xmax: float
    tiers: list[Tier]
    path: str | None = None

    def tier(self, name: str) -> Tier:
        """The tier called ``name`` (exact, else case-insensitive match)."""
        for t in self.tiers:
            if t.name == name:
                return t
        hits = [t for t in self.tiers if t.name.lower() == name.lower()]
        if len(hits) == 1:
            return hits[0]
        names = ", ".join(repr(t.name) for t in self.tiers) or "none"
        raise PunctInputError(f"no tier named {name!r} (tiers: {names})", self.path)


def _decode(path: Path) -> str:
    raw = path.read_bytes()
    if raw.startswith(b"ooBinaryFile"):
        raise PunctInputError("binary TextGrid files are not supported; save as text", path)
    try:
        if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
            return raw.decode("utf-16")
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise PunctInputError(f"not UTF-8/UTF-16 text: {err}", path) from None


def _tokenize(text: str, path: Path) -> list[tuple[str, str | float, int]]:
    tokens: list[tuple[str, str | float, int]] = []
    pos, line = 0, 1
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            snippet = text[pos: pos + 20].split("\n")[0]
            raise PunctInputError(f"unexpected text {snippet!r}", path, line)
        kind = m.lastgroup
        value = m.group()
        if kind == "str":
            tokens.append(("str", value[1:-1].replace('""', '"'), line))
        elif kind == "num":
            tokens.append(("num", float(value), line))
        elif kind == "flag":
            tokens.append(("flag", value, line))
        line += value.count("\n")
        pos = m.end()
    return tokens


class _Reader:
    def __init__(self, tokens: list[tuple[str, str | float, int]], path: Path):
        self.tokens = tokens
        self.pos = 0
        self.path = path

    def line(self) -> int | None:
        if self.pos < len(self.tokens):
            return self.tokens[self.pos][2]
        return self.tokens[-1][2] if self.tokens else None

    def take(self, kind: str, what: str) -> str | float:
        if self.pos >= len(self.tokens):
            raise PunctInputError(f"file ends where {what} was expected", self.path, self.line())
        k, value, _ = self.tokens[self.pos]
        if k != kind:
            raise PunctInputError(
                f"expected {what}, found {value!r}", self.path, self.tokens[self.pos][2]
            )
        self.pos += 1
        return value

    def num(self, what: str) -> float:
        return float(self.take("num", what))

    def count(self, what: str) -> int:
        line = self.line()
        value = self.num(what)
        if value < 0 or value != int(value):
            raise PunctInputError(f"{what} must be a non-negative integer, found {value}",
                                  self.path, line)
        return int(value)

    def string(self, what: str) -> str:
        return str(self.take("str", what))


def read_textgrid(path: str | Path) -> TextGrid:
    """Parse a text TextGrid (short or long format); errors name the file and line."""
    path = Path(path)
    if not path.is_file():
        raise MissingDataError("TextGrid file not found", path)
    rd = _Reader(_tokenize(_decode(path), path), path)
    if rd.string('File type "ooTextFile"') != "ooTextFile":
        raise PunctInputError('not a Praat text file (File type must be "ooTextFile")', path, 1)
    line = rd.line()
    if rd.string('Object class "TextGrid"') != "TextGrid":
        raise PunctInputError('Object class must be "TextGrid"', path, line)
    xmin, xmax = rd.num("xmin"), rd.num("xmax")
    n_tiers = 0
    if rd.pos < len(rd.tokens) and rd.tokens[rd.pos][0] == "flag":
        if rd.take("flag", "<exists>") == "<exists>":
            n_tiers = rd.count("number of tiers")
    else:
        n_tiers = rd.count("number of tiers")
    tiers = [_read_tier(rd, path) for _ in range(n_tiers)]
    if rd.pos != len(rd.tokens):
        raise PunctInputError("unexpected data after the last tier", path, rd.line())
    return TextGrid(xmin, xmax, tiers, str(path))


def _read_tier(rd: _Reader, path: Path) -> Tier:
    line = rd.line()
    kind = rd.string("tier class")
    if kind not in ("IntervalTier", "TextTier"):
        raise PunctInputError(f"unknown tier class {kind!r}", path, line)
    name = rd.string("tier name")
    xmin, xmax = rd.num("tier xmin"), rd.num("tier xmax")
    n = rd.count("number of intervals")
    items: list[Interval] = []
    for _ in range(n):
        line = rd.line()
        if kind == "IntervalTier":
            start, end = rd.num("interval xmin"), rd.num("interval xmax")
        else:
            start = end = rd.num("point time")
        text = rd.string("label text")
        if end < start:
            raise PunctInputError(
                f"tier {name!r}: interval ends ({end}) before it starts ({start})", path, line
            )
        if items and start < items[-1].end - 1e-9:
            raise PunctInputError(
                f"tier {name!r}: item at {start} starts before the previous one ends "
                f"({items[-1].end}): not sorted", path, line,
            )
        items.append(Interval(start, end, text, line))
    return Tier(name, kind, xmin, xmax, items)


def _as_grid(source: str | Path | TextGrid) -> TextGrid:
    return source if isinstance(source, TextGrid) else read_textgrid(source)


def textgrid_words(source: str | Path | TextGrid, tier: str = "words") -> list[TimedWord]:
    """The non-silent intervals of an interval tier as TimedWords (text stripped)."""
    grid = _as_grid(source)
    t = grid.tier(tier)
    if t.kind != "IntervalTier":
        raise PunctInputError(f"tier {t.name!r} is a {t.kind}, not an IntervalTier", grid.path)
    return [TimedWord(i.text.strip(), i.start, i.end, i.line)
            for i in t.intervals if i.text.strip()]


def textgrid_silences(source: str | Path | TextGrid, tier: str = "words") -> list[Interval]:
    """The silent (blank-text) intervals of an interval tier."""
    grid = _as_grid(source)
    return [i for i in grid.tier(tier).intervals if not i.text.strip()]
