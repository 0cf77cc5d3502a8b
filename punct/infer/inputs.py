"""Input readers of ``restore``: plain text, CTM, TextGrid and JSONL -> ``Document`` stream.

Every reader is lazy: lines are read one at a time, and a CTM recording's words are
handed out while later lines are still unread (one word of lookahead, for its pause).
Words are lower-cased and stripped of punctuation marks (``punct.engine.symbols``),
so already punctuated input is accepted and re-punctuated; symbols the label set does
not know (emoji, CJK, maths signs, URLs) pass through unchanged, inside a word or as one.
Pauses come from the timings by the one formula of training, :func:`punct.data.timed.pauses`:
``start(next) - end(this)`` to the millisecond, overlaps within 1 ms clipped to 0 and
larger ones an error naming the file and line, and the last word of every document (a
CTM recording, a TextGrid, a JSONL record) gets ``END_OF_DOCUMENT_PAUSE``, exactly as
the last word of an utterance in ``words.tsv``. A document restored from a CTM
therefore reaches the model with the same inputs as the same utterance decoded from its
data dir (stage 6).

Non-speech tokens (``<breath>``, ``[noise]``: ``--nonspeech``, ``punct.data.nonspeech``)
are kept at their position and flagged (``InputWord.nonspeech``); they do not split the
pause computation: the pause after a word runs to the next *speech* word, so a timed
non-speech token's duration counts into the pause around it.

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
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from punct.data.ctm import SILENCE_TOKENS, parse_ctm_fields
from punct.data.textgrid import read_textgrid, textgrid_words
from punct.data.timed import TimedWord, iter_pauses
from punct.engine.symbols import (
    active_map,
    count_overlap,
    split_words,
    token_splitter,
)
from punct.errors import MissingDataError, PunctInputError
from punct.infer.stream import Document, InputWord, plain_words, text_input_words

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
    """Lower-cased words of a (possibly punctuated) text; marks alone give none.

    Tolerant (``punct.engine.symbols``): symbols outside the label set never stop a run; a
    word holding one passes through with its exact form and is counted. ``name`` and
    ``line`` are kept for the readers' error messages.
    """
    del name, line
    return split_words(text)


def split_span(words: list[str], start: float, end: float, line: int | None
               ) -> list[TimedWord]:
    """The words of one timed token (a TextGrid interval or JSONL item holding several
    words) share its span in proportion to their lengths, contiguously (no pause
    between them, none overlapping)."""
    total = sum(len(w) for w in words) or 1
    cuts = [start]
    for w in words[:-1]:
        cuts.append(cuts[-1] + (end - start) * (len(w) / total))
    cuts.append(end)
    return [TimedWord(w, cuts[k], cuts[k + 1], line) for k, w in enumerate(words)]


OVERLAPS_SHOWN = 3


def note_overlap(message: str) -> None:
    """Overlapping words in a user's timings (ASR output has them): the pause is 0, the job
    goes on, and stderr says so (the first few of a ``tally()`` block in full, then a
    count every 100)."""
    count = count_overlap()
    if count <= OVERLAPS_SHOWN:
        print(f"restore: {message}; pause set to 0", file=sys.stderr)
    elif count % 100 == 0:
        print(f"restore: {count} overlapping words so far (pause 0)", file=sys.stderr)


def with_pauses(words: Iterable[TimedWord], end_of_audio: float | None, doc_id: str,
                name: str | Path) -> Iterator[InputWord]:
    """Input words with their pauses (:func:`punct.data.timed.iter_pauses`), lazily;
    overlapping words get a pause of 0 and a note on stderr (:func:`note_overlap`).

    Non-speech tokens of the active map are taken out of the pause computation (the
    pause after a word runs to the next speech word) and come back, flagged and with
    their own times, right after the speech word before them (or first, before any).
    The map is the one in force when the first word is read (read a document's words
    inside one ``tally()`` block)."""
    held: deque[tuple[TimedWord | None, list[TimedWord]]] = deque([(None, [])])

    def speech() -> Iterator[TimedWord]:
        is_nonspeech = active_map().is_nonspeech  # (read inside the caller's blocks)
        for w in words:
            if is_nonspeech(w.word):
                held[-1][1].append(w)
            else:
                held.append((w, []))
                yield w

    for w, pause in iter_pauses(speech(), end_of_audio, doc_id, name, on_overlap=note_overlap):
        while held[0][0] is not w:  # the non-speech tokens before ``w`` (mostly none)
            after = held.popleft()[1]
            if after:
                yield from _nonspeech_words(after)
        yield InputWord(w.word, w.start, w.end, pause)
    while held:
        yield from _nonspeech_words(held.popleft()[1])


def _nonspeech_words(tokens: list[TimedWord]) -> Iterator[InputWord]:
    """Held non-speech tokens as input words, with their own times and no pause."""
    return (InputWord(n.word, n.start, n.end, None, nonspeech=True) for n in tokens)


# ----------------------------------------------------------------------------- text


def read_text(stream: BinaryIO, name: str) -> Iterator[Document]:
    """One document per line (an empty line is an empty document)."""
    for lineno, text in iter_lines(stream, name):
        yield Document(f"{name}:{lineno}", text_input_words(text))


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
            return reco, word, start, round(start + dur, 9), lineno  # as read_ctm
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
        return with_pauses(self._timed(reco), None, f"recording {reco}", self.name)

    def _timed(self, reco: str) -> Iterator[TimedWord]:
        prev_start: float | None = None
        split = token_splitter()  # (the words are read inside the caller's blocks)
        while self.pending is not None and self.pending[0] == reco:
            _, raw, start, end, lineno = self.pending
            words = split(raw)[0]
            if prev_start is not None and start < prev_start - 1e-6:
                raise PunctInputError(f"word {raw!r} starts at {start} before the previous "
                                      f"word ({prev_start}): not in time order", self.name,
                                      lineno)
            if words:  # (a mark alone is skipped)
                prev_start = start
                yield TimedWord(" ".join(words), start, end, lineno)
            self.pending = self._next()  # after the yield: one line of lookahead, no more


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
    timed: list[TimedWord] = []
    for w in textgrid_words(grid, tier):
        timed.extend(split_span(text_words(w.word, str(path), w.line or 0), w.start, w.end,
                                w.line))
    doc_id = path.name.removesuffix(".TextGrid")
    return Document(doc_id, list(with_pauses(timed, grid.xmax, f"TextGrid {doc_id}", path)))


# ----------------------------------------------------------------------------- jsonl


def record_words(obj: dict[str, Any], name: str, line: int) -> list[InputWord]:
    """The words of one JSONL record (``text``, or ``words``: strings or objects with
    ``word``, ``start`` and ``end``); errors name ``name`` and ``line``."""
    if "text" in obj:
        if not isinstance(obj["text"], str):
            raise PunctInputError("'text' must be a string", name, line)
        return text_input_words(obj["text"])
    words = obj.get("words")
    if not isinstance(words, list):
        raise PunctInputError("a record needs 'text' (a string) or 'words' (a list)", name, line)
    timed: list[TimedWord] = []
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
        timed.extend(split_span(text_words(item["word"], name, line), start, end, line))
    if plain and timed:
        raise PunctInputError("mix of plain and timed words in one record", name, line)
    if plain:
        return plain_words(plain)
    return list(with_pauses(timed, None, f"record {obj.get('id', line)}", name))


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
        yield Document(doc_id, record_words(obj, name, lineno),
                       str(lang) if lang is not None else None)
