"""Tolerant word splitting for ``restore``: symbols the label set does not know pass through.

Training corpora are parsed strictly (``punct.labels.parse_text`` stops at an unknown mark
with file:line). Text given to ``restore`` is not a corpus: an emoji, a CJK or Arabic
sign, a maths symbol or a URL must come out as it went in. ``split_words`` therefore

- splits on white space and strips the known punctuation marks (``MARK_CHARS``) from
  both edges of a token: they are predicted again;
- keeps everything else. A token holding a *foreign symbol* (neither a letter, digit,
  combining mark, apostrophe nor a known mark) is a *pass-through word*: it keeps its
  exact surface form, which the restorer writes unchanged (no re-casing), while the
  model sees it lower-cased like any other word;
- counts the pass-through words in the active ``SymbolTally`` (``tally()``), which the
  command reports on stderr.

Non-speech tokens of the active map (``tally(nonspeech=...)``, else the default map of
``punct.data.nonspeech``: ``<breath>``, ``[noise]``) are kept exactly as written, even
with marks glued to them stripped off (``<breath>,`` -> ``<breath>``), and counted apart:
the engine passes them through at their position without showing them to the model.
Unintelligible tokens (``(())``, ``<unk>``) are words like any other.

Inside a ``cased_input()`` block ordinary words keep the case they were written in (and a
dotted abbreviation its final period: ``U.S.``), for ``punct.infer.casing`` (keep-case),
which lower-cases them before the model sees them.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from punct.data.nonspeech import NonSpeechMap, load_nonspeech_map
from punct.labels import MARK_CHARS, strip_edge_marks

_ACTIVE: contextvars.ContextVar[SymbolTally | None] = contextvars.ContextVar(
    "punct_symbol_tally", default=None)
_CASED: contextvars.ContextVar[bool] = contextvars.ContextVar("punct_cased_input",
                                                              default=False)


@dataclass
class SymbolTally:
    """Pass-through words seen while a ``tally()`` block is active."""

    words: int = 0
    symbols: int = 0
    examples: list[str] = field(default_factory=list)
    nonspeech: int = 0
    nonspeech_examples: list[str] = field(default_factory=list)
    nonspeech_map: NonSpeechMap = field(default_factory=load_nonspeech_map)
    overlaps: int = 0  # words whose timings overlap the word before (pause set to 0)

    def add(self, word: str) -> None:
        self.words += 1
        self.symbols += sum(1 for ch in word if is_foreign(ch))
        if len(self.examples) < 3 and word not in self.examples:
            self.examples.append(word)

    def add_nonspeech(self, token: str) -> None:
        self.nonspeech += 1
        if len(self.nonspeech_examples) < 3 and token not in self.nonspeech_examples:
            self.nonspeech_examples.append(token)

    def merge(self, other: SymbolTally) -> None:
        """Add ``other``'s counts (examples up to three of each kind)."""
        self.words += other.words
        self.symbols += other.symbols
        self.nonspeech += other.nonspeech
        self.overlaps += other.overlaps
        for mine, theirs in ((self.examples, other.examples),
                             (self.nonspeech_examples, other.nonspeech_examples)):
            for ex in theirs:
                if len(mine) < 3 and ex not in mine:
                    mine.append(ex)

    def message(self) -> str:
        """One line for stderr (empty when nothing passed through)."""
        parts = []
        if self.words:
            shown = ", ".join(repr(w) for w in self.examples)
            parts.append(f"{self.words} words with {self.symbols} symbols outside the label "
                         f"set passed through unchanged (e.g. {shown})")
        if self.nonspeech:
            shown = ", ".join(repr(w) for w in self.nonspeech_examples)
            parts.append(f"{self.nonspeech} non-speech tokens ({self.nonspeech_map.name} map) "
                         f"passed through, not punctuated (e.g. {shown})")
        return "; ".join(parts)


@contextlib.contextmanager
def tally(nonspeech: NonSpeechMap | str | None = None) -> Iterator[SymbolTally]:
    """Count pass-through words split inside this block (also inside lazy readers
    consumed within it); ``nonspeech`` (a map, a shipped name or a path; None: the
    default map) is the map of non-speech tokens in force inside it."""
    counter = SymbolTally(nonspeech_map=load_nonspeech_map(nonspeech))
    token = _ACTIVE.set(counter)
    try:
        yield counter
    finally:
        _ACTIVE.reset(token)


@contextlib.contextmanager
def cased_input() -> Iterator[None]:
    """Words split inside this block keep their case (see the module docstring)."""
    token = _CASED.set(True)
    try:
        yield
    finally:
        _CASED.reset(token)


def is_dotted_abbreviation(core: str) -> bool:
    """``U.S``, ``e.g``, ``Ph.D``: letters with a period between them (no final period)."""
    parts = core.split(".")
    return len(parts) >= 2 and all(p and p.isalpha() for p in parts)


def is_foreign(ch: str) -> bool:
    """A character that is neither part of a word nor a known punctuation mark."""
    if ch in MARK_CHARS or ch in "'’‘ʼ":
        return False
    return unicodedata.category(ch)[0] not in "LNM"


def is_passthrough(word: str) -> bool:
    """Whether ``word`` holds a foreign symbol (and so keeps its exact form). ASCII
    letters and digits (most words) are never foreign; other forms are looked at once
    (cached: words repeat)."""
    if word.isascii() and word.isalnum():
        return False
    return _holds_foreign(word)


@functools.lru_cache(maxsize=1 << 16)
def _holds_foreign(word: str) -> bool:
    return any(is_foreign(ch) for ch in word)


def active_map() -> NonSpeechMap:
    """The non-speech map of the active ``tally()`` block (the default map outside one)."""
    counter = _ACTIVE.get()
    return counter.nonspeech_map if counter is not None else load_nonspeech_map()


def count_overlap() -> int:
    """Count one overlapping word in the active ``tally()`` block; return how many it has
    seen (1 outside a block, where every overlap is reported)."""
    counter = _ACTIVE.get()
    if counter is None:
        return 1
    counter.overlaps += 1
    return counter.overlaps


def is_nonspeech_word(word: str) -> bool:
    """Whether a split word is a non-speech token of the active map."""
    return active_map().is_nonspeech(word)


def split_words(text: str) -> list[str]:
    """Words of ``text`` for restoring: known marks stripped from token edges, ordinary
    words lower-cased (kept as written inside ``cased_input()``), pass-through words
    (foreign symbols) and non-speech tokens kept exactly."""
    return split_tokens(text)[0]


_SKIP, _NONSPEECH, _PASSTHROUGH, _WORD = range(4)
_SPLIT_CACHE_SIZE = 1 << 17
"""Tokens whose split ``split_tokens`` remembers per non-speech map and cased state (a
corpus' vocabulary; the table starts afresh when full). The tables live on the map
(``NonSpeechMap.splits``), so they go when the map goes."""


def _split_one(token: str, ns_map: NonSpeechMap, cased: bool) -> tuple[int, str]:
    """What ``split_tokens`` makes of one white-space token: its kind and its word."""
    # no mark is a letter or digit: a token of those alone (most) has none to strip
    core, trail = (token, "") if token.isalnum() else strip_edge_marks(token)[1:]
    whole = ns_map.is_nonspeech(token)
    if whole or (core and core != token and ns_map.is_nonspeech(core)):
        return _NONSPEECH, token if whole else core
    if not core:
        return _SKIP, ""
    if is_passthrough(core):
        return _PASSTHROUGH, core
    if cased:
        dot = trail.startswith(".") and is_dotted_abbreviation(core)
        return _WORD, core + "." if dot else core
    return _WORD, core.lower()


def _split_table(ns_map: NonSpeechMap, cased: bool) -> dict[str, tuple[int, str]]:
    """The remembered splits under ``ns_map`` and ``cased``."""
    return ns_map.splits.setdefault(cased, {})


def split_tokens(text: str) -> tuple[list[str], list[bool]]:
    """``split_words`` of ``text`` and, for each word, whether it is a non-speech token
    of the active map (so that a reader need not ask again). Each distinct token is
    split once (``_split_one``); the tally still counts every occurrence."""
    return token_splitter()(text)


def token_splitter() -> Callable[[str], tuple[list[str], list[bool]]]:
    """``split_tokens`` bound to the tally, the non-speech map and the cased state in
    force now: for a reader that splits many short texts (a CTM's words, one by one)
    without looking them up each time. Call it inside the blocks it should follow."""
    counter = _ACTIVE.get()
    ns_map = active_map()
    cased = _CASED.get()
    table = _split_table(ns_map, cased)

    def split(text: str) -> tuple[list[str], list[bool]]:
        out: list[str] = []
        flags: list[bool] = []
        for token in text.split():
            hit = table.get(token)
            if hit is None:
                if len(table) >= _SPLIT_CACHE_SIZE:
                    table.clear()
                hit = table[token] = _split_one(token, ns_map, cased)
            kind, word = hit
            if kind == _WORD:  # most tokens
                out.append(word)
                flags.append(False)
            elif kind == _PASSTHROUGH:
                out.append(word)
                flags.append(False)
                if counter is not None:
                    counter.add(word)
            elif kind == _NONSPEECH:
                out.append(word)
                flags.append(True)
                if counter is not None:
                    counter.add_nonspeech(word)
        return out, flags

    return split
