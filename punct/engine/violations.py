"""Counting the breaks of the document rules (``punct.engine.doc_rules``) in restored text.

``count_violations`` reads word rows (a hypothesis table of stage 6, the rows of a
restored document) and counts each kind of break: an unclosed quote, ``¿`` or ``¡``
(``unclosed_*``), a closing quote with none open, a pair opened twice, a lower-case word
at the start of a document or after a sentence end, a document without a final mark, a
mark on a pass-through word. Constrained decoding makes every count zero.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from punct.engine.doc_rules import DOC_START, VIOLATIONS, DocRules, needs_capital
from punct.engine.symbols import is_nonspeech_word, is_passthrough
from punct.labels import PUNCT_LABELS, cap_label


class _Row(Protocol):
    word: str
    form: str
    punct: tuple[str, ...]


def count_violations(docs: Iterable[Sequence[_Row]], ends: bool = True) -> dict[str, int]:
    """Per kind of break (``doc_rules.VIOLATIONS``), how often it occurs in ``docs``
    (each a sequence of rows with ``word``, ``form`` and ``punct``); ``ends``: the
    documents are complete (else the final-mark rule is not checked)."""
    rules = DocRules.for_labels(PUNCT_LABELS)
    counts = dict.fromkeys(VIOLATIONS, 0)
    for rows in docs:
        state, last = DOC_START, None
        for row in rows:
            if is_passthrough(row.word) or is_nonspeech_word(row.form):
                counts["mark_on_passthrough"] += bool(row.punct)
                continue
            if needs_capital(state, row.form) and cap_label(row.form) == "O":
                counts["lowercase_start"] += 1
            state, broken = rules.step(state, row.punct)
            last = row.punct
            for name in broken:
                counts[name] += 1
        for name in rules.finish(state, last) if ends else []:
            counts[name] += 1
    return counts
