"""The mark at the end of each document: is the sentence-final mark of its last word right?

A document (an utterance of ``words.tsv``) nearly always ends with a sentence-final mark
(PERIOD, QUESTION, EXCLAMATION or ELLIPSIS), and it is where pause-aware systems used to
fail most: the audio's trailing silence was short, so the model learnt "short pause, no
mark" right there (see ``punct.data.timed.END_OF_DOCUMENT_PAUSE``).

For each document, both sides' marks of the last word are mapped through the label set;
its *final mark* is the set of sentence-final marks among them (empty = none). The
final mark is correct when hypothesis and reference agree on it (a document that ends
without a sentence-final mark is correct when the hypothesis puts none either). Beside it:

- ``end_detected``: where the reference ends with a sentence-final mark, the hypothesis
  puts one (any) there; where it does not, none;
- ``top_final_mark_correct`` (with the decoder's probabilities): a multi-label system may
  put several sentence-final marks on one word (``PERIOD|EXCLAMATION``); this counts the
  most probable of them, i.e. the end is detected and its most probable sentence-final
  mark is the reference's;
- ``last_word_correct``: the last word's whole mark set agrees (e.g. ``PERIOD|QUOTE``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from punct.labels import LabelSet, get_label_set
from punct.score.metrics import check_aligned
from punct.wordtable import WordRow

#: Marks that end a sentence (after mapping, a label set may have only some of them).
SENTENCE_FINAL: frozenset[str] = frozenset({"PERIOD", "QUESTION", "EXCLAMATION", "ELLIPSIS"})


def final_marks(row: WordRow, label_set: LabelSet) -> tuple[str, ...]:
    """The sentence-final marks of ``row`` under ``label_set``, in label-set order."""
    mapped = set(label_set.map(row.punct))
    return tuple(lab for lab in label_set.labels if lab in mapped and lab in SENTENCE_FINAL)


def top_final_mark(probs: Mapping[str, float], label_set: LabelSet) -> str | None:
    """The most probable sentence-final mark of ``label_set`` given the decoder's
    probabilities per mark (marks mapped through the set; None when none maps)."""
    best: dict[str, float] = {}
    for mark, p in probs.items():
        target = label_set.mapping.get(mark)
        if target in SENTENCE_FINAL:
            best[target] = max(best.get(target, 0.0), float(p))
    return max(best, key=lambda m: best[m]) if best else None


def doc_end_accuracy(
    ref: Mapping[str, Sequence[WordRow]],
    hyp: Mapping[str, Sequence[WordRow]],
    label_set: LabelSet | str = "full13",
    ref_path: str | Path | None = None,
    hyp_path: str | Path | None = None,
    last_word_probs: Mapping[str, Mapping[str, float]] | None = None,
) -> dict[str, Any]:
    """Counts ``final_mark_correct``, ``end_detected``, ``last_word_correct`` (and
    ``top_final_mark_correct`` with ``last_word_probs``: utt_id -> mark -> probability of
    its last word) over ``documents``, and ``per_document``.

    ``per_document`` lists, per utterance, the reference and hypothesis final marks and
    whole mark sets of the last word (``"O"`` when empty). The two tables must hold the
    same utterances and words (PunctInputError otherwise, naming the files).
    """
    ls = get_label_set(label_set) if isinstance(label_set, str) else label_set
    check_aligned(ref, hyp, ref_path, hyp_path)
    per_doc: list[dict[str, Any]] = []
    counts = {"final_mark_correct": 0, "end_detected": 0, "last_word_correct": 0}
    if last_word_probs is not None:
        counts["top_final_mark_correct"] = 0
    for utt_id, ref_rows in ref.items():
        if not ref_rows:
            continue
        r, h = ref_rows[-1], hyp[utt_id][-1]
        rf, hf = final_marks(r, ls), final_marks(h, ls)
        rall, hall = ls.map(r.punct), ls.map(h.punct)
        doc = {
            "utt_id": utt_id, "word": r.word,
            "ref_final": "|".join(rf) or "O", "hyp_final": "|".join(hf) or "O",
            "ref_marks": "|".join(rall) or "O", "hyp_marks": "|".join(hall) or "O",
            "final_mark_correct": rf == hf, "end_detected": bool(rf) == bool(hf),
            "last_word_correct": set(rall) == set(hall),
        }
        if last_word_probs is not None:
            top = top_final_mark(last_word_probs[utt_id], ls) if hf else None
            doc["hyp_top_final"] = top or "O"
            doc["top_final_mark_correct"] = (rf == (top,)) if top else not rf
        for key in counts:
            counts[key] += bool(doc[key])
        per_doc.append(doc)
    return {"label_set": ls.name, "documents": len(per_doc), **counts,
            "per_document": per_doc}
