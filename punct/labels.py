"""Punctuation and capitalisation labels, derived from Unicode code points.

A text is split on white space into tokens. Each token is a word with marks glued
to its edges (``¿Vienes?``, ``«casa».``), or a token made only of marks
(`` – ``). Opening marks (OPEN_*) attach to the word they precede, all other
marks to the word they follow. ``parse_text`` turns text into ``Token`` objects;
``render`` gives the normalised text back, with every mark written with its
canonical character. Rendering is a fixed point: ``render(parse_text(render(t)))``
equals ``render(t)``.

Annotation tokens follow the corpus' non-speech map (``punct.data.nonspeech``, the
default map unless one is given): a non-speech token (``<breath>``, ``[noise]``) is left
out of the tokens; marks glued to it are read as if they stood alone, so a closing mark
after it belongs to the word before it and an opening mark before it to the word after
it. An unintelligible token (``(())``, ``<unk>``) is a word, kept as it is written.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from punct.data.nonspeech import NonSpeechMap, load_nonspeech_map
from punct.errors import PunctInputError

PUNCT_LABELS: tuple[str, ...] = (
    "COMMA",
    "PERIOD",
    "QUESTION",
    "EXCLAMATION",
    "COLON",
    "SEMICOLON",
    "DASH",
    "OPEN_DASH",
    "ELLIPSIS",
    "OPEN_QUOTE",
    "QUOTE",
    "OPEN_QUES",
    "OPEN_EXCL",
)
OPENING_LABELS: frozenset[str] = frozenset({"OPEN_DASH", "OPEN_QUOTE", "OPEN_QUES", "OPEN_EXCL"})
CAP_LABELS: tuple[str, ...] = ("O", "FIRST_CAP", "ALL_CAPS")
NO_PUNCT = "O"

# Canonical characters used when rendering.
CANONICAL: dict[str, str] = {
    "COMMA": ",",
    "PERIOD": ".",
    "QUESTION": "?",
    "EXCLAMATION": "!",
    "COLON": ":",
    "SEMICOLON": ";",
    "DASH": " –",
    "OPEN_DASH": "—",
    "ELLIPSIS": "…",
    "OPEN_QUOTE": "“",
    "QUOTE": "”",
    "OPEN_QUES": "¿",
    "OPEN_EXCL": "¡",
}

DASHES = frozenset("-‐‑‒–—―")
# Closing marks: code point -> label (dashes and straight quotes are positional).
#: The marks that end a sentence (a capital follows them).
SENTENCE_END: frozenset[str] = frozenset({"PERIOD", "QUESTION", "EXCLAMATION"})

CLOSING_CHARS: dict[str, str] = {
    ",": "COMMA",
    "،": "COMMA",
    "、": "COMMA",
    ".": "PERIOD",
    "。": "PERIOD",
    "?": "QUESTION",
    "!": "EXCLAMATION",
    ":": "COLON",
    ";": "SEMICOLON",
    "…": "ELLIPSIS",
    "»": "QUOTE",
    "”": "QUOTE",
}
OPENING_CHARS: dict[str, str] = {
    "¿": "OPEN_QUES",
    "¡": "OPEN_EXCL",
    "«": "OPEN_QUOTE",
    "“": "OPEN_QUOTE",
    "„": "OPEN_QUOTE",
}
STRAIGHT_QUOTE = '"'
MARK_CHARS = frozenset(CLOSING_CHARS) | frozenset(OPENING_CHARS) | DASHES | {STRAIGHT_QUOTE}


@dataclass(frozen=True)
class Token:
    """One word with its marks. ``span`` is the char range of ``form`` in the input."""

    form: str
    punct: tuple[str, ...]
    span: tuple[int, int] = (0, 0)

    @property
    def word(self) -> str:
        """The lower-cased word, as an ASR system would output it."""
        return self.form.lower()

    @property
    def cap(self) -> str:
        """The capitalisation label of the surface form."""
        return cap_label(self.form)


APOSTROPHES = frozenset("'’‘ʼ")


def is_letter_or_digit(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "LNM"


def is_word_char(ch: str) -> bool:
    """Letters, digits, combining marks and apostrophes (``'90s``, ``students'``)."""
    return ch in APOSTROPHES or is_letter_or_digit(ch)


def _describe(ch: str) -> str:
    name = unicodedata.name(ch, "unnamed")
    return f"{ch!r} (U+{ord(ch):04X} {name})"


def _closing_label(mark: str, where: str) -> str:
    """Label of one closing mark group (already split)."""
    if mark.startswith("."):
        return "PERIOD" if len(mark) == 1 else "ELLIPSIS"
    if mark[0] in DASHES:
        return "DASH"
    if mark == STRAIGHT_QUOTE:
        return "QUOTE"
    if mark in CLOSING_CHARS:
        return CLOSING_CHARS[mark]
    raise PunctInputError(f"unknown punctuation mark {_describe(mark[0])} {where}")


def _split_marks(marks: str) -> list[str]:
    """Split a run of mark characters into marks: runs of dots and of dashes stay one mark."""
    out: list[str] = []
    i = 0
    while i < len(marks):
        ch = marks[i]
        j = i + 1
        if ch == ".":
            while j < len(marks) and marks[j] == ".":
                j += 1
        elif ch in DASHES:
            while j < len(marks) and marks[j] in DASHES:
                j += 1
        out.append(marks[i:j])
        i = j
    return out


def _check_marks(marks: str, path: str | None, line: int | None, token: str) -> None:
    for ch in marks:
        if ch not in MARK_CHARS:
            raise PunctInputError(
                f"unknown punctuation mark {_describe(ch)} in token {token!r}; "
                "known marks: " + " ".join(sorted(MARK_CHARS)),
                path,
                line,
            )


def _opening_labels(marks: str) -> list[str]:
    labels = []
    for mark in _split_marks(marks):
        if mark[0] in DASHES:
            labels.append("OPEN_DASH")
        elif mark == STRAIGHT_QUOTE:
            labels.append("OPEN_QUOTE")
        elif mark in OPENING_CHARS:
            labels.append(OPENING_CHARS[mark])
        else:
            raise ValueError(mark)
    return labels


def split_word_edges(raw: str) -> tuple[str, str, str]:
    """``(lead, core, trail)`` of a token: the characters that are not word characters
    (``is_word_char``) off both edges."""
    i, j = 0, len(raw)
    while i < j and not is_word_char(raw[i]):
        i += 1
    while j > i and not is_word_char(raw[j - 1]):
        j -= 1
    return raw[:i], raw[i:j], raw[j:]


def strip_edge_marks(raw: str) -> tuple[str, str, str]:
    """``(leading marks, core, trailing marks)`` of a token: known marks off both edges."""
    i, j = 0, len(raw)
    while i < j and raw[i] in MARK_CHARS:
        i += 1
    while j > i and raw[j - 1] in MARK_CHARS:
        j -= 1
    return raw[:i], raw[i:j], raw[j:]


def _pieces(raw: str, nonspeech: NonSpeechMap) -> list[tuple[str, bool]]:
    """``(text, is_word_as_written)`` pieces of a white-space token: a non-speech token is
    replaced by the marks glued to it; an unintelligible token is one verbatim word."""
    kind = nonspeech.classify(raw)
    if kind == "nonspeech":
        return []
    lead, core, trail = strip_edge_marks(raw) if kind == "word" else ("", raw, "")
    if core and core != raw:
        kind = nonspeech.classify(core)
        if kind == "nonspeech":
            return [(m, False) for m in (lead, trail) if m]
    return [(raw, kind == "unintelligible" and bool(core))]


def parse_text(text: str, path: str | None = None, line: int | None = None,
               nonspeech: NonSpeechMap | str | None = None) -> list[Token]:
    """Split ``text`` into tokens with their punctuation labels.

    ``nonspeech``: the map of non-speech and unintelligible tokens (a map, a shipped
    name or a YAML path; None = the default map); see the module docstring.
    Raises PunctInputError (naming ``path`` and ``line``) for an unknown mark, an
    opening mark at the end of a token, a closing mark before a word, or a mark
    that cannot be attached to any word.
    """
    ns_map = load_nonspeech_map(nonspeech)
    tokens: list[Token] = []
    pending_open: list[str] = []  # opening marks waiting for the next word
    straight_open = False  # parity of standalone straight quotes
    pos = 0
    for whole in text.split():
        start = text.index(whole, pos)
        pos = start + len(whole)
        for raw, verbatim in _pieces(whole, ns_map):
            if verbatim:
                lead, core, trail = strip_edge_marks(raw)
            else:
                lead, core, trail = split_word_edges(raw)
                if not any(is_letter_or_digit(ch) for ch in core):
                    lead, core, trail = raw, "", ""
            _check_marks(lead + trail, path, line, raw)
            if not core:
                # A token made of marks only.
                if all(ch in OPENING_CHARS for ch in raw) or (
                    raw == STRAIGHT_QUOTE and not straight_open
                ):
                    pending_open.extend(_opening_labels(raw))
                    straight_open = raw == STRAIGHT_QUOTE or straight_open
                    continue
                if not tokens and all(ch in DASHES or ch in OPENING_CHARS for ch in raw):
                    pending_open.extend(_opening_labels(raw))
                    continue
                if not tokens:
                    raise PunctInputError(
                        f"mark {raw!r} before the first word cannot be attached", path, line
                    )
                if raw == STRAIGHT_QUOTE:
                    straight_open = False
                extra = tuple(_closing_label(m, f"in {raw!r}") for m in _split_marks(raw))
                last = tokens[-1]
                tokens[-1] = Token(last.form, last.punct + extra, last.span)
                continue
            for ch in lead:
                if ch in CLOSING_CHARS:
                    raise PunctInputError(
                        f"closing mark {_describe(ch)} before the word in token {raw!r}",
                        path, line
                    )
            for ch in trail:
                if ch in OPENING_CHARS:
                    raise PunctInputError(
                        f"opening mark {_describe(ch)} after the word in token {raw!r}",
                        path, line
                    )
            opening = pending_open + _opening_labels(lead)
            pending_open = []
            if STRAIGHT_QUOTE in lead:
                straight_open = True
            if STRAIGHT_QUOTE in trail:
                straight_open = False
            closing = [_closing_label(m, f"in {raw!r}") for m in _split_marks(trail)]
            span = (start + len(lead), start + len(raw) - len(trail))
            tokens.append(Token(core, tuple(opening + closing), span))
    if pending_open:
        raise PunctInputError("opening mark at the end of the text has no word to attach to",
                              path, line)
    return tokens


def written(form: str, punct: Sequence[str]) -> str:
    """A word as written: its opening marks, ``form``, its closing marks (canonical
    characters)."""
    if not punct:  # most words
        return form
    opening, closing = _mark_strings(tuple(punct))
    return opening + form + closing


@functools.lru_cache(maxsize=1 << 12)
def _mark_strings(punct: tuple[str, ...]) -> tuple[str, str]:
    """The opening and the closing marks of ``punct`` as written (canonical characters)."""
    return ("".join(CANONICAL[p] for p in punct if p in OPENING_LABELS),
            "".join(CANONICAL[p] for p in punct if p not in OPENING_LABELS))


def render(tokens: Iterable[Token]) -> str:
    """Normalised text of tokens: canonical mark characters, single spaces."""
    return " ".join([written(tok.form, tok.punct) for tok in tokens])


def normalise_text(text: str, path: str | None = None, line: int | None = None,
                   nonspeech: NonSpeechMap | str | None = None) -> str:
    """The normalised form of a punctuated text (non-speech tokens left out)."""
    return render(parse_text(text, path, line, nonspeech))


def cap_label(form: str) -> str:
    """O, FIRST_CAP or ALL_CAPS (AutoPunct 5.4: ``EiTB`` -> FIRST_CAP)."""
    cased = [ch for ch in form if ch.isupper() or ch.islower()]
    if not cased:
        return "O"
    if len(cased) >= 2 and all(ch.isupper() for ch in cased):
        return "ALL_CAPS"
    return "FIRST_CAP" if cased[0].isupper() else "O"


def apply_cap(word: str, cap: str) -> str:
    """Surface form of a lower-cased word under a capitalisation label."""
    if cap == "ALL_CAPS":
        return word.upper()
    if cap == "FIRST_CAP":
        for k, ch in enumerate(word):
            if ch.isupper() or ch.islower():
                return word[:k] + ch.upper() + word[k + 1:]
        return word
    if cap == "O":
        return word
    raise ValueError(f"unknown capitalisation label {cap!r}")


def punct_to_str(punct: Sequence[str]) -> str:
    """``("QUOTE", "PERIOD")`` -> ``"QUOTE|PERIOD"``; empty -> ``"O"``."""
    return "|".join(punct) if punct else NO_PUNCT


def punct_from_str(text: str, path: str | None = None, line: int | None = None) -> tuple[str, ...]:
    """Inverse of ``punct_to_str``; unknown labels are an error naming path and line."""
    if text == NO_PUNCT:
        return ()
    labels = tuple(text.split("|"))
    for label in labels:
        if label not in PUNCT_LABELS:
            raise PunctInputError(f"unknown punctuation label {label!r}", path, line)
    return labels


@dataclass(frozen=True)
class LabelSet:
    """A subset of the canonical marks and the mapping of every canonical mark onto it."""

    name: str
    labels: tuple[str, ...]
    mapping: dict[str, str | None]
    exclusive: bool = False
    """At most one mark per word: trained with a softmax over O plus the marks, decoded by
    argmax. Multi-label sets (a word may carry QUOTE and PERIOD) use one sigmoid per mark
    and per-mark thresholds."""

    def map(self, punct: Sequence[str]) -> tuple[str, ...]:
        """Map canonical marks to this set, dropping unmapped ones and duplicates."""
        out: list[str] = []
        for label in punct:
            target = self.mapping[label]
            if target is not None and target not in out:
                out.append(target)
        if self.exclusive and len(out) > 1:  # keep the strongest: the last of ``labels``
            out = [max(out, key=self.labels.index)]
        return tuple(out)

    def index(self, label: str) -> int:
        return self.labels.index(label)


def _label_set(name: str, labels: tuple[str, ...], mapping: dict[str, str | None],
               exclusive: bool = False) -> LabelSet:
    full = {label: mapping.get(label) for label in PUNCT_LABELS}
    return LabelSet(name, labels, full, exclusive)


LABEL_SETS: dict[str, LabelSet] = {
    "full13": _label_set("full13", PUNCT_LABELS, {lab: lab for lab in PUNCT_LABELS}),
    # IWSLT 2012 / punctuator2: ! ; -> PERIOD, : and dashes -> COMMA, quotes dropped.
    "iwslt4": _label_set(
        "iwslt4",
        ("COMMA", "PERIOD", "QUESTION"),
        {
            "COMMA": "COMMA",
            "PERIOD": "PERIOD",
            "QUESTION": "QUESTION",
            "EXCLAMATION": "PERIOD",
            "SEMICOLON": "PERIOD",
            "COLON": "COMMA",
            "DASH": "COMMA",
            "ELLIPSIS": "PERIOD",
        },
        exclusive=True,
    ),
    # Moró & Szaszák: comma and period only (? ! ; ... count as sentence ends).
    "moro2": _label_set(
        "moro2",
        ("COMMA", "PERIOD"),
        {
            "COMMA": "COMMA",
            "COLON": "COMMA",
            "DASH": "COMMA",
            "SEMICOLON": "PERIOD",
            "PERIOD": "PERIOD",
            "QUESTION": "PERIOD",
            "EXCLAMATION": "PERIOD",
            "ELLIPSIS": "PERIOD",
        },
        exclusive=True,
    ),
    # Moró & Szaszák 2017 section 3.2 as written: ? ! ; : -> PERIOD; a closing quote and a
    # dash -> COMMA; an opening quote is removed (the ellipsis, unnamed there, -> PERIOD).
    "moro2_paper": _label_set(
        "moro2_paper",
        ("COMMA", "PERIOD"),
        {
            "COMMA": "COMMA",
            "DASH": "COMMA",
            "QUOTE": "COMMA",
            "PERIOD": "PERIOD",
            "QUESTION": "PERIOD",
            "EXCLAMATION": "PERIOD",
            "SEMICOLON": "PERIOD",
            "COLON": "PERIOD",
            "ELLIPSIS": "PERIOD",
        },
        exclusive=True,
    ),
    # Nagy et al. 2021 (Hungarian, section 3.1): ! ; -> PERIOD, : and quotation marks ->
    # COMMA, a spaced dash -> COMMA; other marks (ellipsis, dashes glued to a word) are
    # dropped. Deviation: an opening quote attaches to the following word here, so it
    # is dropped (Nagy's token stream gives the preceding word a COMMA).
    "nagy4": _label_set(
        "nagy4",
        ("COMMA", "PERIOD", "QUESTION"),
        {
            "COMMA": "COMMA",
            "PERIOD": "PERIOD",
            "QUESTION": "QUESTION",
            "EXCLAMATION": "PERIOD",
            "SEMICOLON": "PERIOD",
            "COLON": "COMMA",
            "QUOTE": "COMMA",
            "DASH": "COMMA",
        },
        exclusive=True,
    ),
}


def get_label_set(name: str) -> LabelSet:
    """The label set called ``name`` (full13, iwslt4, moro2, moro2_paper, nagy4)."""
    if name not in LABEL_SETS:
        raise KeyError(f"unknown label set {name!r} (known: {', '.join(LABEL_SETS)})")
    return LABEL_SETS[name]
