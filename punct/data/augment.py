"""ASR-like word errors in training utterances (``train.augment``, Alam et al. 2020).

Each word of an utterance is deleted with probability ``del_rate``, else replaced with
probability ``sub_rate``; independently a word is inserted before it with probability
``ins_rate`` (never after the last word). With ``utt_rate`` below 1 only that share of
the utterances is edited in an epoch (drawn per utterance and epoch), the others stay
clean: the model sees both clean and ASR-like text. The draws of epoch e for an utterance come
from a generator seeded by (seed, e, utterance id), so an epoch's data does not depend
on the order, on the other utterances or on an interruption, and every epoch differs.

Labels (the canonical marks of the word table, before a label set's mapping):

- a substituted word keeps the replaced word's marks, capitalisation and timings;
- an inserted word gets no mark and capitalisation O;
- a deleted word's closing marks move to the word before it in the augmented utterance
  and its OPEN_* marks to the word after it (marks with no such word are dropped, e.g.
  the COMMA of a deleted first word); a deleted sentence-initial capitalised word gives
  FIRST_CAP to the next word when that word was O. One word of every utterance stays.

Pauses keep the one pause formula, ``pause_after(i) = start(i+1) - end(i)``:

- an inserted word sits at the start of the word it precedes, with no duration: the
  word before it keeps its pause, the inserted word's own pause is 0;
- deleting word k makes the previous word's pause ``pause(k-1) + duration(k) +
  pause(k)`` (the gap an ASR output shows there); when k was the last word, the previous
  word takes k's pause (the end-of-document pause).

Words without timings stay without.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from punct.config import AugmentSection
from punct.data.confusable import Neighbours
from punct.data.sequences import WordSeq, rows_to_seq
from punct.labels import OPENING_LABELS, SENTENCE_END, LabelSet, apply_cap
from punct.wordtable import WordRow

"""Marks after which the next word starts a sentence (for a deleted capitalised word)."""

STREAM = 0x61756731
"""Separates the augmentation draws from other draws seeded by ``train.seed``."""

DRAW_TRIES = 8
"""Draws for a substitute different from the word it replaces before giving up."""


@dataclass
class AugmentCounts:
    """Words in, and substitutions, deletions and insertions made."""

    words: int = 0
    sub: int = 0
    dele: int = 0
    ins: int = 0

    def add(self, other: AugmentCounts) -> None:
        self.words += other.words
        self.sub += other.sub
        self.dele += other.dele
        self.ins += other.ins

    def describe(self) -> str:
        n = max(self.words, 1)
        return (f"{self.sub} substituted ({self.sub / n:.3f}), {self.dele} deleted "
                f"({self.dele / n:.3f}), {self.ins} inserted ({self.ins / n:.3f}) of "
                f"{self.words} words")


def word_counts(utts: Iterable[Sequence[WordRow]]) -> dict[str, int]:
    """How often each word occurs (the unigram distribution of the training words)."""
    return dict(Counter(row.word for rows in utts for row in rows))


def utterance_rng(seed: int, epoch: int, utt_id: str) -> np.random.Generator:
    """The generator of one utterance in one epoch (independent of any other)."""
    return np.random.default_rng([seed, STREAM, epoch, zlib.crc32(utt_id.encode("utf-8"))])


class WordSampler:
    """Words drawn by their counts."""

    def __init__(self, counts: Mapping[str, int]):
        if not counts:
            raise ValueError("no words to draw from")
        self.words = sorted(counts, key=lambda w: (-counts[w], w))
        self.cum = np.cumsum([counts[w] for w in self.words])

    def draw(self, rng: np.random.Generator, avoid: str | None = None) -> str | None:
        """One word, not ``avoid`` (None when only ``avoid`` comes up)."""
        for _ in range(DRAW_TRIES):
            pick = int(np.searchsorted(self.cum, rng.integers(self.cum[-1]), side="right"))
            if self.words[pick] != avoid:
                return self.words[pick]
        return None


class _Word:
    """A word of the augmented utterance while it is built."""

    __slots__ = ("cap", "end", "form", "pause", "punct", "start", "word")

    def __init__(self, word: str, form: str, punct: list[str], cap: str,
                 start: float | None, end: float | None, pause: float | None):
        self.word, self.form, self.punct, self.cap = word, form, punct, cap
        self.start, self.end, self.pause = start, end, pause


def _merged_pause(prev: float | None, row: WordRow, last: bool) -> float | None:
    """The pause after the word before a deleted ``row`` (see the module docstring)."""
    if prev is None or row.pause_after is None:
        return prev
    if last:
        return row.pause_after
    duration = row.end - row.start if row.start is not None and row.end is not None else 0.0
    return round(prev + max(duration, 0.0) + row.pause_after, 3) + 0.0


class Augmenter:
    """Substitutions, deletions and insertions at the rates of ``options``.

    ``counts``: the training words and their counts (frequent words for substitutions
    and insertions); ``neighbours``: the confusable words of each training word (needed
    when ``options.sub_source`` is ``confusable``; a word without neighbours is replaced
    by a frequent word)."""

    def __init__(self, options: AugmentSection, counts: Mapping[str, int],
                 neighbours: Neighbours | None = None):
        if options.sub_source == "confusable" and neighbours is None:
            raise ValueError("sub_source confusable needs a neighbour table")
        self.options = options
        self.counts = counts
        self.frequent = WordSampler(counts)
        self.neighbours = neighbours if options.sub_source == "confusable" else None
        self._similar: dict[str, WordSampler | None] = {}

    def substitute(self, word: str, rng: np.random.Generator) -> str | None:
        """A word in place of ``word``: a confusable neighbour (drawn by training count)
        when the table has one, else a frequent word."""
        if self.neighbours is not None:
            if word not in self._similar:
                near = {w: max(self.counts.get(w, 0), 1) for w, _ in self.neighbours.get(word, ())}
                self._similar[word] = WordSampler(near) if near else None
            sampler = self._similar[word]
            if sampler is not None:
                return sampler.draw(rng, word)
        return self.frequent.draw(rng, word)

    def augment(self, rows: Sequence[WordRow], rng: np.random.Generator
                ) -> tuple[list[WordRow], AugmentCounts]:
        """The augmented rows of one utterance and the edits made (drawn from ``rng``)."""
        n = len(rows)
        opts = self.options
        if opts.utt_rate < 1.0 and rng.random() >= opts.utt_rate:  # no draw at 1: as before
            return list(rows), AugmentCounts(words=n)
        choice = rng.random(n)
        delete = (choice < opts.del_rate).tolist()
        substitute = ((choice >= opts.del_rate)
                      & (choice < opts.del_rate + opts.sub_rate)).tolist()
        insert = (rng.random(n) < opts.ins_rate).tolist()
        if delete and all(delete):
            delete[-1] = False  # one word stays
        return self.edit(rows, delete, substitute, insert, rng)

    def edit(self, rows: Sequence[WordRow], delete: Sequence[bool],
             substitute: Sequence[bool], insert: Sequence[bool], rng: np.random.Generator
             ) -> tuple[list[WordRow], AugmentCounts]:
        """``rows`` with word i deleted, or substituted, where ``delete[i]`` or
        ``substitute[i]``, and a word inserted before it where ``insert[i]``; the new
        words are drawn from ``rng``. Labels and pauses as in the module docstring."""
        n = len(rows)
        counts = AugmentCounts(words=n)
        if n == 0:
            return [], counts
        out: list[_Word] = []
        carry_open: list[str] = []  # OPEN_* marks of deleted words, for the next word
        carry_cap = False  # a deleted sentence-initial capital, for the next word

        def place(word: _Word) -> None:
            nonlocal carry_open, carry_cap
            if carry_open:
                word.punct = [*carry_open, *(m for m in word.punct if m not in carry_open)]
            if carry_cap and word.cap == "O":
                word.cap, word.form = "FIRST_CAP", apply_cap(word.word, "FIRST_CAP")
            carry_open, carry_cap = [], False
            out.append(word)

        for i, row in enumerate(rows):
            if insert[i]:
                word = self.frequent.draw(rng)
                if word is not None:
                    pause = None if row.pause_after is None else 0.0
                    place(_Word(word, word, [], "O", row.start, row.start, pause))
                    counts.ins += 1
            if delete[i]:
                sentence_start = i == 0 or bool(SENTENCE_END & set(rows[i - 1].punct))
                carry_cap = carry_cap or (sentence_start and row.cap != "O")
                carry_open.extend(m for m in row.punct if m in OPENING_LABELS)
                if out:
                    prev = out[-1]
                    prev.punct.extend(m for m in row.punct
                                      if m not in OPENING_LABELS and m not in prev.punct)
                    prev.pause = _merged_pause(prev.pause, row, i == n - 1)
                counts.dele += 1
                continue
            word = self.substitute(row.word, rng) if substitute[i] else None
            if word is None:
                place(_Word(row.word, row.form, list(row.punct), row.cap, row.start, row.end,
                            row.pause_after))
            else:
                place(_Word(word, apply_cap(word, row.cap), list(row.punct), row.cap,
                            row.start, row.end, row.pause_after))
                counts.sub += 1
        utt_id = rows[0].utt_id
        return [WordRow(utt_id, k, w.word, w.form, tuple(w.punct), w.cap, w.start, w.end,
                        w.pause) for k, w in enumerate(out)], counts


class TrainingAugmenter:
    """The augmented training sequences of each epoch (``punct.train.trainer``)."""

    def __init__(self, augmenter: Augmenter, utts: Mapping[str, Sequence[WordRow]],
                 seqs: Sequence[WordSeq], label_set: LabelSet, seed: int):
        self.augmenter, self.label_set = augmenter, label_set
        self.seed = seed + augmenter.options.seed_offset
        self.utts = list(utts.items())
        self.langs = [seq.lang for seq in seqs]

    def epoch(self, epoch: int) -> tuple[list[WordSeq], AugmentCounts]:
        """Every utterance augmented with the draws of ``epoch``, offsets renumbered."""
        seqs: list[WordSeq] = []
        total = AugmentCounts()
        offset = 0
        for (utt_id, rows), lang in zip(self.utts, self.langs, strict=True):
            new, counts = self.augmenter.augment(rows, utterance_rng(self.seed, epoch, utt_id))
            total.add(counts)
            seqs.append(rows_to_seq(new, self.label_set, offset, lang))
            offset += len(new)
        return seqs, total
