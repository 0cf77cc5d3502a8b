"""Subtitles for ``restore``: SRT and WebVTT in, SRT and WebVTT out, sentences.

Input (``read_srt``, ``read_vtt``): one document per file (id: the file name without
its extension, ``-`` for stdin). Markup is dropped (``<i>``, ``<v Speaker>``,
``{\\an8}``, VTT entities are unescaped); the words of a cue share the cue's span in
proportion to their lengths (``punct.infer.inputs.split_span``), so the pauses the model
sees are the gaps between cues, computed by the one pause formula of training.

Output (``SubtitleWriter``): cues from timed words, chosen over each whole document by
dynamic programming (``punct.infer.cues``: cues prefer to end at restored sentence ends,
then at long pauses, then after commas, within ``max_chars`` characters, ``max_seconds``
seconds and two lines of ``line_chars``, and last at least ``min_seconds`` wherever
anything else fits). A document is held until its end. Cue times are the first word's
start and the last word's end. Several documents go into one stream with running cue numbers
(WebVTT adds a ``NOTE`` with the document id); restore one recording per file for
players.
"""

from __future__ import annotations

import html
import itertools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO, TextIO

from punct.errors import PunctInputError
from punct.infer.cues import CueLimits, CueWord, plan_cues
from punct.infer.inputs import iter_lines, split_span, text_words, with_pauses
from punct.infer.stream import Document
from punct.labels import written
from punct.wordtable import WordRow

SENTENCE_FINAL = frozenset({"PERIOD", "QUESTION", "EXCLAMATION", "ELLIPSIS"})
_TIME = re.compile(r"^(?:(\d+):)?(\d{1,2}):(\d{2})[.,](\d{1,3})$")
_TAG = re.compile(r"<[^>]*>|\{\\[^}]*\}")


# ----------------------------------------------------------------------------- reading


def parse_time(text: str, name: str, line: int) -> float:
    """``hh:mm:ss,mmm`` (SRT) or ``[hh:]mm:ss.mmm`` (WebVTT) -> seconds."""
    m = _TIME.match(text.strip())
    if m is None:
        raise PunctInputError(f"bad timestamp {text.strip()!r}", name, line)
    hours, minutes, seconds, frac = m.groups()
    if int(minutes) > 59 or int(seconds) > 59:
        raise PunctInputError(f"bad timestamp {text.strip()!r}", name, line)
    return (int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds)
            + int(frac.ljust(3, "0")) / 1000)


@dataclass
class Cue:
    """One cue: its span, its text (markup removed) and the line of its timing."""

    start: float
    end: float
    text: str
    line: int


def _timing(text: str, name: str, line: int) -> tuple[float, float]:
    left, _, right = text.partition("-->")
    start = parse_time(left, name, line)
    end = parse_time(right.split()[0] if right.split() else "", name, line)
    if end < start:
        raise PunctInputError(f"cue ends ({end:.3f} s) before it starts ({start:.3f} s)",
                              name, line)
    return start, end


def _clean(text: str) -> str:
    return html.unescape(_TAG.sub(" ", text))


def iter_cues(stream: BinaryIO, name: str, vtt: bool) -> Iterator[Cue]:
    """The cues of an SRT or WebVTT stream, read lazily (blocks between blank lines)."""
    block: list[tuple[int, str]] = []
    first = True
    for lineno, text in itertools.chain(iter_lines(stream, name), [(-1, "")]):
        if text.strip():
            block.append((lineno, text))
            continue
        if not block:
            continue
        if first and vtt:
            if not block[0][1].startswith("WEBVTT"):
                raise PunctInputError("a WebVTT file starts with 'WEBVTT'", name, block[0][0])
            first = False
            block = []
            continue
        first = False
        timing = next((k for k, (_, t) in enumerate(block) if "-->" in t), None)
        head = block[0][1].strip()
        if timing is None:
            if vtt and head.split(" ")[0] in ("NOTE", "STYLE", "REGION"):
                block = []
                continue
            raise PunctInputError("a cue without a timing line ('start --> end')", name,
                                  block[0][0])
        lineno_t, text_t = block[timing]
        start, end = _timing(text_t, name, lineno_t)
        body = " ".join(_clean(t) for _, t in block[timing + 1:])
        yield Cue(start, end, body, lineno_t)
        block = []


def _read(stream: BinaryIO, name: str, vtt: bool) -> Iterator[Document]:
    doc_id = "-" if name == "-" else re.sub(r"\.(srt|vtt)$", "", name.rsplit("/", 1)[-1],
                                              flags=re.IGNORECASE)

    def timed() -> Iterator:
        prev_start = None
        for cue in iter_cues(stream, name, vtt):
            if prev_start is not None and cue.start < prev_start:
                raise PunctInputError(f"cue starts at {cue.start:.3f} s, before the previous "
                                      f"cue ({prev_start:.3f} s): not in time order", name,
                                      cue.line)
            prev_start = cue.start
            words = text_words(cue.text, name, cue.line)
            if words:
                yield from split_span(words, cue.start, cue.end, cue.line)

    yield Document(doc_id, with_pauses(timed(), None, f"subtitles {doc_id}", name))


def read_srt(stream: BinaryIO, name: str) -> Iterator[Document]:
    """One document: the words of an SRT file, timed by their cues."""
    return _read(stream, name, vtt=False)


def read_vtt(stream: BinaryIO, name: str) -> Iterator[Document]:
    """One document: the words of a WebVTT file, timed by their cues."""
    return _read(stream, name, vtt=True)


# ----------------------------------------------------------------------------- writing


def word_text(row: WordRow) -> str:
    """A restored word with its marks, as in the restored text."""
    return written(row.form, row.punct)


def ends_sentence(row: WordRow) -> bool:
    return bool(row.punct) and any(p in SENTENCE_FINAL for p in row.punct)


def sentences(rows: Sequence[WordRow]) -> list[str]:
    """The restored text cut after every sentence-final mark."""
    out: list[str] = []
    cur: list[str] = []
    for row in rows:
        cur.append(word_text(row))
        if ends_sentence(row):
            out.append(" ".join(cur))
            cur = []
    if cur:
        out.append(" ".join(cur))
    return out


def format_time(seconds: float, vtt: bool) -> str:
    ms = round(seconds * 1000)
    h, rest = divmod(ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s, ms = divmod(rest, 1000)
    return f"{h:02d}:{m:02d}:{s:02d}{'.' if vtt else ','}{ms:03d}"


CLAUSE_MARKS = frozenset({"COMMA", "SEMICOLON", "COLON", "DASH"})


def cue_word(row: WordRow) -> CueWord:
    """A timed restored word as the cue planner sees it."""
    assert row.start is not None and row.end is not None
    return CueWord(word_text(row), row.start, row.end, ends_sentence(row),
                   any(p in CLAUSE_MARKS for p in row.punct))


class SubtitleWriter:
    """Writes restored rows as SRT or WebVTT cues (see the module docstring)."""

    def __init__(self, out: TextIO, vtt: bool, max_chars: int = 84, max_seconds: float = 7.0,
                 line_chars: int = 42, min_seconds: float = 1.0):
        self.limits = CueLimits(max_chars, max_seconds, min_seconds, line_chars)
        self.out, self.vtt = out, vtt
        self.cues = 0
        self.pending: list[WordRow] = []
        if vtt:
            out.write("WEBVTT\n\n")

    def start_document(self, doc_id: str) -> None:
        if self.vtt:
            self.out.write(f"NOTE {doc_id}\n\n")

    def add(self, rows: Sequence[WordRow]) -> None:
        for row in rows:
            if row.start is None or row.end is None:
                raise PunctInputError(
                    f"subtitle output needs timed words (CTM, TextGrid, JSONL with times, SRT "
                    f"or WebVTT input); word {row.idx} of {row.utt_id!r} has no times")
            self.pending.append(row)

    def end_document(self) -> None:
        """Plan the held document's cues and write them."""
        words = [cue_word(r) for r in self.pending]
        for cue in plan_cues(words, self.limits):
            self.cues += 1
            start, end = words[cue.first].start, words[cue.last - 1].end
            self.out.write(f"{self.cues}\n{format_time(start, self.vtt)} --> "
                           f"{format_time(end, self.vtt)}\n" + "\n".join(cue.lines) + "\n\n")
        self.pending = []
