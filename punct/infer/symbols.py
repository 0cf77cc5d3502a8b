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
"""

from __future__ import annotations

import contextlib
import contextvars
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field

from punct.labels import MARK_CHARS

_ACTIVE: contextvars.ContextVar[SymbolTally | None] = contextvars.ContextVar(
    "punct_symbol_tally", default=None)


@dataclass
class SymbolTally:
    """Pass-through words seen while a ``tally()`` block is active."""

    words: int = 0
    symbols: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, word: str) -> None:
        self.words += 1
        self.symbols += sum(1 for ch in word if is_foreign(ch))
        if len(self.examples) < 3 and word not in self.examples:
            self.examples.append(word)

    def message(self) -> str:
        """One line for stderr (empty when nothing passed through)."""
        if not self.words:
            return ""
        shown = ", ".join(repr(w) for w in self.examples)
        return (f"{self.words} words with {self.symbols} symbols outside the label set "
                f"passed through unchanged (e.g. {shown})")


@contextlib.contextmanager
def tally() -> Iterator[SymbolTally]:
    """Count pass-through words split inside this block (also inside lazy readers
    consumed within it)."""
    counter = SymbolTally()
    token = _ACTIVE.set(counter)
    try:
        yield counter
    finally:
        _ACTIVE.reset(token)


def is_foreign(ch: str) -> bool:
    """A character that is neither part of a word nor a known punctuation mark."""
    if ch in MARK_CHARS or ch in "'’‘ʼ":
        return False
    return unicodedata.category(ch)[0] not in "LNM"


def is_passthrough(word: str) -> bool:
    """Whether ``word`` holds a foreign symbol (and so keeps its exact form)."""
    return any(is_foreign(ch) for ch in word)


def _strip_marks(token: str) -> str:
    i, j = 0, len(token)
    while i < j and token[i] in MARK_CHARS:
        i += 1
    while j > i and token[j - 1] in MARK_CHARS:
        j -= 1
    return token[i:j]


def split_words(text: str) -> list[str]:
    """Words of ``text`` for restoring: known marks stripped from token edges, ordinary
    words lower-cased, pass-through words (foreign symbols) kept exactly."""
    out: list[str] = []
    counter = _ACTIVE.get()
    for token in text.split():
        core = _strip_marks(token)
        if not core:
            continue
        if is_passthrough(core):
            out.append(core)
            if counter is not None:
                counter.add(core)
        else:
            out.append(core.lower())
    return out
