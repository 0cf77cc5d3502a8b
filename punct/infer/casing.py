"""Keep what the user wrote: words with internal or all capitals keep their exact form.

*Marked case*: a word with a capital letter after its first letter (``USA``, ``iPhone``,
``U.S.``, ``McDonald``, ``X-Men``) is written out exactly as it came in; every other word
(``hello``, ``Hello``, ``I``) is cased by the model, and so are sentence starts. The
marks around a word are still the model's, except that a dotted abbreviation written
with its final period keeps it (``U.S.``), unless the model ends a sentence there (the
PERIOD mark is then that period: no ``U.S..``).

*Already cased* (the automatic default, ``keep=None``): a document is restored with
keep-case when the words seen so far -- the first ``SAMPLE_WORDS`` (1000) words of this
document and of every earlier one of the run -- are already cased: at least one has a
capital letter, and fewer than half of those with two or more letters are written all
in capitals. Lower-cased input has nothing to keep; an ALL-CAPS transcript (a
recogniser's) is not cased, and the model cases it. Pass-through words (emoji, URLs)
and non-speech tokens do not count; they keep their form anyway.

``CaseKeeper.documents`` wraps the readers' documents (their words split inside
``punct.engine.symbols.cased_input()``) and hands the engine the words lower-cased,
exactly as without keep-case, so the model's input does not change;
``CaseKeeper.segments`` puts the kept forms back into the restored rows, in order. A
form waits only while its word is inside the engine, so memory stays bounded.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from punct.engine.symbols import is_dotted_abbreviation, is_passthrough
from punct.infer.stream import Document, InputWord, Segment
from punct.labels import cap_label
from punct.wordtable import WordRow

SAMPLE_WORDS = 1000


def _cased_letters(word: str) -> list[str]:
    return [ch for ch in word if ch.isupper() or ch.islower()]


def marked_case(form: str) -> bool:
    """Whether ``form`` has a capital after its first letter (internal or all capitals)."""
    if form.islower():  # cased letters, none a capital (most words)
        return False
    return any(ch.isupper() for ch in _cased_letters(form)[1:])


@dataclass
class CaseStats:
    """Counts behind the *already cased* rule (module docstring)."""

    capital: int = 0  # words with a capital letter
    long_words: int = 0  # words with two or more letters
    all_caps: int = 0  # of those, written all in capitals

    def add(self, word: str) -> None:
        if word.isascii() and word.isalpha() and word.islower():  # most words
            self.long_words += len(word) >= 2
            return
        letters = _cased_letters(word)
        self.capital += any(ch.isupper() for ch in letters)
        if len(letters) >= 2:
            self.long_words += 1
            self.all_caps += all(ch.isupper() for ch in letters)

    @property
    def cased(self) -> bool:
        return self.capital > 0 and 2 * self.all_caps < self.long_words


def _model_word(word: str) -> str:
    """The word as the model sees it: lower-cased, an abbreviation's final period off."""
    if word.endswith(".") and is_dotted_abbreviation(word[:-1]):
        word = word[:-1]
    return word.lower()


class CaseKeeper:
    """Keep-case around the engine: ``keep`` True (always), None (when already cased)."""

    def __init__(self, keep: bool | None = None):
        self.keep = keep
        self.stats = CaseStats()
        self.documents_kept = 0  # documents restored with keep-case
        self._forms: deque[tuple[str, int, str | None]] = deque()  # (doc, index, kept form)

    def documents(self, docs: Iterable[Document]) -> Iterator[Document]:
        """``docs`` with lower-cased words; the kept forms wait for ``segments``."""
        for doc in docs:
            yield Document(doc.doc_id, self._words(doc), doc.lang)

    def _words(self, doc: Document) -> Iterator[InputWord]:
        words = iter(doc.words)
        head = list(itertools.islice(words, SAMPLE_WORDS)) if self.keep is None else []
        for w in head:
            if not (w.nonspeech or is_passthrough(w.word)):
                self.stats.add(w.word)
        keep = self.stats.cased if self.keep is None else self.keep
        self.documents_kept += keep
        forms = self._forms
        for k, w in enumerate(itertools.chain(head, words)):
            if w.nonspeech or is_passthrough(w.word):
                forms.append((doc.doc_id, k, None))
                yield w
                continue
            plain = _model_word(w.word)
            forms.append((doc.doc_id, k, w.word if keep and marked_case(w.word) else None))
            yield w if plain == w.word else InputWord(plain, w.start, w.end, w.pause_after)

    def segments(self, segments: Iterable[Segment]) -> Iterator[Segment]:
        """The engine's segments with the kept forms put back."""
        for seg in segments:
            yield replace(seg, rows=[self._restore(row) for row in seg.rows])

    def _restore(self, row: WordRow) -> WordRow:
        if not self._forms:
            raise RuntimeError(f"keep-case: no input word for row {row.idx} of {row.utt_id!r}")
        doc_id, index, form = self._forms.popleft()
        if (doc_id, index) != (row.utt_id, row.idx):
            raise RuntimeError(f"keep-case: row {row.idx} of {row.utt_id!r} came out where "
                               f"word {index} of {doc_id!r} was expected")
        if form is None:
            return row
        if form.endswith(".") and "PERIOD" in row.punct:
            form = form[:-1]
        return replace(row, word=form.lower(), form=form, cap=cap_label(form))
