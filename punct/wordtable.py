"""The word table: one row per word, the contract between stages (``words.tsv``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from punct.atomic import atomic_open
from punct.data.nonspeech import NonSpeechMap
from punct.errors import MissingDataError, PunctInputError
from punct.labels import CAP_LABELS, Token, parse_text, punct_from_str, punct_to_str, written

COLUMNS: tuple[str, ...] = (
    "utt_id", "idx", "word", "form", "punct", "cap", "start", "end", "pause_after",
)


@dataclass(frozen=True, init=False)
class WordRow:
    """One word of an utterance with its labels and (optional) timings in seconds.

    Frozen; made once per word on every path (reading, restoring, scoring), so its
    ``__init__`` fills the instance dictionary in one call instead of the nine
    ``object.__setattr__`` calls of a generated frozen ``__init__`` (half the time; the
    same fields and defaults, which tests/test_wordtable.py holds to the declared ones)."""

    utt_id: str
    idx: int
    word: str
    form: str
    punct: tuple[str, ...]
    cap: str
    start: float | None = None
    end: float | None = None
    pause_after: float | None = None

    def __init__(self, utt_id: str, idx: int, word: str, form: str, punct: tuple[str, ...],
                 cap: str, start: float | None = None, end: float | None = None,
                 pause_after: float | None = None) -> None:
        self.__dict__.update(utt_id=utt_id, idx=idx, word=word, form=form, punct=punct,
                             cap=cap, start=start, end=end, pause_after=pause_after)

    def with_timing(self, start: float | None, end: float | None,
                    pause_after: float | None) -> WordRow:
        return replace(self, start=start, end=end, pause_after=pause_after)


def rows_from_tokens(utt_id: str, tokens: Sequence[Token]) -> list[WordRow]:
    """Word rows (no timings) for parsed tokens."""
    return [
        WordRow(utt_id, i, tok.word, tok.form, tok.punct, tok.cap) for i, tok in enumerate(tokens)
    ]


def rows_from_text(utt_id: str, text: str, path: str | Path | None = None,
                   line: int | None = None, nonspeech: NonSpeechMap | str | None = None
                   ) -> list[WordRow]:
    """Word rows of a punctuated, cased text; an empty text is an error.

    Non-speech tokens of ``nonspeech`` (a map, a shipped name or a path; None: the
    default map) are no rows; their marks go to the neighbouring words
    (``punct.labels.parse_text``)."""
    where = str(path) if path is not None else None
    tokens = parse_text(text, where, line, nonspeech)
    if not tokens:
        what = "only non-speech tokens" if text.strip() else "no words"
        raise PunctInputError(f"empty utterance {utt_id!r} ({what})", where, line)
    return rows_from_tokens(utt_id, tokens)


def render_rows(rows: Sequence[WordRow]) -> str:
    """The normalised text of an utterance's rows (uses the surface forms)."""
    return " ".join([written(r.form, r.punct) for r in rows])


def _fmt_time(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:.3f}"


def _parse_time(text: str, path: Path, line: int, column: str) -> float | None:
    if text == "":
        return None
    try:
        value = float(text)
    except ValueError:
        raise PunctInputError(f"column {column}: not a number: {text!r}", path, line) from None
    if math.isnan(value) or value < 0:
        raise PunctInputError(f"column {column}: invalid time {text!r}", path, line)
    return value


def format_row(row: WordRow) -> str:
    for field in (row.utt_id, row.word, row.form):
        if "\t" in field or "\n" in field or field == "":
            raise ValueError(f"word table field {field!r} of {row.utt_id} is empty or has a tab")
    return "\t".join((
        row.utt_id, str(row.idx), row.word, row.form, punct_to_str(row.punct), row.cap,
        _fmt_time(row.start), _fmt_time(row.end), _fmt_time(row.pause_after),
    ))


def write_word_table(path: str | Path, utts: Mapping[str, Sequence[WordRow]]) -> None:
    """Write utterances (in the mapping's order) atomically to ``path``."""
    with atomic_open(path, "w", newline="\n") as out:
        out.write("\t".join(COLUMNS) + "\n")
        for utt_id, rows in utts.items():
            for i, row in enumerate(rows):
                if row.utt_id != utt_id or row.idx != i:
                    raise ValueError(f"row {row} is not word {i} of utterance {utt_id}")
                out.write(format_row(row) + "\n")


def read_text_lines(path: str | Path) -> list[str]:
    """Lines of a UTF-8 file (a BOM is dropped); invalid UTF-8 is an error naming the line
    and byte offset."""
    path = Path(path)
    if not path.is_file():
        raise MissingDataError("file not found", path)
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise PunctInputError(
            f"invalid UTF-8 at byte offset {err.start} (byte 0x{data[err.start]:02x}): "
            f"{err.reason}", path, line,
        ) from None
    text = text.removeprefix("\ufeff")
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")


def read_word_table(path: str | Path) -> dict[str, list[WordRow]]:
    """Read ``words.tsv``; every malformed line is an error naming file and line."""
    path = Path(path)
    lines = read_text_lines(path)
    if not lines or tuple(lines[0].split("\t")) != COLUMNS:
        raise PunctInputError(f"expected the header {' '.join(COLUMNS)}", path, 1)
    utts: dict[str, list[WordRow]] = {}
    last_utt = ""
    for lineno, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        if len(fields) != len(COLUMNS):
            raise PunctInputError(
                f"expected {len(COLUMNS)} tab-separated fields, found {len(fields)}", path, lineno
            )
        utt_id, idx_text, word, form, punct_text, cap, start, end, pause = fields
        if not utt_id or not word or not form:
            raise PunctInputError("empty utt_id, word or form", path, lineno)
        if utt_id in utts and utt_id != last_utt:
            raise PunctInputError(f"rows of utterance {utt_id} are not contiguous", path, lineno)
        last_utt = utt_id
        rows = utts.setdefault(utt_id, [])
        if idx_text != str(len(rows)):
            raise PunctInputError(
                f"utterance {utt_id}: expected word index {len(rows)}, found {idx_text!r} "
                "(rows of an utterance must be contiguous and in order)", path, lineno,
            )
        if form.lower() != word:
            raise PunctInputError(f"word {word!r} is not the lower-cased form {form!r}",
                                  path, lineno)
        if cap not in CAP_LABELS:
            raise PunctInputError(f"unknown capitalisation label {cap!r}", path, lineno)
        rows.append(WordRow(
            utt_id, len(rows), word, form, punct_from_str(punct_text, str(path), lineno), cap,
            _parse_time(start, path, lineno, "start"), _parse_time(end, path, lineno, "end"),
            _parse_time(pause, path, lineno, "pause_after"),
        ))
    return utts
