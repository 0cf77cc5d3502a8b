"""Punctuation and capitalisation metrics over word slots.

Definitions (named so that they are never ambiguous):

- Per class: TP/FP/FN over word slots. A slot carries a *set* of marks (multi-label),
  after mapping both reference and hypothesis through the label set; each mark of a slot
  is counted on its own (``QUOTE|PERIOD`` vs ``PERIOD`` = one PERIOD TP, one QUOTE FN).
- ``micro_f1``: F1 of the TP/FP/FN summed over all marks of the label set (O excluded);
  AutoPunct Table 4, Courtland, UniPunc, punctuator2 "Overall".
- ``macro_f1``: mean of the per-mark F1 over *all* marks of the label set (O excluded;
  a mark with no reference and no predicted occurrence counts as F1 = 0), Nagy et al.
  ``macro_f1_supported``: the same mean over the marks that occur in the reference.
- ``cap_micro_f1``: micro F1 over FIRST_CAP and ALL_CAPS (AutoPunct Table 6).
- ``ser``: slot error rate (punctuator2): per word slot, the reference mark set vs the
  hypothesis mark set; C = equal and non-empty, S = both non-empty and different,
  D = reference non-empty and hypothesis empty, I = reference empty and hypothesis
  non-empty; SER = (S + D + I) / (C + S + D).
- ``punct_slot_accuracy``: share of word slots whose mark set is exactly right (O included);
  ``cap_accuracy``: share of words with the right capitalisation label.
- ``baseline_all_o``: the same figures for a system that predicts no mark and no capital.

All rates are fractions in [0, 1] (``None`` when undefined, e.g. SER without reference marks).

Reference and hypothesis are aligned on words without non-speech tokens
(:func:`speech_rows`, the corpus' map of ``punct.data.nonspeech``): a ``<breath>`` row that
``restore`` passed through is no word slot, and one side may hold it while the other does
not.

**Different word sequences** (an ASR hypothesis; docs/ASR.md). Where an utterance's
hypothesis words differ from the reference words (case-insensitive), the two are aligned by
edit distance (:func:`punct.data.word_align.align_words`), and every column of the
alignment is a word slot:

- a reference word aligned to a hypothesis word (match or substitution) is one slot whose
  mark sets and capitalisation labels are compared as above;
- a deleted reference word is a slot whose hypothesis side is empty (no mark, cap ``O``):
  each of its reference marks is a false negative (an SER deletion when it has any), and
  its capitalisation label, if not ``O``, a capitalisation false negative; its marks are
  *not* moved to a neighbour (unlike label projection, :mod:`punct.data.projection`);
- an inserted hypothesis word is a slot whose reference side is empty: each of its marks
  is a false positive (an SER insertion when it has any), its capitalisation label, if not
  ``O``, a capitalisation false positive.

So ``words`` counts slots (reference words plus inserted words) and the accuracies are
over these slots. Each group then also has ``asr``: ``wer`` = (S + D + I) / N_ref over the
speech words, case-insensitive, with ``sub``, ``del``, ``ins``, ``ref_words`` and
``hyp_words``. ``asr`` is there only when some utterance's words differ; where all are the
same, every figure (and every key) is that of the slot-by-slot comparison above.
``strict=True`` refuses differing words instead (:func:`check_aligned`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from punct.data.nonspeech import NonSpeechMap, load_nonspeech_map
from punct.data.projection import check_same_utterances
from punct.data.word_align import DEL, INS, EditCounts, align_words, edit_counts
from punct.errors import PunctInputError
from punct.labels import CAP_LABELS, PUNCT_LABELS, LabelSet, get_label_set
from punct.wordtable import WordRow

CAP_CLASSES: tuple[str, ...] = tuple(c for c in CAP_LABELS if c != "O")
DEFAULT_LANG_GROUPS: tuple[str, ...] = ("es+eu",)


@dataclass
class ClassCounts:
    """True positives, false positives and false negatives of one class."""

    tp: int = 0
    fp: int = 0
    fn: int = 0

    def add(self, other: ClassCounts) -> None:
        self.tp += other.tp
        self.fp += other.fp
        self.fn += other.fn

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "tp": self.tp, "fp": self.fp, "fn": self.fn, "support": self.tp + self.fn,
            "predicted": self.tp + self.fp,
            "precision": self.precision, "recall": self.recall, "f1": self.f1,
        }


@dataclass
class SlotCounts:
    """Counts of the slot error rate."""

    c: int = 0
    s: int = 0
    d: int = 0
    i: int = 0

    def add_slot(self, ref: frozenset[str], hyp: frozenset[str]) -> None:
        if ref and hyp:
            if ref == hyp:
                self.c += 1
            else:
                self.s += 1
        elif ref:
            self.d += 1
        elif hyp:
            self.i += 1

    @property
    def ser(self) -> float | None:
        den = self.c + self.s + self.d
        return (self.s + self.d + self.i) / den if den else None

    def as_dict(self) -> dict[str, int]:
        return {"C": self.c, "S": self.s, "D": self.d, "I": self.i}


@dataclass
class Tally:
    """All counts of one group of utterances."""

    labels: tuple[str, ...]
    utterances: int = 0
    words: int = 0
    slots_correct: int = 0
    cap_correct: int = 0
    ref_o_slots: int = 0
    ref_o_caps: int = 0
    edits: EditCounts = field(default_factory=EditCounts)

    def __post_init__(self) -> None:
        self.punct = {lab: ClassCounts() for lab in self.labels}
        self.cap = {lab: ClassCounts() for lab in CAP_CLASSES}
        self.slots = SlotCounts()
        self.base_slots = SlotCounts()

    def add_word(self, ref: frozenset[str], hyp: frozenset[str], ref_cap: str,
                 hyp_cap: str) -> None:
        self.words += 1
        for lab in ref | hyp:
            cnt = self.punct[lab]
            if lab in ref and lab in hyp:
                cnt.tp += 1
            elif lab in hyp:
                cnt.fp += 1
            else:
                cnt.fn += 1
        self.slots.add_slot(ref, hyp)
        self.base_slots.add_slot(ref, frozenset())
        self.slots_correct += ref == hyp
        self.ref_o_slots += not ref
        self.cap_correct += ref_cap == hyp_cap
        self.ref_o_caps += ref_cap == "O"
        if ref_cap == hyp_cap:
            if ref_cap != "O":
                self.cap[ref_cap].tp += 1
        else:
            if hyp_cap != "O":
                self.cap[hyp_cap].fp += 1
            if ref_cap != "O":
                self.cap[ref_cap].fn += 1

    def summary(self, asr: bool = False) -> dict[str, Any]:
        """The metrics of this group as a JSON-ready dict (``asr``: with the WER figures)."""
        micro = ClassCounts()
        for cnt in self.punct.values():
            micro.add(cnt)
        cap_micro = ClassCounts()
        for cnt in self.cap.values():
            cap_micro.add(cnt)
        f1s = [cnt.f1 for cnt in self.punct.values()]
        supported = [cnt.f1 for cnt in self.punct.values() if cnt.tp + cnt.fn]
        words = self.words
        return {
            "utterances": self.utterances,
            "words": words,
            "micro_precision": micro.precision,
            "micro_recall": micro.recall,
            "micro_f1": micro.f1,
            "macro_f1": sum(f1s) / len(f1s) if f1s else 0.0,
            "macro_f1_supported": sum(supported) / len(supported) if supported else None,
            "ser": self.slots.ser,
            "ser_counts": self.slots.as_dict(),
            "punct_slot_accuracy": self.slots_correct / words if words else None,
            "cap_micro_precision": cap_micro.precision,
            "cap_micro_recall": cap_micro.recall,
            "cap_micro_f1": cap_micro.f1,
            "cap_accuracy": self.cap_correct / words if words else None,
            "punct": {
                "classes": {lab: cnt.as_dict() for lab, cnt in self.punct.items()},
                "micro": micro.as_dict(),
            },
            "cap": {
                "classes": {lab: cnt.as_dict() for lab, cnt in self.cap.items()},
                "micro": cap_micro.as_dict(),
            },
            "baseline_all_o": {
                "micro_precision": 0.0,
                "micro_recall": 0.0,
                "micro_f1": 0.0,
                "macro_f1": 0.0,
                "ser": self.base_slots.ser,
                "ser_counts": self.base_slots.as_dict(),
                "punct_slot_accuracy": self.ref_o_slots / words if words else None,
                "cap_micro_f1": 0.0,
                "cap_accuracy": self.ref_o_caps / words if words else None,
            },
            **({"asr": self.edits.as_dict()} if asr else {}),
        }


def _line_of(path: str | Path | None, utt_id: str, idx: int | None) -> int | None:
    """Line number of (utt_id, idx) in a word table, or of the utterance's first row."""
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, start=1):
                fields = line.split("\t", 2)
                if fields[0] == utt_id and (idx is None or fields[1:2] == [str(idx)]):
                    return lineno
    except OSError:
        return None
    return None


def _check_labels(rows: Sequence[WordRow], path: str | Path | None, side: str) -> None:
    for row in rows:
        bad = [lab for lab in row.punct if lab not in PUNCT_LABELS]
        if bad or row.cap not in CAP_LABELS:
            what = f"punctuation label {bad[0]!r}" if bad else f"cap label {row.cap!r}"
            raise PunctInputError(
                f"{side} utterance {row.utt_id} word {row.idx}: unknown {what}",
                path, _line_of(path, row.utt_id, row.idx),
            )


def check_aligned(
    ref: Mapping[str, Sequence[WordRow]],
    hyp: Mapping[str, Sequence[WordRow]],
    ref_path: str | Path | None = None,
    hyp_path: str | Path | None = None,
) -> None:
    """Raise PunctInputError unless ``hyp`` has the same utterances and words as ``ref``."""
    files = f"(ref {ref_path or '<ref>'}, hyp {hyp_path or '<hyp>'})"
    check_same_utterances(ref, hyp, ref_path, hyp_path,
                          lambda utt_id: _line_of(hyp_path, utt_id, 0))
    for utt_id, ref_rows in ref.items():
        hyp_rows = hyp[utt_id]
        for i in range(max(len(ref_rows), len(hyp_rows))):
            rw = ref_rows[i].word.lower() if i < len(ref_rows) else None
            hw = hyp_rows[i].word.lower() if i < len(hyp_rows) else None
            if rw != hw:
                raise PunctInputError(
                    f"utterance {utt_id} word {i}: reference has {rw!r}, hypothesis has {hw!r} "
                    f"({len(ref_rows)} vs {len(hyp_rows)} words) {files}",
                    hyp_path, _line_of(hyp_path, utt_id, i if hw is not None else None),
                )
        _check_labels(ref_rows, ref_path, "reference")
        _check_labels(hyp_rows, hyp_path, "hypothesis")


def check_comparable(
    ref: Mapping[str, Sequence[WordRow]],
    hyp: Mapping[str, Sequence[WordRow]],
    ref_path: str | Path | None = None,
    hyp_path: str | Path | None = None,
) -> None:
    """Raise PunctInputError unless both sides hold the same utterances with known labels
    (their words may differ)."""
    check_same_utterances(ref, hyp, ref_path, hyp_path,
                          lambda utt_id: _line_of(hyp_path, utt_id, 0))
    for utt_id, ref_rows in ref.items():
        _check_labels(ref_rows, ref_path, "reference")
        _check_labels(hyp[utt_id], hyp_path, "hypothesis")


Slot = tuple[WordRow | None, WordRow | None]


def aligned_slots(ref_rows: Sequence[WordRow], hyp_rows: Sequence[WordRow], *,
                  what: str = "", path: str | Path | None = None
                  ) -> tuple[list[Slot], EditCounts]:
    """The word slots of one utterance (module docstring): ``(ref row, hyp row)`` pairs,
    None on the side of a deletion or insertion, and the edit counts. Equal words
    (case-insensitive) pair up in order without aligning."""
    if [r.word.lower() for r in ref_rows] == [h.word.lower() for h in hyp_rows]:
        return list(zip(ref_rows, hyp_rows, strict=True)), EditCounts(matches=len(ref_rows))
    pairs = align_words([r.word for r in ref_rows], [h.word for h in hyp_rows],
                        what=what, path=path)
    slots: list[Slot] = [(None if p.op == INS else ref_rows[p.ref],
                          None if p.op == DEL else hyp_rows[p.hyp]) for p in pairs]
    return slots, edit_counts(pairs)


def speech_rows(table: Mapping[str, Sequence[WordRow]],
                nonspeech: NonSpeechMap | str | None = None) -> dict[str, list[WordRow]]:
    """``table`` without its non-speech rows (``nonspeech``: a map, a shipped name or a
    YAML path; None: the default map). Rows keep their ``idx`` (error lines stay right)."""
    ns_map = load_nonspeech_map(nonspeech)
    return {utt: [r for r in rows if not ns_map.is_nonspeech(r.word)]
            for utt, rows in table.items()}


def _groups_of(lang: str | None, lang_groups: Iterable[str]) -> list[str]:
    out = ["all"]
    if lang is not None:
        out.append(lang)
        out.extend(g for g in lang_groups if lang in g.split("+"))
    return out


def score_tables(
    ref: Mapping[str, Sequence[WordRow]],
    hyp: Mapping[str, Sequence[WordRow]],
    label_set: LabelSet | str,
    utt2lang: Mapping[str, str] | None = None,
    *,
    lang_groups: Iterable[str] = DEFAULT_LANG_GROUPS,
    ref_path: str | Path | None = None,
    hyp_path: str | Path | None = None,
    utt2lang_path: str | Path | None = None,
    nonspeech: NonSpeechMap | str | None = None,
    strict: bool = False,
) -> dict[str, dict[str, Any]]:
    """Metrics of ``hyp`` against ``ref``: ``{"all": {...}, "<lang>": {...}, ...}``.

    Both sides are mapped through ``label_set``, and scored on their speech words
    (:func:`speech_rows` with ``nonspeech``). With ``utt2lang`` there is one entry per
    language, plus one per ``lang_groups`` entry (e.g. ``"es+eu"``) whose languages all occur.
    Hypothesis words that differ from the reference are aligned (module docstring), unless
    ``strict``: then they are an error (:func:`check_aligned`).
    """
    ls = get_label_set(label_set) if isinstance(label_set, str) else label_set
    ref, hyp = speech_rows(ref, nonspeech), speech_rows(hyp, nonspeech)
    if strict:
        check_aligned(ref, hyp, ref_path, hyp_path)
    else:
        check_comparable(ref, hyp, ref_path, hyp_path)
    differ = False
    groups = [g.lower() for g in lang_groups]
    tallies: dict[str, Tally] = {}
    for utt_id, ref_rows in ref.items():
        lang = None
        if utt2lang is not None:
            if utt_id not in utt2lang:
                raise PunctInputError(f"utterance {utt_id} has no language", utt2lang_path)
            lang = utt2lang[utt_id].lower()
        targets = [tallies.setdefault(g, Tally(ls.labels)) for g in _groups_of(lang, groups)]
        for tally in targets:
            tally.utterances += 1
        slots, counts = aligned_slots(ref_rows, hyp[utt_id], what=f"utterance {utt_id}",
                                      path=hyp_path)
        differ = differ or counts.matches != len(slots)
        for r, h in slots:
            rset = frozenset(ls.map(r.punct)) if r else frozenset()
            hset = frozenset(ls.map(h.punct)) if h else frozenset()
            for tally in targets:
                tally.add_word(rset, hset, r.cap if r else "O", h.cap if h else "O")
        for tally in targets:
            tally.edits = tally.edits + counts
    if not tallies:
        tallies["all"] = Tally(ls.labels)
    langs = {utt2lang[u].lower() for u in ref} if utt2lang is not None else set()
    out: dict[str, dict[str, Any]] = {}
    for name, tally in tallies.items():
        if "+" in name and not set(name.split("+")) <= langs:
            continue
        out[name] = tally.summary(asr=differ)
    return out
