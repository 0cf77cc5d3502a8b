"""Parsers of the IWSLT 2012 TED punctuation benchmark (Che et al. 2016 package).

Three formats:

- Che's token-per-line TSV (``train2012``, ``dev2012``, ``test2011``, ``test2011asr``;
  also the re-encoded copy of xashru/punctuation-restoration): ``token<TAB>LABEL``,
  LABEL in O/COMMA/PERIOD/QUESTION (the mark after the token), CRLF or LF endings.
- the punctuator2 format: one line of tokens separated by spaces, marks as their own
  tokens (``,COMMA``, ``.PERIOD``, ``?QUESTIONMARK``, ...).
- the IWSLT mteval XML (``IWSLT12.TED.MT.tst2011.en-fr.en.xml``): talks (``<doc>``) of
  segments (``<seg>``), cased and fully punctuated.

Che's files are not valid UTF-8: some characters lost their last byte, which became
``?`` (the music note ``♪`` is ``e2 99 3f``). Bytes are decoded here explicitly: every
invalid sequence (and the ``?`` that replaced its lost byte) is removed and recorded as
a ``DecodeIssue`` with file, line and byte offset, so callers count and report them.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from punct.errors import MissingDataError, PunctInputError
from punct.labels import OPENING_LABELS, Token, cap_label, parse_text
from punct.wordtable import WordRow

CHE_LABELS: dict[str, tuple[str, ...]] = {
    "O": (), "COMMA": ("COMMA",), "PERIOD": ("PERIOD",), "QUESTION": ("QUESTION",),
}
# punctuator2's mark tokens (its data.py inventory) -> canonical labels.
PUNCTUATOR2_MARKS: dict[str, str] = {
    ",COMMA": "COMMA", ".PERIOD": "PERIOD", "?QUESTIONMARK": "QUESTION",
    "!EXCLAMATIONMARK": "EXCLAMATION", ":COLON": "COLON", ";SEMICOLON": "SEMICOLON",
    "-DASH": "DASH",
}
MUSIC_NOTE_PREFIX = b"\xe2\x99"  # U+2640-U+267F: the notes ♩ ♪ ♫ ♬ of TED transcripts
MUSIC_NOTES = "♩♪♫♬"
# English clitics split off as in Che's files ("i 'm", "do n't"; "i've", "i'd" stay whole;
# "can't" becomes "cannot").
CLITICS = ("n't", "'s", "'m", "'re", "'ll")
WHOLE_REPLACEMENTS = {"can't": "cannot"}


@dataclass(frozen=True)
class DecodeIssue:
    """One invalid UTF-8 sequence removed from a file."""

    path: str
    line: int
    offset: int  # byte offset in the file
    raw: bytes  # the removed bytes (incl. the '?' that replaced a lost byte)
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: byte {self.offset}: removed {self.raw.hex(' ')} " \
               f"({self.what})"


@dataclass(frozen=True)
class IwsltWord:
    """One token with its marks (canonical labels) and where it was read."""

    form: str
    punct: tuple[str, ...]
    line: int

    @property
    def word(self) -> str:
        return self.form.lower()


@dataclass
class ParsedFile:
    """Words of one file in order, and what had to be repaired to read them."""

    path: str
    words: list[IwsltWord]
    issues: list[DecodeIssue] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # other repairs, "path:line: what"


def decode_bytes(data: bytes, path: str | Path, line: int = 1, base: int = 0
                 ) -> tuple[str, list[DecodeIssue]]:
    """Decode UTF-8, removing every invalid sequence (recorded, never silently replaced).

    A truncated sequence followed by ``?`` is taken as a character whose last byte was
    replaced by ``?`` (Che's files): the ``?`` goes with it. ``line`` and ``base`` (byte
    offset of ``data`` in the file) locate the issues; newlines in ``data`` advance
    ``line``.
    """
    out: list[str] = []
    issues: list[DecodeIssue] = []
    pos = 0
    while pos < len(data):
        try:
            out.append(data[pos:].decode("utf-8"))
            break
        except UnicodeDecodeError as err:
            start, end = pos + err.start, pos + err.end
            good = data[pos:start].decode("utf-8")
            out.append(good)
            damaged = data[start] >= 0xC0 and end < len(data) and data[end:end + 1] == b"?"
            if damaged:
                end += 1
            raw = data[start:end]
            if raw.startswith(MUSIC_NOTE_PREFIX) and damaged:
                what = "music note (U+26xx) whose last byte became '?'"
            elif damaged:
                what = "character whose last byte became '?'"
            else:
                what = f"invalid UTF-8: {err.reason}"
            issue_line = line + data[:start].count(b"\n")
            issues.append(DecodeIssue(str(path), issue_line, base + start, raw, what))
            pos = end
    return "".join(out), issues


def _read_bytes(path: str | Path) -> bytes:
    path = Path(path)
    if not path.is_file():
        raise MissingDataError("file not found", path)
    return path.read_bytes().removeprefix(b"\xef\xbb\xbf")


def _iter_lines(data: bytes) -> Iterator[tuple[int, int, bytes]]:
    """(line number, byte offset, content without CR/LF) of every line."""
    offset = 0
    for number, raw in enumerate(data.split(b"\n"), start=1):
        yield number, offset, raw.removesuffix(b"\r")
        offset += len(raw) + 1


def _append(parsed: ParsedFile, form: str, punct: tuple[str, ...], line: int,
            removed: str = "") -> None:
    """Add a word; an empty token (in the file, or after removing ``removed``) is dropped
    and its marks go to the previous word (noted)."""
    if form:
        parsed.words.append(IwsltWord(form, punct, line))
        return
    moved = [p for p in punct if not parsed.words or p not in parsed.words[-1].punct]
    if moved and parsed.words:
        last = parsed.words[-1]
        parsed.words[-1] = IwsltWord(last.form, last.punct + tuple(moved), last.line)
    why = f"empty after removing {removed}" if removed else "empty token"
    parsed.notes.append(f"{parsed.path}:{line}: {why}, dropped"
                        + (" (its mark moved to the previous word)" if punct else ""))


def parse_che_tsv(path: str | Path) -> ParsedFile:
    """Che's ``token<TAB>LABEL`` file (CRLF or LF; blank lines are skipped)."""
    parsed = ParsedFile(str(path), [])
    for number, offset, raw in _iter_lines(_read_bytes(path)):
        if not raw.strip():
            continue
        text, issues = decode_bytes(raw, path, number, offset)
        parsed.issues += issues
        fields = text.split("\t")
        if len(fields) != 2:
            raise PunctInputError(f"expected token<TAB>LABEL, found {len(fields)} field(s): "
                                  f"{text[:60]!r}", path, number)
        token, label = fields[0].strip(), fields[1].strip()
        if label not in CHE_LABELS:
            raise PunctInputError(f"unknown label {label!r} (expected one of "
                                  f"{', '.join(CHE_LABELS)})", path, number)
        if any(ch.isspace() for ch in token):
            raise PunctInputError(f"token {token!r} contains white space", path, number)
        _append(parsed, token, CHE_LABELS[label], number, "invalid bytes" if issues else "")
    if not parsed.words:
        raise PunctInputError("no tokens", path)
    return parsed


def parse_punctuator2(path: str | Path) -> ParsedFile:
    """punctuator2's format: tokens separated by white space, marks as tokens."""
    data = _read_bytes(path)
    parsed = ParsedFile(str(path), [])
    text, parsed.issues = decode_bytes(data, path)
    line = 1
    for match in re.finditer(r"\S+|\n", text):
        token = match.group()
        if token == "\n":
            line += 1
            continue
        if token in PUNCTUATOR2_MARKS:
            if not parsed.words:
                raise PunctInputError(f"mark {token} before the first word", path, line)
            last = parsed.words[-1]
            label = PUNCTUATOR2_MARKS[token]
            if label not in last.punct:
                parsed.words[-1] = IwsltWord(last.form, (*last.punct, label), last.line)
            continue
        if token[0] in ",.?!:;-" and token[1:].isupper() and len(token) > 2:
            raise PunctInputError(f"unknown punctuator2 mark token {token!r} (known: "
                                  f"{' '.join(PUNCTUATOR2_MARKS)})", path, line)
        parsed.words.append(IwsltWord(token, (), line))
    if not parsed.words:
        raise PunctInputError("no tokens", path)
    return parsed


@dataclass
class Talk:
    """One ``<doc>`` of an mteval XML file: its segments as (line, text)."""

    talk_id: str
    segments: list[tuple[int, str]]


DOC_RE = re.compile(r'<doc\s[^>]*docid="([^"]+)"')
SEG_RE = re.compile(r"<seg\b[^>]*>(.*?)</seg>")


def parse_mteval_talks(path: str | Path) -> tuple[list[Talk], list[DecodeIssue]]:
    """Talks and segments of an IWSLT mteval XML file (one ``<seg>`` per line)."""
    talks: list[Talk] = []
    issues: list[DecodeIssue] = []
    for number, offset, raw in _iter_lines(_read_bytes(path)):
        text, found = decode_bytes(raw, path, number, offset)
        issues += found
        doc = DOC_RE.search(text)
        if doc:
            talks.append(Talk(doc.group(1), []))
            continue
        if "<seg" not in text:
            continue
        seg = SEG_RE.search(text)
        if not seg:
            raise PunctInputError("a <seg> must open and close on one line", path, number)
        if not talks:
            raise PunctInputError("<seg> outside any <doc>", path, number)
        talks[-1].segments.append((number, html.unescape(seg.group(1))))
    if not talks or not any(t.segments for t in talks):
        raise PunctInputError("no <doc> with <seg> elements", path)
    return talks, issues


def split_clitic(token: Token) -> list[Token]:
    """``I'm`` -> ``I`` + ``'m``, ``don't`` -> ``do`` + ``n't`` (Che's tokenisation).

    Opening marks stay on the first part, closing marks go to the clitic.
    """
    form = token.form
    lower = form.lower().replace("’", "'")
    if lower in WHOLE_REPLACEMENTS:
        new = WHOLE_REPLACEMENTS[lower]
        return [Token(new.capitalize() if form[0].isupper() else new, token.punct)]
    for clitic in CLITICS:
        if lower.endswith(clitic) and len(form) > len(clitic) and \
                any(ch.isalnum() for ch in form[: -len(clitic)]):
            stem, tail = form[: -len(clitic)], form[-len(clitic):]
            opening = tuple(p for p in token.punct if p in OPENING_LABELS)
            closing = tuple(p for p in token.punct if p not in OPENING_LABELS)
            return [Token(stem, opening), Token(tail, closing)]
    return [Token(form, token.punct)]


def parse_mteval(path: str | Path, split_clitics: bool = True) -> dict[str, ParsedFile]:
    """Words of each talk (talk id -> ParsedFile) of the cased, punctuated reference.

    Marks follow ``punct.labels.parse_text`` (the full inventory). Music notes are not
    words: they are removed and noted. Clitics are split as in Che's files unless
    ``split_clitics`` is false.
    """
    talks, issues = parse_mteval_talks(path)
    out: dict[str, ParsedFile] = {}
    for talk in talks:
        parsed = ParsedFile(str(path), [], [i for i in issues if _in_talk(i.line, talk)])
        for line, text in talk.segments:
            if any(note in text for note in MUSIC_NOTES):
                parsed.notes.append(f"{path}:{line}: music note(s) removed")
                text = "".join(" " if ch in MUSIC_NOTES else ch for ch in text)
            for tok in parse_text(text, str(path), line):
                parts = split_clitic(tok) if split_clitics else [tok]
                parsed.words += [IwsltWord(part.form, part.punct, line) for part in parts]
        if not parsed.words:
            raise PunctInputError(f"talk {talk.talk_id} has no words", path)
        out[talk.talk_id] = parsed
    return out


def _in_talk(line: int, talk: Talk) -> bool:
    return bool(talk.segments) and talk.segments[0][0] <= line <= talk.segments[-1][0]


def blocks(words: Sequence[IwsltWord], size: int) -> list[Sequence[IwsltWord]]:
    """Consecutive pseudo-documents of ``size`` words (the last one may be shorter).

    The cut ignores the labels on purpose, so that a block end never tells a model
    where a sentence ends.
    """
    if size < 1:
        raise PunctInputError(f"block size must be positive, got {size}")
    return [words[i:i + size] for i in range(0, len(words), size)]


def word_rows(utt_id: str, words: Sequence[IwsltWord]) -> list[WordRow]:
    """Word-table rows (no timings) of one pseudo-document."""
    return [WordRow(utt_id, i, w.word, w.form, w.punct, cap_label(w.form))
            for i, w in enumerate(words)]


def label_counts(words: Sequence[IwsltWord]) -> dict[str, int]:
    """Number of words per mark (``O`` = no mark), for reports and checks."""
    counts: dict[str, int] = {"O": 0}
    for w in words:
        if not w.punct:
            counts["O"] += 1
        for label in w.punct:
            counts[label] = counts.get(label, 0) + 1
    return counts
