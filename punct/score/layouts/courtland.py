"""Courtland et al. (2020) layouts: Table 1 (P/R/F per class and overall) and Table 2
(overall F1 against predictions per token), with the published rows beside ours.

Our rows are the 3-class IWSLT scores (COMMA, PERIOD, QUESTION): scores with the
``iwslt4`` label set, or any score whose other classes have neither references nor
predictions (e.g. test2011 scored with ``full13``). Overall P/R/F are macro averages
(the mean over the three marks), Courtland's and Nagy's definition; ``micro F`` is the
micro-averaged F1 (punctuator2's "Overall") for our rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from punct.errors import MissingDataError, PunctInputError
from punct.extras import require
from punct.score.published import PUBLISHED_DIR
from punct.score.tables import (
    BASELINE,
    KEY_COLUMNS,
    OURS,
    Table,
    data_label,
    published_note,
)

pd = require("pandas", "report", "score tables")  # optional extra: the report tables

CLASSES = ("COMMA", "PERIOD", "QUESTION")
PARTS = ("P", "R", "F")
PR_COLUMNS = [f"{c} {p}" for c in (*CLASSES, "Overall") for p in PARTS]
MICRO = "micro F"


def load_pr_published(name: str, table: str) -> dict[str, Any]:
    """``published/<name>.yaml``; a P/R/F ``table`` (one with ``classes``) must have 12
    values (or null) per row."""
    path = PUBLISHED_DIR / f"{name}.yaml"
    if not path.is_file():
        raise MissingDataError(f"no published figures called {name!r}", path)
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    spec = doc.get("tables", {}).get(table)
    if not spec or "rows" not in spec:
        raise PunctInputError(f"no {table} with rows", path)
    for row, values in spec["rows"].items():
        if "classes" in spec and len(values) != len(PR_COLUMNS):
            raise PunctInputError(f"{table} row {row!r}: {len(values)} values for "
                                  f"{len(PR_COLUMNS)} columns", path)
    return doc


def three_class(score: dict[str, Any]) -> bool:
    """True for a COMMA/PERIOD/QUESTION test: iwslt4, or no other class used at all."""
    classes = score["metrics"]["all"]["punct"]["classes"]
    if not all(c in classes for c in CLASSES):
        return False
    if score["label_set"] == "iwslt4":
        return True
    return all(cnt["support"] == 0 and cnt["predicted"] == 0
               for lab, cnt in classes.items() if lab not in CLASSES)


def _pct(value: float | None) -> float:
    return float("nan") if value is None else 100.0 * float(value)


def pr_values(classes: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Per-class P/R/F and their macro averages (Overall), in percent."""
    row: dict[str, float] = {}
    for cls in CLASSES:
        cnt = classes[cls]
        for part, key in zip(PARTS, ("precision", "recall", "f1"), strict=True):
            row[f"{cls} {part}"] = _pct(cnt[key])
    for part in PARTS:
        row[f"Overall {part}"] = sum(row[f"{c} {part}"] for c in CLASSES) / len(CLASSES)
    return row


def pr_frame(scores: Sequence[dict[str, Any]], doc: dict[str, Any] | None, table: str,
             table_label: str) -> pd.DataFrame:
    """Our 3-class rows, one all-O baseline per test set, then the published rows."""
    records = []
    ours = [s for s in scores if three_class(s)]
    for s in ours:
        m = s["metrics"]["all"]
        row = dict(zip(KEY_COLUMNS, (OURS, s["system"], data_label(s), s["label_set"]),
                       strict=True))
        row.update(pr_values(m["punct"]["classes"]))
        row[MICRO] = _pct(m["micro_f1"])
        records.append(row)
    seen = set()
    for s in ours:
        key = data_label(s)
        if key in seen:
            continue
        seen.add(key)
        row = dict(zip(KEY_COLUMNS, (OURS, BASELINE, key, s["label_set"]), strict=True))
        row.update(dict.fromkeys(PR_COLUMNS, 0.0))  # no predictions: P, R, F all 0
        row[MICRO] = 0.0
        records.append(row)
    if doc:
        source = f"published: {doc['short']} ({table_label})"
        for system, values in doc["tables"][table]["rows"].items():
            row = dict(zip(KEY_COLUMNS, (source, str(system), doc["data"], "iwslt4"),
                           strict=True))
            row.update({col: float("nan") if v is None else float(v)
                        for col, v in zip(PR_COLUMNS, values, strict=True)})
            row[MICRO] = float("nan")
            records.append(row)
    return pd.DataFrame.from_records(records, columns=[*KEY_COLUMNS, *PR_COLUMNS, MICRO])


def table1(scores: Sequence[dict[str, Any]], doc: dict[str, Any] | None) -> Table:
    """Courtland Table 1 layout."""
    return Table(
        "courtland_table1",
        "Courtland 2020 Table 1: P/R/F (%) per class and overall on IWSLT test2011",
        pr_frame(scores, doc, "table1", "Table 1"),
        "Counted over word slots, 3 classes (COMMA, PERIOD, QUESTION). Overall = macro "
        "average (mean of the three classes), as Courtland's own rows (RoBERTa base and "
        "below); rows quoted from earlier papers keep their definitions (punctuator2's "
        "Overall is micro-averaged). micro F = micro-averaged F1 of our systems. Our "
        "systems train on the data of this recipe (see its README: without train2012, on "
        "266k words of dev2012)."
        + published_note(doc),
    )


def table2(scores: Sequence[dict[str, Any]], doc: dict[str, Any] | None) -> Table:
    """Courtland Table 2 layout: predictions per token, overall F1, decoding speed."""
    records = []
    for s in scores:
        if not three_class(s):
            continue
        dec = s.get("decode", {})
        overall = pr_values(s["metrics"]["all"]["punct"]["classes"])["Overall F"]
        records.append({
            "Source": OURS, "System": s["system"], "Data": data_label(s),
            "Predictions per token": dec.get("predictions_per_word", float("nan")),
            "Overall F": overall,
            "Words/s": dec.get("words_per_s", float("nan")),
            "Device": f"{dec.get('device', '?')} x{dec.get('threads', '?')} threads",
        })
    if doc:
        spec = doc["tables"]["table2"]
        for preds, (f1, cpu, gpu) in spec["rows"].items():
            records.append({
                "Source": f"published: {doc['short']} (Table 2)", "System": spec["system"],
                "Data": doc["data"], "Predictions per token": float(preds), "Overall F": f1,
                "Words/s": float("nan"),
                "Device": f"runtime x{cpu} CPU, x{gpu} GPU (relative to 1 prediction)",
            })
    cols = ["Source", "System", "Data", "Predictions per token", "Overall F", "Words/s",
            "Device"]
    return Table(
        "courtland_table2",
        "Courtland 2020 Table 2: overall F1 (%) against predictions per token",
        pd.DataFrame.from_records(records, columns=cols),
        "Overall F = macro F1 over COMMA, PERIOD, QUESTION. Ours: the mean number of "
        "window predictions aggregated per word and the measured decoding speed; published: "
        "runtime relative to one prediction per token"
        + (f" ({doc['tables']['table2']['devices']['CPU']}; "
           f"{doc['tables']['table2']['devices']['GPU']})." if doc else "."),
    )


def build_tables(scores: Sequence[dict[str, Any]]) -> list[Table]:
    """Courtland Tables 1 and 2 with the published figures."""
    doc = load_pr_published("courtland_2020", "table1")
    return [table1(scores, doc), table2(scores, doc)]
