"""Streaming restoration: unbounded input in, restored segments out, bounded memory.

Input is a stream of ``Document`` objects whose words are themselves an iterator, so
neither the number of documents nor the length of one document is bounded. The
``Restorer`` collects *units* (a whole short document, or one block of a long one) until
``batch_words`` words wait, decodes them together with the shared engine
(``predict_words``: sliding windows, aggregation, batching across windows and
documents) and yields ``Segment`` objects in input order.

A document longer than ``block_words + context_words`` is cut into blocks of
``block_words`` words; each block is decoded with up to ``context_words`` words of the
document on either side (read ahead, or kept from the previous block), and only the
block's own words are kept. Memory is therefore bounded by about ``batch_words +
block_words + 2 * context_words`` words, and a word leaves the engine at most
``block_words + context_words`` words (plus one batch) after it was read.

Non-speech tokens (``InputWord.nonspeech``: ``<breath>``, ``[noise]`` of the active map,
``punct.engine.symbols``) travel with the words but are not shown to the model: each
comes out at its position as a row of its own, written exactly as it came in, with no
mark and no capital; the words around it are punctuated as if it were not there.

The document rules (``punct.engine.doc_rules``: paired quotes, a capital after a sentence
end, a final mark at the end) hold across blocks: each block starts in the state the
previous one ended in, and only the last block must end with a final mark.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import torch

from punct.engine.constraints import Edges
from punct.engine.decode import (
    DecodeSettings,
    MarkSets,
    WordPredictions,
    decide,
    predict_words,
)
from punct.engine.symbols import active_map, is_passthrough, split_tokens
from punct.errors import PunctInputError
from punct.labels import CAP_LABELS, LabelSet, apply_cap, written
from punct.models.base import Featurizer, PunctModel, WordSeq
from punct.wordtable import WordRow


class InputWord(NamedTuple):
    """One input word: lower-cased, marks stripped; times in seconds when known. A word
    holding symbols outside the label set keeps its exact form (``punct.engine.symbols``).
    (A named tuple: one is made per input word, three times faster than a frozen
    dataclass.)"""

    word: str
    start: float | None = None
    end: float | None = None
    pause_after: float | None = None
    nonspeech: bool = False  # passed through, not punctuated (``punct.data.nonspeech``)


def plain_words(words: Iterable[str]) -> list[InputWord]:
    """Untimed input words, non-speech tokens of the active map flagged."""
    is_nonspeech = active_map().is_nonspeech
    return [InputWord(w, None, None, None, is_nonspeech(w)) for w in words]


def text_input_words(text: str) -> list[InputWord]:
    """The untimed input words of a text (``split_tokens``: each word classified once)."""
    words, nonspeech = split_tokens(text)
    # tuple.__new__ makes the same named tuple without the generated __new__'s call
    # (a third of the time of this function, which runs once per input word)
    new = tuple.__new__
    return [new(InputWord, (w, None, None, None, flag))
            for w, flag in zip(words, nonspeech, strict=True)]


@dataclass
class Document:
    """A document (a line of text, a CTM recording, a TextGrid, a JSONL record)."""

    doc_id: str
    words: Iterable[InputWord]
    lang: str | None = None


@dataclass(frozen=True, eq=False)
class RowScores:
    """The model's probability of every mark label for the rows of a segment: ``values``
    (speech rows, labels) in row order; ``speech``: where those rows are among the
    segment's ``n_rows`` rows (None: all of them; a non-speech token's row has none).
    Equal when they hold the same numbers (so segments compare as they did with lists)."""

    labels: tuple[str, ...]
    values: np.ndarray
    n_rows: int
    speech: list[int] | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RowScores):
            return NotImplemented
        return ((self.labels, self.n_rows, self.speech)
                == (other.labels, other.n_rows, other.speech)
                and np.array_equal(self.values, other.values, equal_nan=True))

    __hash__ = None  # type: ignore[assignment]  # an array inside: not hashable

    def dicts(self) -> list[dict[str, float] | None]:
        """Per row, label -> probability (None for a non-speech token's row)."""
        per_row: list[dict[str, float] | None] = [
            dict(zip(self.labels, v, strict=True)) for v in self.values.tolist()]
        if self.speech is None:
            return per_row
        out: list[dict[str, float] | None] = [None] * self.n_rows
        for pos, scores in zip(self.speech, per_row, strict=True):
            out[pos] = scores
        return out


@dataclass(eq=False)
class SegmentColumns:
    """The restored words of a segment as columns, one list per ``WordRow`` field (the
    rows are made only for the writers that read them): the words ``doc_start ..`` of
    their document; ``inputs`` are the input words (their times)."""

    doc_start: int
    words: list[str]  # lower-cased
    forms: list[str]
    punct: list[tuple[str, ...]]
    caps: list[str]
    inputs: Sequence[InputWord]

    def rows(self, doc_id: str) -> list[WordRow]:
        """The ``WordRow`` of every word."""
        return [WordRow(doc_id, i, word, form, punct, cap, w.start, w.end, w.pause_after)
                for i, word, form, punct, cap, w in zip(
                    range(self.doc_start, self.doc_start + len(self.words)), self.words,
                    self.forms, self.punct, self.caps, self.inputs, strict=True)]


class Segment:
    """Restored words of one document, in order; a long document comes in several.

    Made from rows, or from columns (``SegmentColumns``, the restorer's: the text writers
    read the columns, and the rows are made on first use of ``rows``)."""

    def __init__(self, doc_id: str, rows: list[WordRow] | None = None, first: bool = True,
                 last: bool = True, scores: RowScores | None = None,
                 columns: SegmentColumns | None = None):
        if (rows is None) == (columns is None):
            raise ValueError("a segment is made of rows or of columns (one of the two)")
        self.doc_id = doc_id
        self.first = first
        self.last = last
        #: the model's probabilities for the rows (None where there are none)
        self.scores = scores
        self._rows = rows
        self._columns = columns

    @property
    def rows(self) -> list[WordRow]:
        """One ``WordRow`` per word (made from the columns on first use; from then on the
        rows are the segment: a change to them is what the writers see)."""
        if self._rows is None:
            assert self._columns is not None
            self._rows = self._columns.rows(self.doc_id)
            self._columns = None
        return self._rows

    @rows.setter
    def rows(self, rows: list[WordRow]) -> None:
        self._rows, self._columns = rows, None

    @property
    def columns(self) -> SegmentColumns | None:
        """The columns the segment is made of (None: made of rows, or its rows were read)."""
        return self._columns

    def replace(self, **changes: Any) -> Segment:
        """A copy with ``changes`` (``doc_id``, ``rows``, ``first``, ``last``, ``scores``),
        as ``dataclasses.replace`` made of the segment when it was a dataclass."""
        unknown = set(changes) - {"doc_id", "rows", "first", "last", "scores"}
        if unknown:
            raise TypeError(f"Segment has no field {sorted(unknown)}")
        rows = changes.pop("rows", None)
        fields = {"doc_id": self.doc_id, "first": self.first, "last": self.last,
                  "scores": self.scores, **changes}
        if rows is not None or self._columns is None:
            return Segment(rows=self.rows if rows is None else rows, **fields)
        return Segment(columns=self._columns, **fields)

    def __len__(self) -> int:
        return len(self._rows if self._columns is None else self._columns.words)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Segment):
            return NotImplemented
        return ((self.doc_id, self.first, self.last, self.rows, self.scores)
                == (other.doc_id, other.first, other.last, other.rows, other.scores))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"Segment(doc_id={self.doc_id!r}, words={len(self)}, first={self.first}, "
                f"last={self.last})")

    def texts(self) -> list[str]:
        """Each word as written: its marks and its form (``punct.labels.written``)."""
        if self._columns is None:
            return [written(r.form, r.punct) for r in self.rows]
        cols = self._columns
        # most words have no mark: written as their form, without a call
        return [written(form, punct) if punct else form
                for form, punct in zip(cols.forms, cols.punct, strict=True)]

    @property
    def probs(self) -> list[dict[str, float] | None] | None:
        """Per row, the model's probability of every mark label (None for a non-speech
        token's row); None without scores. Made on each call (only the writers that show
        scores pay for the dictionaries): read it once."""
        return None if self.scores is None else self.scores.dicts()


@dataclass
class _Unit:
    doc_id: str
    words: list[InputWord]
    doc_start: int  # document index of words[0]
    keep: tuple[int, int]  # kept range inside ``words``
    first: bool
    last: bool
    lang: str | None = None
    seq: WordSeq | None = field(default=None, repr=False)


BATCH_WORDS = 2048
"""Words that wait before they are decoded together (``Restorer.batch_words``), at the
least; on CUDA enough for a whole decoding batch (``default_batch_words``)."""


def default_batch_words(settings: DecodeSettings, device: torch.device | str) -> int:
    """``BATCH_WORDS``, and on CUDA at least ``batch_size * window`` words: a window holds
    at most ``window`` words (a word has one piece or more), so that many words make at
    least a whole decoding batch of windows, however short the documents
    (``decode.gpu_batch_tokens`` makes a GPU's batches large: 2,048 words filled a
    tenth of nagy's 256 windows)."""
    if torch.device(device).type != "cuda":
        return BATCH_WORDS
    return max(BATCH_WORDS, settings.batch_size * settings.window)


class Restorer:
    """Punctuates and cases documents with a trained model (see the module docstring)."""

    def __init__(self, model: PunctModel, featurizer: Featurizer, label_set: LabelSet,
                 settings: DecodeSettings, device: torch.device | str = "cpu",
                 batch_words: int = BATCH_WORDS, block_words: int = 512,
                 context_words: int | None = None):
        if batch_words < 1 or block_words < 1:
            raise PunctInputError("batch_words and block_words must be >= 1")
        self.model = model
        self.featurizer = featurizer
        self.label_set = label_set
        self.settings = settings
        self.device = torch.device(device)
        self.batch_words = batch_words
        self.block_words = block_words
        # one window of context on each side: a window holds at most ``window`` words
        self.context_words = settings.window if context_words is None else context_words
        if self.context_words < 0:
            raise PunctInputError("context_words must be >= 0")
        self.seconds = 0.0
        self.words_done = 0
        self._carry: dict[str, int] = {}  # document rules' state at a block cut
        self._mark_sets = MarkSets(label_set.labels)  # each set put in order once
        self._forms = CasedForms()  # each cased form written once

    # -- public
    def restore(self, docs: Iterable[Document]) -> Iterator[Segment]:
        """Restore every document; segments come out in input order."""
        queue: list[_Unit] = []
        queued = 0
        for doc in docs:
            for unit in self._units(doc):
                queue.append(unit)
                queued += len(unit.words)
                if queued >= self.batch_words:
                    yield from self._flush(queue)
                    queue, queued = [], 0
        if queue:
            yield from self._flush(queue)

    # -- cutting documents into units
    def _units(self, doc: Document) -> Iterator[_Unit]:
        if isinstance(doc.words, list):  # read already (a line of text): cut by slices
            yield from self._list_units(doc, doc.words)
            return
        block, context = self.block_words, self.context_words
        buf: list[InputWord] = []
        buf_start = 0  # document index of buf[0]
        next_keep = 0  # first document index not yet handed out
        first = True
        for word in doc.words:
            buf.append(word)
            if buf_start + len(buf) - next_keep >= block + context:
                lo = next_keep - buf_start
                yield _Unit(doc.doc_id, list(buf), buf_start, (lo, lo + block), first, False,
                            doc.lang)
                first = False
                next_keep += block
                drop = next_keep - context - buf_start
                if drop > 0:
                    del buf[:drop]
                    buf_start += drop
        lo = next_keep - buf_start
        yield _Unit(doc.doc_id, buf, buf_start, (lo, len(buf)), first, True, doc.lang)

    def _list_units(self, doc: Document, words: list[InputWord]) -> Iterator[_Unit]:
        """``_units`` of a document whose words are a list: the same units, sliced."""
        block, context = self.block_words, self.context_words
        next_keep, first = 0, True
        while len(words) - next_keep >= block + context:
            start = max(0, next_keep - context)
            yield _Unit(doc.doc_id, words[start:next_keep + block + context], start,
                        (next_keep - start, next_keep - start + block), first, False, doc.lang)
            first = False
            next_keep += block
        start = max(0, next_keep - context)
        yield _Unit(doc.doc_id, words[start:], start, (next_keep - start, len(words) - start),
                    first, True, doc.lang)

    # -- decoding a batch of units
    def _flush(self, units: Sequence[_Unit]) -> Iterator[Segment]:
        n_labels = len(self.label_set.labels)
        seqs: list[WordSeq] = []
        offset = 0
        # per unit: the indices of its speech words (None: all its words, the usual case)
        speech_of: list[list[int] | None] = []
        spans: list[tuple[int, int, bool, bool]] = []  # per seq: own words, document edges
        for unit in units:
            words = unit.words
            lo, hi = unit.keep
            speech = None
            # the input words' fields as columns (word, start, end, pause_after, nonspeech)
            columns = list(zip(*words, strict=True))
            if columns and any(columns[4]):
                speech = [i for i, flag in enumerate(columns[4]) if not flag]
                words = [words[i] for i in speech]
                lo, hi = _speech_range(speech, lo, hi)
                columns = list(zip(*words, strict=True))
            speech_of.append(speech)
            if not words:
                continue
            n = len(words)
            # None -> NaN (numpy's float conversion)
            pauses = np.array(columns[3], dtype=np.float32)
            times = np.empty((n, 2), dtype=np.float64)
            times[:, 0] = columns[1]
            times[:, 1] = columns[2]
            unit.seq = WordSeq(unit.doc_id, list(map(str.lower, columns[0])), pauses,
                               np.zeros((n, n_labels), dtype=np.float32),
                               np.zeros(n, dtype=np.int64), offset, unit.lang, times=times)
            seqs.append(unit.seq)
            spans.append((lo, hi, unit.first, unit.last))
            offset += n
        marks = caps = pred = None
        if seqs:
            st = self.settings
            pred = predict_words(self.model, self.featurizer, seqs, st.window, st.stride,
                                 st.batch_size, st.bf16, st.aggregate, self.device,
                                 exclusive=st.exclusive)
            self.seconds += pred.seconds
            marks, caps = decide(pred, seqs, self.label_set.labels, st.threshold,
                                 st.exclusive, st.combinations, st.constraints,
                                 Edges(spans, self._carry))
        chosen = None if marks is None else self._mark_sets.of_rows(marks)
        for unit, speech in zip(units, speech_of, strict=True):
            yield self._segment(unit, speech, chosen, caps, pred)
            unit.seq = None

    def _segment(self, unit: _Unit, speech: list[int] | None,
                 chosen: list[tuple[str, ...]] | None, caps: np.ndarray | None,
                 pred: WordPredictions | None) -> Segment:
        """The segment of a decoded unit's own words (``speech``: the indices of its speech
        words, None: all), with their probabilities: as columns, or as rows where
        non-speech tokens are among the words."""
        lo, hi = unit.keep
        seq = unit.seq
        if seq is None:  # only non-speech tokens
            rows = [_nonspeech_row(unit, i) for i in range(lo, hi)]
            return Segment(unit.doc_id, rows, unit.first, unit.last)
        if chosen is None or caps is None or pred is None:
            raise RuntimeError("a unit with speech words was not decoded")
        k0, k1 = _speech_range(speech, lo, hi)  # positions of its own words in ``seq``
        g0, g1 = seq.offset + k0, seq.offset + k1
        self.words_done += k1 - k0
        scores_of = pred.punct[g0:g1].copy()
        if speech is not None:  # non-speech tokens among the words: row by row
            rows = self._mixed_rows(unit, speech, k0, chosen[g0:g1], caps[g0:g1])
            where = [i - lo for i in speech[k0:k1]]
            scores = RowScores(self.label_set.labels, scores_of, len(rows), where)
            return Segment(unit.doc_id, rows, unit.first, unit.last, scores)
        inputs = unit.words[lo:hi]
        words = seq.words[k0:k1]  # lower-cased, as the model saw them
        forms = self._forms.of([w.word for w in inputs], caps[g0:g1])
        columns = SegmentColumns(unit.doc_start + lo, words, forms, chosen[g0:g1],
                                 [CAP_LABELS[c] for c in caps[g0:g1].tolist()], inputs)
        scores = RowScores(self.label_set.labels, scores_of, len(words))
        return Segment(unit.doc_id, None, unit.first, unit.last, scores, columns)

    def _mixed_rows(self, unit: _Unit, speech: list[int], k0: int,
                    marks: list[tuple[str, ...]], caps: np.ndarray) -> list[WordRow]:
        """The rows of a unit's own words when non-speech tokens are among them."""
        lo, hi = unit.keep
        doc_id, doc_start, words = unit.doc_id, unit.doc_start, unit.words
        cap_names = [CAP_LABELS[c] for c in caps.tolist()]
        rows: list[WordRow] = []
        for i in range(lo, hi):
            w = words[i]
            if w.nonspeech:
                rows.append(_nonspeech_row(unit, i))
                continue
            k = bisect_left(speech, i) - k0
            cap = cap_names[k]
            form = w.word if is_passthrough(w.word) else apply_cap(w.word, cap)
            rows.append(WordRow(doc_id, doc_start + i, w.word.lower(), form, marks[k],
                                cap, w.start, w.end, w.pause_after))
        return rows


class CasedForms:
    """Each word's written form under each capitalisation class, found once per (form,
    class): a pass-through word as it came, any other as ``apply_cap`` writes it."""

    def __init__(self, limit: int = 1 << 17):
        self.limit = limit  # forms remembered per class (the table starts afresh when full)
        self.known: list[dict[str, str]] = [{} for _ in CAP_LABELS]

    def of(self, words: Sequence[str], caps: np.ndarray) -> list[str]:
        """The written form of each word under its class (an index into ``CAP_LABELS``):
        a word without a capital (most words) as it is, the others looked up."""
        out = list(words)
        known = self.known
        where = np.flatnonzero(caps)
        for i, cap in zip(where.tolist(), caps[where].tolist(), strict=True):
            word = out[i]
            form = known[cap].get(word)
            if form is None:
                if len(known[cap]) >= self.limit:
                    known[cap].clear()
                form = known[cap][word] = (word if is_passthrough(word)
                                           else apply_cap(word, CAP_LABELS[cap]))
            out[i] = form
        return out


def _speech_range(speech: list[int] | None, lo: int, hi: int) -> tuple[int, int]:
    """The unit's words ``lo..hi`` as positions among its speech words (``speech``: their
    indices in order; None: every word is one)."""
    if speech is None:
        return lo, hi
    return bisect_left(speech, lo), bisect_left(speech, hi)


def _nonspeech_row(unit: _Unit, i: int) -> WordRow:
    """A non-speech token's row: written as it came, no mark, no capital."""
    w = unit.words[i]
    return WordRow(unit.doc_id, unit.doc_start + i, w.word.lower(), w.word, (), "O",
                   w.start, w.end, w.pause_after)
