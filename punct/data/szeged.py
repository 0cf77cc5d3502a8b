"""Hungarian punctuation data from detokenised CoNLL sentences (Szeged recipe).

Sentences become word-table rows through the project's label parser
(``punct.labels.parse_text``) after ``clean_text`` removes what it does not model:
brackets and other symbols at the edges of tokens (``(immár)`` -> ``immár``,
``%-kal`` -> ``kal``), closing marks glued before a word and opening marks glued
after one. Consecutive sentences of one source file are grouped into utterances of
about ``doc_words`` words (a whole number of sentences), so that sentence ends are
not given away by utterance boundaries inside a group.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from punct.data.conll import Sentence, spaced_text
from punct.labels import (
    CLOSING_CHARS,
    DASHES,
    MARK_CHARS,
    OPENING_CHARS,
    is_letter_or_digit,
    split_word_edges,
)
from punct.wordtable import WordRow, rows_from_text


@dataclass
class CleanStats:
    """What ``clean_text`` removed, by character."""

    dropped: Counter[str] = field(default_factory=Counter)
    tokens_dropped: int = 0


def _clean_token(tok: str, stats: CleanStats) -> str:
    lead, core, trail = split_word_edges(tok)
    if not _has_word(core):
        kept = "".join(ch for ch in tok if ch in MARK_CHARS)
        if not all(ch in OPENING_CHARS for ch in kept):
            kept = "".join(ch for ch in kept if ch not in OPENING_CHARS)
        for ch in tok:
            if ch not in kept:
                stats.dropped[ch] += 1
        return kept
    new_lead = ""
    removed_symbol = False
    for ch in lead:
        if ch not in MARK_CHARS or ch in CLOSING_CHARS:
            stats.dropped[ch] += 1
            removed_symbol = True
            continue
        new_lead += ch
    # "%-kal", "°-os": a suffix hyphen after a removed symbol is not a dash.
    if removed_symbol and new_lead and all(ch in DASHES for ch in new_lead):
        for ch in new_lead:
            stats.dropped[ch] += 1
        new_lead = ""
    new_trail = ""
    for ch in trail:
        if ch not in MARK_CHARS or ch in OPENING_CHARS:
            stats.dropped[ch] += 1
            continue
        new_trail += ch
    return new_lead + core + new_trail


def _has_word(tok: str) -> bool:
    return any(is_letter_or_digit(ch) for ch in tok)


def clean_text(text: str, stats: CleanStats | None = None) -> str:
    """``text`` reduced to words and the 13 modelled marks (see the module docstring)."""
    stats = stats if stats is not None else CleanStats()
    toks = [t for t in (_clean_token(tok, stats) for tok in text.split()) if t]
    # Marks before the first word: only opening marks can attach (to that word).
    while toks and not _has_word(toks[0]) and not all(
            ch in OPENING_CHARS or ch in DASHES or ch == '"' for ch in toks[0]):
        stats.tokens_dropped += 1
        toks.pop(0)
    # Opening marks after the last word have nothing to attach to.
    while toks and not _has_word(toks[-1]) and all(ch in OPENING_CHARS for ch in toks[-1]):
        stats.tokens_dropped += 1
        toks.pop()
    if toks and not any(_has_word(t) for t in toks):
        stats.tokens_dropped += len(toks)
        return ""
    return " ".join(toks)


def group_sentences(sentences: Sequence[Sentence], doc_words: int) -> list[list[Sentence]]:
    """Consecutive sentences of the same file in groups of at least ``doc_words`` tokens."""
    groups: list[list[Sentence]] = []
    current: list[Sentence] = []
    size = 0
    for sent in sentences:
        if current and (sent.path != current[-1].path or size >= doc_words):
            groups.append(current)
            current, size = [], 0
        current.append(sent)
        size += len(sent.forms)
    if current:
        groups.append(current)
    return groups


def group_rows(utt_id: str, group: Sequence[Sentence], stats: CleanStats) -> list[WordRow]:
    """Word rows of one group of sentences (the detokenised, cleaned text)."""
    texts = [clean_text(spaced_text(s), stats) for s in group]
    text = " ".join(t for t in texts if t)
    first = group[0]
    return rows_from_text(utt_id, text, first.path, first.line)
