"""The rules every restored document obeys, as a small finite-state machine.

Within one document (an utterance of a data dir, a restored document):

(a) paired marks: an opening quote (OPEN_QUOTE) is closed by a closing quote (QUOTE),
    an opening ``¿`` (OPEN_QUES) by a QUESTION, an opening ``¡`` (OPEN_EXCL) by an
    EXCLAMATION, before the sentence ends (on the word that ends it at the latest); none
    is opened again while it is open, and a closing quote needs an open one. A QUESTION
    or EXCLAMATION without its opening mark is allowed (English has none). A pair is
    checked only where the label set has both of its marks;
(b) a capital (FIRST_CAP or ALL_CAPS) on the first word of a document and on the word
    after a sentence end (PERIOD, QUESTION, EXCLAMATION), where the word has a cased
    letter (``1995`` starts a sentence without one);
(c) a sentence-final mark (PERIOD, QUESTION, EXCLAMATION or ELLIPSIS, as far as the label
    set has them) on the last word of a document, with every pair closed;
(d) no mark on a pass-through word (a word holding a symbol outside the label set: an
    emoji, a URL, ``punct.engine.symbols``; non-speech tokens never reach the model).
    Pass-through words are transparent to the other rules: ``Thanks. 🙂`` ends a
    document properly.

A document cut mid-stream (a block of a long restored document) starts in the state the
previous block ended in, and rule (c) waits for its last block.

The state is a small int: bit 0 an open quote, bit 1 an open ``¿``, bit 2 an open ``¡``,
bit 3 "a sentence has just ended" (set at the start of a document; never together with
an open pair). ``step`` moves it over one word's marks and names the rules broken.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from punct.labels import SENTENCE_END

QUOTE_OPEN, QUES_OPEN, EXCL_OPEN, ENDED = 1, 2, 4, 8
OPEN_BITS = QUOTE_OPEN | QUES_OPEN | EXCL_OPEN
DOC_START = ENDED
FINAL_MARKS: frozenset[str] = SENTENCE_END | {"ELLIPSIS"}
#: (state bit, opening mark, closing mark, violation name when left open)
PAIRS: tuple[tuple[int, str, str, str], ...] = (
    (QUOTE_OPEN, "OPEN_QUOTE", "QUOTE", "unclosed_quote"),
    (QUES_OPEN, "OPEN_QUES", "QUESTION", "unclosed_question"),
    (EXCL_OPEN, "OPEN_EXCL", "EXCLAMATION", "unclosed_exclamation"),
)
#: every kind of violation ``step`` and ``finish`` report, in a fixed order
VIOLATIONS: tuple[str, ...] = (
    "unclosed_quote", "unclosed_question", "unclosed_exclamation", "unopened_quote",
    "nested_open", "lowercase_start", "no_final_mark", "mark_on_passthrough",
)
#: the marks whose presence the machine looks at
RULE_MARKS: frozenset[str] = frozenset(
    {m for _, o, c, _ in PAIRS for m in (o, c)}) | FINAL_MARKS


@dataclass(frozen=True)
class DocRules:
    """The rules as they apply to one label set (pairs whose marks it has)."""

    pairs: tuple[tuple[int, str, str, str], ...]
    final: frozenset[str]  # the label set's sentence-final marks (empty: no rule (c))

    @classmethod
    def for_labels(cls, labels: Collection[str]) -> DocRules:
        pairs = tuple(p for p in PAIRS if p[1] in labels and p[2] in labels)
        return cls(pairs, FINAL_MARKS & frozenset(labels))

    def step(self, state: int, marks: Collection[str]) -> tuple[int, list[str]]:
        """The state after a word with ``marks`` (its cap is checked by ``needs_capital``)
        and the rules the marks break; after a break the machine goes on as if the
        offending mark were right (an unclosed pair is dropped at the sentence end)."""
        broken: list[str] = []
        open_bits = state & OPEN_BITS
        for bit, opening, _, _ in self.pairs:
            if opening in marks:
                if open_bits & bit:
                    broken.append("nested_open")
                open_bits |= bit
        for bit, _, closing, _ in self.pairs:
            if closing in marks:
                if bit == QUOTE_OPEN and not open_bits & bit:
                    broken.append("unopened_quote")
                open_bits &= ~bit
        if any(m in SENTENCE_END for m in marks):
            broken.extend(name for bit, _, _, name in self.pairs if open_bits & bit)
            return ENDED, broken
        return open_bits, broken

    def finish(self, state: int, last_marks: Collection[str] | None) -> list[str]:
        """Rules broken at the end of a document whose last (non-pass-through) word had
        ``last_marks`` (None: the document has no such word); ``state`` is the state
        after that word."""
        if last_marks is None:
            return []
        broken = [name for bit, _, _, name in self.pairs if state & bit]
        if self.final and not any(m in self.final for m in last_marks):
            broken.append("no_final_mark")
        return broken


def needs_capital(state: int, word: str) -> bool:
    """Whether ``word`` must be capitalised in ``state`` (rule (b))."""
    return bool(state & ENDED) and is_cased(word)


def is_cased(word: str) -> bool:
    """Whether ``word`` has a letter with an upper and a lower case."""
    return any(ch.isupper() or ch.islower() for ch in word)


def states() -> tuple[int, ...]:
    """Every reachable state: any set of open pairs, or a sentence just ended."""
    return (*range(OPEN_BITS + 1), ENDED)


def rule_marks(labels: Sequence[str]) -> tuple[str, ...]:
    """The marks of ``labels`` that the machine looks at, in label order."""
    return tuple(lab for lab in labels if lab in RULE_MARKS)
