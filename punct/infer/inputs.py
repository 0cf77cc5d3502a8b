"""Input readers of ``restore``: plain text, CTM, TextGrid and JSONL -> ``Document`` stream.

Every reader is lazy: lines are read one at a time, and a CTM recording's words are
handed out while later lines are still unread (one word of lookahead, for its pause).
Words are lower-cased and stripped of punctuation marks (``punct.labels.parse_text``),
so already punctuated input is accepted and re-punctuated. Pauses come from the
timings: ``pause_after = start(next) - end(this)`` (never negative); the last word of a
TextGrid gets the silence up to the end of the grid, the last word of a CTM recording
or JSONL record none (unknown).

- text: one document per line, ids ``<file>:<line>`` (``-:<line>`` for stdin).
- ctm: ``<reco> <chan> <start> <dur> <word> [<conf>]``; one document per recording,
  whose lines must be contiguous and in time order; silence tokens are skipped.
- textgrid: one document per file (id = file name without ``.TextGrid``), the words of
  an interval tier (``--tier``, default ``words``).
- jsonl: one document per line, ``{"id": ..., "text": "..."}`` or ``{"id": ...,
  "words": ["w", ...]}`` or ``"words": [{"word": "w", "start": s, "end": e}, ...]``;
  optional ``"lang"``; a missing id becomes ``<file>:<line>``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from punct.align.ctm import SILENCE_TOKENS, parse_ctm_fields
from punct.align.textgrid import read_textgrid, textgrid_words
from punct.errors import MissingDataError, PunctInputError
from punct.infer.stream import Document, InputWord
from punct.labels import parse_text

FORMATS = ("text", "ctm", "textgrid", "jsonl")


def iter_lines(stream: BinaryIO, name: str) -> Iterator[tuple[int, str]]:
    """(line number, text without the newline) of a binary stream, decoded as UTF-8."""
    for lineno, raw in enumerate(stream, 1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise PunctInputError(f"invalid UTF-8 at byte {err.start} of the line: {err.reason}",
                                  name, lineno) from None
        if lineno == 1:
            text = text.removeprefix("\ufeff")
        yield lineno, text.rstrip("\r\n")


def text_words(text: str, name: str, line: int) -> list[str]:
    """Lower-cased words of a (possibly punctuated) text; marks alone give none."""
    if not any(ch.isalnum() for ch in text):
        return []
    return [tok.word for tok in parse_text(text, name, line)]


def _pauses(words: list[tuple[str, float, float]], tail: float | None) -> list[InputWord]:
    out = []
    for i, (w, start, end) in enumerate(words):
        nxt = words[i + 1][1] - end if i + 1 < len(words) else tail
        out.append(InputWord(w, start, end, None if nxt is None else max(0.0, nxt)))
    return out


# ----------------------------------------------------------------------------- text


def read_text(stream: BinaryIO, name: str) -> Iterator[Document]:
    """One document per line (an empty line is an empty document)."""
    for lineno, text in iter_lines(stream, name):
        words = [InputWord(w) for w in text_words(text, name, lineno)]
        yield Document(f"{name}:{lineno}", words)


# ----------------------------------------------------------------------------- ctm


class _CtmReader:
    """Splits a CTM line stream into recordings without reading ahead more than a line."""

    def __init__(self, stream: BinaryIO, name: str):
        self.lines = iter_lines(stream, name)
        self.name = name
        self.pending: tuple[str, str, float, float, int] | None = None  # reco, word, s, e, line
        self.done: set[str] = set()
        self.exhausted = False

    def _next(self) -> tuple[str, str, float, float, int] | None:
        for lineno, raw in self.lines:
            text = raw.strip()
            if not text or text.startswith(";;"):
                continue
            reco, word, start, dur = parse_ctm_fields(text, self.name, lineno)
            if word.lower() in SILENCE_TOKENS:
                continue
            return reco, word, start, start + dur, lineno
        self.exhausted = True
        return None

    def documents(self) -> Iterator[Document]:
        self.pending = self._next()
        while self.pending is not None:
            reco = self.pending[0]
            if reco in self.done:
                raise PunctInputError(f"recording {reco!r} appears again after other recordings "
                                      "(sort the CTM by recording)", self.name, self.pending[4])
            self.done.add(reco)
            yield Document(reco, self._words(reco))

    def _words(self, reco: str) -> Iterator[InputWord]:
        prev: tuple[str, float, float] | None = None
        while self.pending is not None and self.pending[0] == reco:
            _, raw, start, end, lineno = self.pending
            words = text_words(raw, self.name, lineno)
            if prev is not None and start < prev[1] - 1e-6:
                raise PunctInputError(f"word {raw!r} starts at {start} before the previous "
                                      f"word ({prev[1]}): not in time order", self.name, lineno)
            if words:  # (a mark alone is skipped)
                if prev is not None:
                    yield InputWord(prev[0], prev[1], prev[2], max(0.0, start - prev[2]))
                prev = (" ".join(words), start, end)
            self.pending = self._next()
        if prev is not None:
            yield InputWord(prev[0], prev[1], prev[2], None)


def read_ctm(stream: BinaryIO, name: str) -> Iterator[Document]:
    """One document per recording (its words are read lazily)."""
    yield from _CtmReader(stream, name).documents()


# ----------------------------------------------------------------------------- textgrid


def textgrid_files(paths: Iterable[str | Path]) -> list[Path]:
    """The TextGrid files named, with directories expanded to their ``*.TextGrid``."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(p.glob("*.TextGrid")))
        elif p.is_file():
            out.append(p)
        else:
            raise MissingDataError("TextGrid file or directory not found", p)
    return out


def read_textgrid_doc(path: Path, tier: str = "words") -> Document:
    """One document: the words of ``tier``, pauses from the intervals."""
    grid = read_textgrid(path)
    timed: list[tuple[str, float, float]] = []
    for w in textgrid_words(grid, tier):
        for word in text_words(w.word, str(path), w.line or 0):
            timed.append((word, w.start, w.end))
    tail = grid.xmax - timed[-1][2] if timed else None
    return Document(path.name.removesuffix(".TextGrid"), _pauses(timed, tail))


# ----------------------------------------------------------------------------- jsonl


def _json_words(obj: dict[str, Any], name: str, line: int) -> list[InputWord]:
    if "text" in obj:
        if not isinstance(obj["text"], str):
            raise PunctInputError("'text' must be a string", name, line)
        return [InputWord(w) for w in text_words(obj["text"], name, line)]
    words = obj.get("words")
    if not isinstance(words, list):
        raise PunctInputError("a record needs 'text' (a string) or 'words' (a list)", name, line)
    timed: list[tuple[str, float, float]] = []
    plain: list[str] = []
    for k, item in enumerate(words):
        if isinstance(item, str):
            plain.extend(text_words(item, name, line))
            continue
        if not isinstance(item, dict) or not isinstance(item.get("word"), str):
            raise PunctInputError(f"words[{k}] must be a string or an object with 'word'",
                                  name, line)
        try:
            start, end = float(item["start"]), float(item["end"])
        except (KeyError, TypeError, ValueError):
            raise PunctInputError(f"words[{k}] needs numeric 'start' and 'end'", name,
                                  line) from None
        if not (math.isfinite(start) and math.isfinite(end)) or end < start:
            raise PunctInputError(f"words[{k}]: bad times start={start} end={end}", name, line)
        timed.extend((w, start, end) for w in text_words(item["word"], name, line))
    if plain and timed:
        raise PunctInputError("mix of plain and timed words in one record", name, line)
    return [InputWord(w) for w in plain] if plain else _pauses(timed, None)


def read_jsonl(stream: BinaryIO, name: str) -> Iterator[Document]:
    """One document per non-blank line."""
    for lineno, text in iter_lines(stream, name):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as err:
            raise PunctInputError(f"invalid JSON: {err.msg}", name, lineno) from None
        if not isinstance(obj, dict):
            raise PunctInputError("each line must be a JSON object", name, lineno)
        doc_id = str(obj.get("id", f"{name}:{lineno}"))
        lang = obj.get("lang")
        yield Document(doc_id, _json_words(obj, name, lineno),
                       str(lang) if lang is not None else None)
