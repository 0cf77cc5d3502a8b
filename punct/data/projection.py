"""Label projection: a punctuated, cased reference's marks and capitals onto other words.

Any ASR output becomes a test set: its words are aligned to the reference words
(:func:`punct.data.word_align.align_words`) and take the reference's labels
(docs/ASR.md, "Alignment conventions"):

- a matched word (same word, case-insensitive) takes the reference word's marks and
  capitalisation label, and its surface form;
- a substituted word takes the reference word's marks and capitalisation label;
- an inserted word gets no mark and ``O``;
- a deleted reference word's closing marks move back to the last hypothesis word before
  it, its opening marks (OPEN_*) forward to the next hypothesis word after it; a mark
  with no hypothesis word on that side (a deletion at the start, or at the end for an
  opening mark) is dropped and counted. Its capitalisation label is lost.

Moved marks join the receiving word's own marks in text order (moved opening marks
first, then its own, then moved closing marks; each mark once).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from punct.data.nonspeech import NonSpeechMap, load_nonspeech_map
from punct.data.timed import TimedWord, pauses
from punct.data.word_align import DEL, INS, MATCH, EditCounts, align_words, edit_counts
from punct.errors import PunctInputError
from punct.labels import OPENING_LABELS, apply_cap
from punct.wordtable import WordRow


@dataclass
class Projection:
    """Projected rows of one utterance (or a table's totals) and what happened to marks."""

    rows: list[WordRow] = field(default_factory=list)
    counts: EditCounts = field(default_factory=EditCounts)
    moved: int = 0
    dropped: int = 0


def hyp_rows(utt_id: str, words: Sequence[str | TimedWord],
             nonspeech: NonSpeechMap | str | None = None, path: str | Path | None = None
             ) -> list[WordRow]:
    """Unlabelled rows of a hypothesis utterance: plain words, or timed words whose pauses
    come from the one pause formula (:func:`punct.data.timed.pauses`) after the non-speech
    tokens (the map ``nonspeech``) are left out (their time becomes pause)."""
    ns_map = load_nonspeech_map(nonspeech)
    kept = [w for w in words if not ns_map.is_nonspeech(w if isinstance(w, str) else w.word)]
    timed = [w for w in kept if isinstance(w, TimedWord)]
    if timed and len(timed) != len(kept):
        raise PunctInputError(f"utterance {utt_id}: some words have timings, others not", path)
    gaps = pauses(timed, doc_id=f"utterance {utt_id}", path=path) if timed else None
    rows = []
    for i, w in enumerate(kept):
        text = w if isinstance(w, str) else w.word
        if not text or any(ch.isspace() for ch in text):
            raise PunctInputError(f"utterance {utt_id}: hypothesis word {i} {text!r} is empty "
                                  "or holds white space", path,
                                  None if isinstance(w, str) else w.line)
        row = WordRow(utt_id, i, text.lower(), text.lower(), (), "O")
        if gaps is not None and isinstance(w, TimedWord):
            row = row.with_timing(w.start, w.end, gaps[i])
        rows.append(row)
    return rows


def _form(word: str, cap: str) -> str:
    form = apply_cap(word, cap)
    return form if form.lower() == word else word


def _merge(own: tuple[str, ...], before: list[str], after: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys([*before, *own, *after]))


def project_utterance(ref: Sequence[WordRow], hyp: Sequence[WordRow], *, what: str = "",
                      path: str | Path | None = None) -> Projection:
    """``hyp``'s rows (words and timings kept) with the labels projected from ``ref``."""
    pairs = align_words([r.word for r in ref], [h.word for h in hyp], what=what, path=path)
    punct: list[tuple[str, ...]] = [()] * len(hyp)
    caps = ["O"] * len(hyp)
    forms = [h.word for h in hyp]
    opening: list[list[str]] = [[] for _ in hyp]
    closing: list[list[str]] = [[] for _ in hyp]
    out = Projection(counts=edit_counts(pairs))
    last_hyp: int | None = None
    pending_open: list[str] = []
    for pair in pairs:
        if pair.op == DEL:
            r = ref[pair.ref]
            opens = [m for m in r.punct if m in OPENING_LABELS]
            closes = [m for m in r.punct if m not in OPENING_LABELS]
            pending_open += opens
            if closes and last_hyp is None:
                out.dropped += len(closes)
            elif closes:
                closing[last_hyp] += closes
                out.moved += len(closes)
            continue
        h = pair.hyp
        if pending_open:
            opening[h] += pending_open
            out.moved += len(pending_open)
            pending_open = []
        last_hyp = h
        if pair.op != INS:
            r = ref[pair.ref]
            punct[h], caps[h] = r.punct, r.cap
            forms[h] = r.form if pair.op == MATCH else _form(hyp[h].word, r.cap)
    out.dropped += len(pending_open)
    out.rows = [WordRow(h.utt_id, i, h.word, forms[i], _merge(punct[i], opening[i], closing[i]),
                        caps[i], h.start, h.end, h.pause_after) for i, h in enumerate(hyp)]
    return out


def check_same_utterances(ref: Mapping[str, object], hyp: Mapping[str, object],
                          ref_path: str | Path | None = None,
                          hyp_path: str | Path | None = None,
                          hyp_line: Callable[[str], int | None] | None = None) -> None:
    """PunctInputError naming the first utterance that only one side has (and both files);
    ``hyp_line`` gives the line of a hypothesis utterance, for the error."""
    files = f"(ref {ref_path or '<ref>'}, hyp {hyp_path or '<hyp>'})"
    for utt_id in ref:
        if utt_id not in hyp:
            raise PunctInputError(
                f"utterance {utt_id} of the reference is missing from the hypothesis {files}",
                hyp_path)
    for utt_id in hyp:
        if utt_id not in ref:
            raise PunctInputError(
                f"utterance {utt_id} of the hypothesis is not in the reference {files}",
                hyp_path, hyp_line(utt_id) if hyp_line else None)


def project_table(ref: Mapping[str, Sequence[WordRow]], hyp: Mapping[str, Sequence[WordRow]],
                  ref_path: str | Path | None = None, hyp_path: str | Path | None = None,
                  nonspeech: NonSpeechMap | str | None = None,
                  hyp_line: Callable[[str], int | None] | None = None,
                  ) -> tuple[dict[str, list[WordRow]], Projection]:
    """Projected rows per utterance (in ``hyp``'s order) and the totals (``rows`` empty).

    Both sides must hold the same utterances (``hyp_line``: see
    :func:`check_same_utterances`); the reference's non-speech rows are no
    words (the map ``nonspeech``)."""
    check_same_utterances(ref, hyp, ref_path, hyp_path, hyp_line)
    ns_map = load_nonspeech_map(nonspeech)
    total = Projection()
    out: dict[str, list[WordRow]] = {}
    for utt_id, rows in hyp.items():
        speech = [r for r in ref[utt_id] if not ns_map.is_nonspeech(r.word)]
        one = project_utterance(speech, rows, what=f"utterance {utt_id}", path=hyp_path)
        out[utt_id] = one.rows
        total.counts = total.counts + one.counts
        total.moved += one.moved
        total.dropped += one.dropped
    return out, total
