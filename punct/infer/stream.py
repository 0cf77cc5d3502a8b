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
from typing import NamedTuple

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
from punct.labels import CAP_LABELS, LabelSet, apply_cap
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
    return [InputWord(w, None, None, None, flag)
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


@dataclass
class Segment:
    """Restored words of one document, in order; a long document comes in several."""

    doc_id: str
    rows: list[WordRow]
    first: bool = True
    last: bool = True
    #: the model's probabilities for the rows (None where there are none)
    scores: RowScores | None = field(default=None, repr=False)

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


class Restorer:
    """Punctuates and cases documents with a trained model (see the module docstring)."""

    def __init__(self, model: PunctModel, featurizer: Featurizer, label_set: LabelSet,
                 settings: DecodeSettings, device: torch.device | str = "cpu",
                 batch_words: int = 2048, block_words: int = 512,
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
            if any(w.nonspeech for w in words):
                speech = [i for i, w in enumerate(words) if not w.nonspeech]
                words = [words[i] for i in speech]
                lo, hi = _speech_range(speech, lo, hi)
            speech_of.append(speech)
            if not words:
                continue
            n = len(words)
            # None -> NaN (numpy's float conversion); one list per column
            pauses = np.array([w.pause_after for w in words], dtype=np.float32)
            times = np.empty((n, 2), dtype=np.float64)
            times[:, 0] = [w.start for w in words]
            times[:, 1] = [w.end for w in words]
            unit.seq = WordSeq(unit.doc_id, [w.word.lower() for w in words], pauses,
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
        """The rows of a decoded unit's own words (``speech``: the indices of its speech
        words, None: all), with their probabilities."""
        lo, hi = unit.keep
        seq = unit.seq
        if seq is None:  # only non-speech tokens
            rows = [_nonspeech_row(unit, i) for i in range(lo, hi)]
            return Segment(unit.doc_id, rows, unit.first, unit.last)
        if chosen is None or caps is None or pred is None:
            raise RuntimeError("a unit with speech words was not decoded")
        k0, k1 = _speech_range(speech, lo, hi)  # positions of its own words in ``seq``
        g0, g1 = seq.offset + k0, seq.offset + k1
        unit_caps = [CAP_LABELS[c] for c in caps[g0:g1].tolist()]
        unit_marks = chosen[g0:g1]
        doc_id, doc_start, words = unit.doc_id, unit.doc_start, unit.words
        rows: list[WordRow] = []
        for i in range(lo, hi):
            w = words[i]
            if w.nonspeech:
                rows.append(_nonspeech_row(unit, i))
                continue
            k = i - lo if speech is None else bisect_left(speech, i) - k0
            cap = unit_caps[k]
            form = w.word if is_passthrough(w.word) else apply_cap(w.word, cap)
            rows.append(WordRow(doc_id, doc_start + i, w.word.lower(), form, unit_marks[k],
                                cap, w.start, w.end, w.pause_after))
        self.words_done += k1 - k0
        where = None if speech is None else [i - lo for i in speech[k0:k1]]
        scores = RowScores(self.label_set.labels, pred.punct[g0:g1].copy(), len(rows), where)
        return Segment(doc_id, rows, unit.first, unit.last, scores)


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
