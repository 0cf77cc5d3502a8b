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
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from punct.engine.symbols import is_dotted_abbreviation, is_passthrough
from punct.infer.stream import Document, InputWord, Segment, SegmentColumns
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
        self.add_counts(case_counts(word))

    def add_counts(self, counts: tuple[int, int, int]) -> None:
        """Add one word's ``case_counts``."""
        self.capital += counts[0]
        self.long_words += counts[1]
        self.all_caps += counts[2]

    @property
    def cased(self) -> bool:
        return self.capital > 0 and 2 * self.all_caps < self.long_words


def case_counts(word: str) -> tuple[int, int, int]:
    """What ``word`` adds to ``CaseStats``: (has a capital, has two or more letters, has
    two or more letters all capitals)."""
    if word.isascii() and word.isalpha() and word.islower():  # most words
        return 0, int(len(word) >= 2), 0
    letters = _cased_letters(word)
    long_word = len(letters) >= 2
    return (int(any(ch.isupper() for ch in letters)), int(long_word),
            int(long_word and all(ch.isupper() for ch in letters)))


def _model_word(word: str) -> str:
    """The word as the model sees it: lower-cased, an abbreviation's final period off."""
    if word.endswith(".") and is_dotted_abbreviation(word[:-1]):
        word = word[:-1]
    return word.lower()


class _FormFacts(NamedTuple):
    """What keep-case needs of a written form (found once per distinct form)."""

    passthrough: bool  # keeps its form anyway (``punct.engine.symbols``)
    plain: str  # as the model sees it (``_model_word``)
    marked: bool  # ``marked_case``
    counts: tuple[int, int, int]  # ``case_counts``


def _form_facts(form: str) -> _FormFacts:
    if is_passthrough(form):
        return _FormFacts(True, form, False, (0, 0, 0))
    return _FormFacts(False, _model_word(form), marked_case(form), case_counts(form))


@dataclass
class _DocForms:
    """A document's words between the reader and the restored segments: ``read`` words
    handed to the engine, ``done`` restored, the kept forms (document index, form) of
    those not yet restored."""

    doc_id: str
    read: int = 0
    done: int = 0
    kept: deque[tuple[int, str]] = field(default_factory=deque)


class CaseKeeper:
    """Keep-case around the engine: ``keep`` True (always), None (when already cased)."""

    FACTS_LIMIT = 1 << 17  # distinct forms remembered (the table starts afresh when full)

    def __init__(self, keep: bool | None = None):
        self.keep = keep
        self.stats = CaseStats()
        self.documents_kept = 0  # documents restored with keep-case
        self._docs: deque[_DocForms] = deque()  # documents read and not yet restored
        self._facts: dict[str, _FormFacts] = {}

    def documents(self, docs: Iterable[Document]) -> Iterator[Document]:
        """``docs`` with lower-cased words; the kept forms wait for ``segments``."""
        for doc in docs:
            entry = _DocForms(doc.doc_id)
            self._docs.append(entry)
            words: Iterable[InputWord] = self._words(doc, entry)
            if isinstance(doc.words, list):  # read already (a line): a list again, which
                words = list(words)  # the restorer cuts into units by slices
            yield Document(doc.doc_id, words, doc.lang)

    def _facts_of(self, form: str) -> _FormFacts:
        """``_form_facts`` of ``form``, remembered (the first time a form is met)."""
        if len(self._facts) >= self.FACTS_LIMIT:
            self._facts.clear()
        facts = self._facts[form] = _form_facts(form)
        return facts

    def _words(self, doc: Document, entry: _DocForms) -> Iterator[InputWord]:
        words = iter(doc.words)
        head = list(itertools.islice(words, SAMPLE_WORDS)) if self.keep is None else []
        known = self._facts  # (looked up inline: a call per word is a third of the time)
        for w in head:
            if not w.nonspeech:
                facts = known.get(w.word) or self._facts_of(w.word)
                if not facts.passthrough:
                    self.stats.add_counts(facts.counts)
        keep = self.stats.cased if self.keep is None else self.keep
        self.documents_kept += keep
        kept = entry.kept
        for k, w in enumerate(itertools.chain(head, words), 1):
            entry.read = k
            if w.nonspeech:
                yield w
                continue
            facts = known.get(w.word) or self._facts_of(w.word)
            if facts.passthrough:
                yield w
                continue
            if keep and facts.marked:
                kept.append((k - 1, w.word))
            yield w if facts.plain == w.word else InputWord(facts.plain, w.start, w.end,
                                                              w.pause_after)

    def segments(self, segments: Iterable[Segment]) -> Iterator[Segment]:
        """The engine's segments with the kept forms put back."""
        for seg in segments:
            yield self._restore(seg)

    def _restore(self, seg: Segment) -> Segment:
        if not self._docs:
            raise RuntimeError(f"keep-case: no input word for segment of {seg.doc_id!r}")
        entry = self._docs[0]
        n = len(seg)
        columns = seg.columns
        if columns is None:
            out = Segment(seg.doc_id, [self._restore_row(entry, row) for row in seg.rows],
                          seg.first, seg.last, seg.scores)
        else:
            self._check(entry, seg.doc_id, columns.doc_start, n)
            entry.done += n
            out = self._restore_columns(entry, seg, columns)
        if seg.last:
            if entry.done != entry.read:
                raise RuntimeError(f"keep-case: words {entry.done}..{entry.read - 1} of "
                                   f"{entry.doc_id!r} were read but never restored")
            self._docs.popleft()
        return out

    @staticmethod
    def _check(entry: _DocForms, doc_id: str, start: int, n: int) -> None:
        """Rows ``start .. start + n - 1`` of ``doc_id`` must come next."""
        if (doc_id, start) != (entry.doc_id, entry.done):
            raise RuntimeError(f"keep-case: row {start} of {doc_id!r} came out where word "
                               f"{entry.done} of {entry.doc_id!r} was expected")
        if start + n > entry.read:
            raise RuntimeError(f"keep-case: no input word for row {entry.read} of {doc_id!r}")

    def _restore_row(self, entry: _DocForms, row: WordRow) -> WordRow:
        self._check(entry, row.utt_id, row.idx, 1)
        entry.done += 1
        kept = entry.kept
        if not kept or kept[0][0] != row.idx:
            return row
        return replace(row, **_kept_fields(kept.popleft()[1], row.punct))

    @staticmethod
    def _restore_columns(entry: _DocForms, seg: Segment, columns: SegmentColumns
                         ) -> Segment:
        kept, start = entry.kept, columns.doc_start
        if not kept or kept[0][0] >= entry.done:  # no kept form among these words
            return seg
        words, forms, caps = list(columns.words), list(columns.forms), list(columns.caps)
        while kept and kept[0][0] < entry.done:
            index, form = kept.popleft()
            i = index - start
            fields = _kept_fields(form, columns.punct[i])
            words[i], forms[i], caps[i] = fields["word"], fields["form"], fields["cap"]
        return Segment(seg.doc_id, None, seg.first, seg.last, seg.scores,
                       replace(columns, words=words, forms=forms, caps=caps))


def _kept_fields(form: str, punct: tuple[str, ...]) -> dict[str, str]:
    """A kept form's row fields: a final period gives way to a PERIOD mark."""
    if form.endswith(".") and "PERIOD" in punct:
        form = form[:-1]
    return {"word": form.lower(), "form": form, "cap": cap_label(form)}
