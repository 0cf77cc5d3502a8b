"""CoNLL-U / CoNLL-U Plus readers and detokenisation (Hungarian Szeged recipe).

- ``read_conllu``: UD files; each sentence keeps its ``# text`` and the ``SpaceAfter=No``
  flags, so ``spaced_text`` rebuilds the original spacing exactly.
- ``read_conllup``: NerKor CoNLL-U Plus (``# global.columns`` header naming FORM; no
  spacing): the text is rebuilt by ``rule_detokenize``.
- ``rule_detokenize``: Hungarian typographic spacing rules (no space before closing
  marks, none after opening brackets and quotes, straight quotes alternate). Its
  accuracy is measured on UD sentences, where the spacing is known
  (``tests/test_szeged_data.py``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from punct.errors import PunctInputError


@dataclass(frozen=True)
class Sentence:
    """One sentence: its tokens, the space after each (None = unknown) and ``# text``."""

    sent_id: str
    forms: tuple[str, ...]
    space_after: tuple[bool, ...] | None
    text: str | None
    path: str
    line: int


def spaced_text(sent: Sentence) -> str:
    """The sentence with its own spacing (CoNLL-U ``SpaceAfter``), else by rule."""
    if sent.space_after is None:
        return rule_detokenize(sent.forms)
    parts = []
    for form, space in zip(sent.forms, sent.space_after, strict=True):
        parts.append(form + (" " if space else ""))
    return "".join(parts).strip()


def _misc_space_after(misc: str) -> bool:
    return "SpaceAfter=No" not in misc.split("|")


def read_conllu(path: str | Path) -> list[Sentence]:
    """Sentences of a CoNLL-U file (multiword-token ranges give the surface form)."""
    path = Path(path)
    out: list[Sentence] = []
    forms: list[str] = []
    spaces: list[bool] = []
    meta: dict[str, str] = {}
    start = 1
    skip_until = 0

    def flush() -> None:
        nonlocal forms, spaces, meta
        if forms:
            sid = meta.get("sent_id", f"{path.stem}-{len(out) + 1}")
            out.append(Sentence(sid, tuple(forms), tuple(spaces), meta.get("text"),
                                str(path), start))
        forms, spaces, meta = [], [], {}

    with path.open(encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, start=1):
            line = raw.rstrip("\n")
            if not line.strip():
                flush()
                continue
            if line.startswith("#"):
                if not forms and not meta:
                    start = lineno
                key, sep, value = line[1:].partition("=")
                if sep:
                    meta[key.strip()] = value.strip()
                continue
            cols = line.split("\t")
            if len(cols) != 10:
                raise PunctInputError(f"expected 10 tab-separated CoNLL-U columns, found "
                                      f"{len(cols)}", path, lineno)
            if not forms and not meta:
                start = lineno
            tid = cols[0]
            if "." in tid:  # empty node
                continue
            if "-" in tid:  # multiword token: its form stands for the range
                skip_until = int(tid.split("-", 1)[1])
                forms.append(cols[1])
                spaces.append(_misc_space_after(cols[9]))
                continue
            if not tid.isdigit():
                raise PunctInputError(f"bad token id {tid!r}", path, lineno)
            if int(tid) <= skip_until:
                continue
            skip_until = 0
            forms.append(cols[1])
            spaces.append(_misc_space_after(cols[9]))
    flush()
    return out


class ColumnSentences:
    """Collects the tokens of a one-token-per-line file into sentences named
    ``<file stem>-<n>`` (no spacing known); a blank line ends a sentence."""

    def __init__(self, path: Path):
        self.path = path
        self.sentences: list[Sentence] = []
        self.forms: list[str] = []
        self.start = 1

    def add(self, line: str, form_col: int, lineno: int) -> None:
        """The form in column ``form_col`` of a tab-separated token line."""
        cols = line.split("\t")
        if len(cols) <= form_col:
            raise PunctInputError(f"expected at least {form_col + 1} columns, found "
                                  f"{len(cols)}", self.path, lineno)
        if not self.forms:
            self.start = lineno
        self.forms.append(cols[form_col])

    def end(self) -> None:
        """Close the current sentence, if it has tokens."""
        if self.forms:
            self.sentences.append(Sentence(f"{self.path.stem}-{len(self.sentences) + 1}",
                                           tuple(self.forms), None, None, str(self.path),
                                           self.start))
        self.forms = []


def numbered_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, line without its newline) of a file, then one blank line after the
    last, so that the last sentence is closed like the others."""
    with path.open(encoding="utf-8") as fh:
        lines = [(n, raw.rstrip("\n")) for n, raw in enumerate(fh, start=1)]
    return [*lines, (len(lines) + 1, "")]


def read_conllup(path: str | Path) -> list[Sentence]:
    """Sentences of a CoNLL-U Plus file without spacing (the FORM column of the header)."""
    path = Path(path)
    sentences = ColumnSentences(path)
    form_col: int | None = None
    for lineno, line in numbered_lines(path):
        if line.startswith("# global.columns"):
            cols = line.split("=", 1)[1].split()
            if "FORM" not in cols:
                raise PunctInputError("no FORM column in # global.columns", path, lineno)
            form_col = cols.index("FORM")
        elif line.startswith("#"):
            continue
        elif not line.strip():
            sentences.end()
        elif form_col is None:
            raise PunctInputError("token line before the # global.columns header", path,
                                  lineno)
        else:
            sentences.add(line, form_col, lineno)
    return sentences.sentences


def read_columns(path: str | Path, form_col: int) -> list[Sentence]:
    """Sentences of a tab-separated one-token-per-line file (blank line = sentence end;
    ``#`` lines before a sentence are comments, inside one they are tokens)."""
    path = Path(path)
    sentences = ColumnSentences(path)
    for lineno, line in numbered_lines(path):
        if line.startswith("#") and not sentences.forms:
            continue
        if not line.strip():
            sentences.end()
        else:
            sentences.add(line, form_col, lineno)
    return sentences.sentences


# Rule-based spacing (Hungarian typography).
NO_SPACE_BEFORE = frozenset(",.:;!?)]}”»…%")
NO_SPACE_AFTER = frozenset("([{„«")
STRAIGHT = '"'


def _all_in(form: str, chars: frozenset[str]) -> bool:
    return bool(form) and all(ch in chars for ch in form)


def rule_spaces(forms: Sequence[str]) -> list[bool]:
    """Whether a space follows each token, by rule (the last token: False)."""
    n = len(forms)
    space = [True] * n
    quote_open = False
    for i, form in enumerate(forms):
        if i > 0 and _all_in(form, NO_SPACE_BEFORE):
            space[i - 1] = False
        if _all_in(form, NO_SPACE_AFTER):
            space[i] = False
        if form == STRAIGHT:
            if quote_open:
                if i > 0:
                    space[i - 1] = False
            else:
                space[i] = False
            quote_open = not quote_open
    if n:
        space[-1] = False
    return space


def rule_detokenize(forms: Sequence[str]) -> str:
    """Tokens joined with Hungarian spacing rules."""
    return "".join(f + (" " if s else "") for f, s in zip(forms, rule_spaces(forms),
                                                          strict=True))


def spacing_agreement(sentences: Sequence[Sentence]) -> tuple[int, int, int, int]:
    """(sentences matching, sentences, gaps matching, gaps) of the rule vs SpaceAfter."""
    sent_ok = gaps_ok = gaps = 0
    for sent in sentences:
        if sent.space_after is None:
            raise ValueError(f"{sent.path}:{sent.line}: no spacing to compare with")
        rule = rule_spaces(sent.forms)
        gold = [*sent.space_after[:-1], False]
        same = [a == b for a, b in zip(rule[:-1], gold[:-1], strict=True)]
        gaps += len(same)
        gaps_ok += sum(same)
        sent_ok += all(same)
    return sent_ok, len(sentences), gaps_ok, gaps


def iter_files(root: Path, suffixes: tuple[str, ...]) -> Iterator[Path]:
    """Files under ``root`` (or ``root`` itself) with one of ``suffixes``, sorted."""
    if root.is_file():
        yield root
        return
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.name.endswith(suffixes):
            yield path
