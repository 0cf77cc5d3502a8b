"""UniPunc's table layout (Zhu et al. 2022, Tables 2 and 3), published figures beside ours.

Test sets: a set whose name ends in ``_mixed`` (``punct.bin.subset_audio``: a share of
its utterances without audio; or a mixed-modality UniPunc JSONL set such as
``unipunc_mixed`` of egs/mtedx) is the paper's "English-Mixed" kind, any other set the
"English-Audio" kind. A "Paper row" column names the paper's row each of our systems
reproduces (``ours_as`` in the published figures: brnn_text = BiLSTM, unipunc =
UniPunc-Mix, ...). The paper scores three marks (comma, full stop, question mark);
our rows give COMMA, PERIOD and QUESTION and an Overall computed from those three
classes' counts (micro P/R/F1 over them), which equals ``micro_f1`` with the ``iwslt4``
label set; with ``full13`` the other marks are left out of Overall. A third table puts
each system's micro-F1 over all marks of its label set on a test set and on its mixed
copy side by side.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

import yaml

from punct.errors import MissingDataError
from punct.extras import require
from punct.score.published import PUBLISHED_DIR
from punct.score.tables import KEY_COLUMNS, OURS, Table, data_label

pd = require("pandas", "report", "score tables")  # optional extra: the report tables

CLASSES = ("COMMA", "PERIOD", "QUESTION")
CLASS_NAMES = ("Comma", "Full Stop", "Question")
MIXED_SUFFIX = "_mixed"
AUDIO, MIXED = "Audio", "Mixed"


@cache
def load_unipunc_published() -> dict[str, Any]:
    """The published figures ``published/unipunc_2022.yaml``."""
    path = PUBLISHED_DIR / "unipunc_2022.yaml"
    if not path.is_file():
        raise MissingDataError("no published UniPunc figures", path)
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def test_kind(score: dict[str, Any]) -> str:
    """``Mixed`` for a ``*_mixed`` test set, else ``Audio``."""
    return MIXED if str(score["test_set"]).endswith(MIXED_SUFFIX) else AUDIO


def prf(counts: Sequence[dict[str, Any]]) -> tuple[float, float, float]:
    """Micro precision, recall, F1 (percent) over class count dicts (tp, fp, fn)."""
    tp = sum(int(c["tp"]) for c in counts)
    fp = sum(int(c["fp"]) for c in counts)
    fn = sum(int(c["fn"]) for c in counts)
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return 100 * p, 100 * r, 100 * f


def _zero() -> dict[str, int]:
    return {"tp": 0, "fp": 0, "fn": 0}


def class_figures(score: dict[str, Any]) -> list[float]:
    """P, R, F1 of comma, full stop, question mark and their Overall (12 numbers, %)."""
    classes = score["metrics"]["all"]["punct"]["classes"]
    counts = [classes.get(lab, _zero()) for lab in CLASSES]
    out: list[float] = []
    for cnt in counts:
        out.extend(prf([cnt]))
    out.extend(prf(counts))
    return out


def table2_columns() -> list[str]:
    return [f"{name} {m}" for name in (*CLASS_NAMES, "Overall") for m in ("P", "R", "F1")]


def _source(doc: dict[str, Any], table: str) -> str:
    return f"published: {doc['short']} ({table.replace('table', 'Table ')})"


PAPER_ROW = "Paper row"


def paper_row(doc: dict[str, Any], system: str) -> str:
    """The paper's row our ``system`` reproduces ('' when none)."""
    return str(doc.get("ours_as", {}).get(system, ""))


def _note(doc: dict[str, Any]) -> str:
    return (f" Published rows: {doc['short']}, data {doc['data']} ({doc['data_note']}).")


def table2(scores: Sequence[dict[str, Any]], doc: dict[str, Any]) -> Table:
    """Table 2: P/R/F1 per mark and Overall, on audio and mixed test sets."""
    cols = table2_columns()
    records = []
    for kind in (AUDIO, MIXED):
        for s in scores:
            if test_kind(s) != kind:
                continue
            row = dict(zip(KEY_COLUMNS, (OURS, s["system"], data_label(s), s["label_set"]),
                           strict=True))
            row[PAPER_ROW] = paper_row(doc, s["system"])
            row["Test"] = kind
            row.update(zip(cols, class_figures(s), strict=True))
            records.append(row)
        spec = doc["tables"]["table2"]["test_sets"][kind]
        for system, values in spec["rows"].items():
            row = dict(zip(KEY_COLUMNS, (_source(doc, "table2"), system, spec["name"],
                                         "iwslt4"), strict=True))
            row[PAPER_ROW] = system
            row["Test"] = kind
            row.update(zip(cols, (float(v) for v in values), strict=True))
            records.append(row)
    frame = pd.DataFrame.from_records(records, columns=[*KEY_COLUMNS, PAPER_ROW, "Test", *cols])
    return Table("unipunc_table2", "UniPunc Table 2: P/R/F1 (%) per mark, audio and mixed "
                 "test sets", frame,
                 "Audio = a test set with audio for every utterance; Mixed = a copy with a "
                 "share of the utterances' audio withheld (punct.bin.subset_audio) or a "
                 "mixed-modality set (UniPunc JSONL records with and without audio). Overall = "
                 "micro P/R/F1 over comma, full stop and question mark only." + _note(doc),
                 split_by="Test")


def table3(scores: Sequence[dict[str, Any]], doc: dict[str, Any]) -> Table:
    """Table 3: F1 per mark and Overall on the mixed test sets (the grafting experiment)."""
    cols = [*CLASS_NAMES, "Overall"]
    records = []
    for s in scores:
        if test_kind(s) != MIXED:
            continue
        row = dict(zip(KEY_COLUMNS, (OURS, s["system"], data_label(s), s["label_set"]),
                       strict=True))
        row[PAPER_ROW] = paper_row(doc, s["system"])
        row.update(zip(cols, class_figures(s)[2::3], strict=True))
        records.append(row)
    spec = doc["tables"]["table3"]
    name = doc["tables"]["table2"]["test_sets"][spec["test_set"]]["name"]
    for system, values in spec["rows"].items():
        row = dict(zip(KEY_COLUMNS, (_source(doc, "table3"), system, name, "iwslt4"),
                       strict=True))
        row[PAPER_ROW] = system
        row.update(zip(cols, (float(v) for v in values), strict=True))
        records.append(row)
    frame = pd.DataFrame.from_records(records, columns=[*KEY_COLUMNS, PAPER_ROW, *cols])
    return Table("unipunc_table3", "UniPunc Table 3: F1 (%) on the mixed test sets "
                 "(UniPunc grafted onto other models)", frame,
                 "Ours: every system on the *_mixed test sets; compare brnn_text with "
                 "unipunc_brnn (the BRNN with the acoustic assistant and coordinate "
                 "bootstrapper grafted on). BiLSTM-UniPunc is the paper's graft onto "
                 "Tilk & Alumäe's BiLSTM; CD = content dropout." + _note(doc))


def audio_vs_mixed(scores: Sequence[dict[str, Any]]) -> Table:
    """Micro-F1 (all marks of the label set) on each test set and on its mixed copy."""
    by_key = {(s["system"], s.get("corpus"), s["test_set"], s["label_set"]): s for s in scores}
    records = []
    for (system, corpus, test_set, labels), s in by_key.items():
        if test_kind(s) == MIXED:
            continue
        mixed = by_key.get((system, corpus, test_set + MIXED_SUFFIX, labels))
        audio_f1 = 100 * float(s["metrics"]["all"]["micro_f1"])
        mixed_f1 = 100 * float(mixed["metrics"]["all"]["micro_f1"]) if mixed else float("nan")
        records.append({"System": system, "Data": data_label(s), "Labels": labels,
                        "Audio micro F1": audio_f1, "Mixed micro F1": mixed_f1,
                        "Mixed - Audio": mixed_f1 - audio_f1})
    cols = ["System", "Data", "Labels", "Audio micro F1", "Mixed micro F1", "Mixed - Audio"]
    frame = pd.DataFrame.from_records(records, columns=cols)
    return Table("unipunc_audio_vs_mixed", "UniPunc: micro-F1 (%) with all audio vs with a "
                 "share withheld", frame,
                 "micro-F1 over all marks of the label set (O excluded) on a test set (Audio) "
                 "and on its *_mixed copy (Mixed); text-only systems score the same on both "
                 "unless they use pauses, which the mixed copy drops with the audio.")


def build_tables(scores: Sequence[dict[str, Any]]) -> list[Table]:
    """UniPunc Tables 2 and 3 and the audio-vs-mixed comparison."""
    doc = load_unipunc_published()
    return [table2(scores, doc), table3(scores, doc), audio_vs_mixed(scores)]
