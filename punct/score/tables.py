"""Comparison tables built from ``scores.json`` files, with the published figures beside ours.

Every table is a pandas DataFrame whose rows say where each number comes from
(``Source``: ours or the paper and table; ``Data``: the corpus/test set it is measured on;
``Labels``: the label set). Rates are shown in percent. Tables are written as
Markdown, CSV and LaTeX.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from punct.errors import MissingDataError, PunctInputError
from punct.extras import require
from punct.labels import PUNCT_LABELS
from punct.score.published import published_class_f1, published_scalar

pd = require("pandas", "report", "score tables")  # optional extra: the report tables

OURS = "ours"
BASELINE = "all-O baseline"
LANG_ORDER = ("en", "es", "eu", "hu")
NA = "n/a"
MISSING = "–"
KEY_COLUMNS = ("Source", "System", "Data", "Labels")


@dataclass
class Table:
    """One comparison table: its file stem, title, content and how to show it."""

    name: str
    title: str
    frame: pd.DataFrame
    note: str = ""
    decimals: int = 1
    split_by: str | None = None


def without_published(tables: Iterable[Table]) -> list[Table]:
    """The tables with their published rows (``Source`` "published: ...") left out."""
    out = []
    for table in tables:
        if "Source" in table.frame.columns:
            ours = ~table.frame["Source"].astype(str).str.startswith("published")
            table = dataclasses.replace(
                table, frame=table.frame[ours].reset_index(drop=True),
                note=(table.note + " Published rows left out (--published none).").strip())
        out.append(table)
    return out


# ---------------------------------------------------------------- loading


def load_scores(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Read ``scores.json`` files (sorted by test set, then system); check their keys."""
    out = []
    for path in paths:
        path = Path(path)
        if not path.is_file():
            raise MissingDataError("scores file not found", path)
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise PunctInputError(f"invalid JSON: {err.msg}", path, err.lineno) from None
        for key in ("system", "test_set", "label_set", "metrics"):
            if key not in doc:
                raise PunctInputError(f"scores file lacks the key {key!r}", path)
        if "all" not in doc["metrics"]:
            raise PunctInputError("scores file has no 'all' metrics", path)
        doc["_path"] = str(path)
        out.append(doc)
    out.sort(key=lambda d: (data_label(d), d["label_set"], d["system"]))
    return out


def data_label(score: dict[str, Any]) -> str:
    """What our numbers are measured on: ``corpus/test_set`` (or the test set alone)."""
    corpus = score.get("corpus")
    return f"{corpus}/{score['test_set']}" if corpus else str(score["test_set"])


def column_of(group: str) -> str:
    """Column header of a metrics group: ``all`` -> ``ALL``, ``es+eu`` -> ``ES+EU``."""
    return "ALL" if group == "all" else group.upper()


def _group_rank(group: str) -> tuple[int, int, str]:
    if group == "all":
        return (3, 0, group)
    if "+" in group:
        return (2, 0, group)
    if group in LANG_ORDER:
        return (0, LANG_ORDER.index(group), group)
    return (1, 0, group)


def groups_of(scores: Sequence[dict[str, Any]]) -> list[str]:
    """All metric groups of the scores, languages first, ``all`` last."""
    groups = {g for s in scores for g in s["metrics"]}
    return sorted(groups, key=_group_rank)


def _columns(scores: Sequence[dict[str, Any]], published: Sequence[str]) -> list[str]:
    groups = set(groups_of(scores)) | {c.lower() for c in published}
    groups.add("all")
    return [column_of(g) for g in sorted(groups, key=_group_rank)]


def _pct(value: Any) -> float:
    return float("nan") if value is None else 100.0 * float(value)


def published_note(doc: dict[str, Any] | None) -> str:
    """Where the published rows come from (for table notes)."""
    if not doc:
        return ""
    text = f" Published rows: {doc['short']}, data {doc['data']}"
    if doc.get("data_note"):
        text += f" ({doc['data_note']})"
    if doc.get("row_legend"):
        text += f"; {doc['row_legend']}"
    return text + "."


def _source(doc: dict[str, Any], table: str) -> str:
    return f"published: {doc['short']} ({table.replace('table', 'Table ')})"


def _baselines(scores: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One score per (data, label set): its all-O baseline figures stand for that test set."""
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for s in scores:
        seen.setdefault((data_label(s), s["label_set"]), s)
    return list(seen.values())


def _key(source: str, system: str, data: str, labels: str) -> dict[str, Any]:
    return dict(zip(KEY_COLUMNS, (source, system, data, labels), strict=True))


def cap_modelled(score: dict[str, Any]) -> bool:
    """False when the system does not model capitalisation (its cap figures are n/a)."""
    flag = score.get("cap_modelled", score.get("decode", {}).get("cap_modelled", True))
    return bool(flag)


# ---------------------------------------------------------------- tables


def _scalar_table(
    scores: Sequence[dict[str, Any]], doc: dict[str, Any] | None, table: str, metric: str,
) -> pd.DataFrame:
    pub_cols = list(doc["tables"][table]["columns"]) if doc else []
    cols = _columns(scores, pub_cols)
    records = []
    for s in scores:
        row = _key(OURS, s["system"], data_label(s), s["label_set"])
        na = metric.startswith("cap_") and not cap_modelled(s)
        for group, m in s["metrics"].items():
            row[column_of(group)] = NA if na else _pct(m.get(metric))
        records.append(row)
    for s in _baselines(scores):
        row = _key(OURS, BASELINE, data_label(s), s["label_set"])
        for group, m in s["metrics"].items():
            row[column_of(group)] = _pct(m["baseline_all_o"].get(metric))
        records.append(row)
    if doc:
        pub = published_scalar(doc, table)
        for system, values in pub.iterrows():
            row = _key(_source(doc, table), str(system), doc["data"], "full13")
            row.update({col: float(values[col]) for col in pub.columns})
            records.append(row)
    return pd.DataFrame.from_records(records, columns=[*KEY_COLUMNS, *cols])


def table4_micro_f1(scores: Sequence[dict[str, Any]], doc: dict[str, Any] | None) -> Table:
    """AutoPunct Table 4 layout: punctuation micro-F1 per language."""
    return Table(
        "table4_micro_f1",
        "Table 4: punctuation micro-F1 (%) per language",
        _scalar_table(scores, doc, "table4", "micro_f1"),
        "micro-F1 over all marks of the label set (O excluded), counted label by label over "
        "word slots. Our columns are the languages of our test sets (utt2lang); ES+EU = "
        "Spanish and Basque utterances together; ALL = the whole test set. Published "
        "columns: the paper's EU and ES test sets, and both with one ES+EU model."
        + asr_note(scores) + published_note(doc),
    )


def table6_cap_f1(scores: Sequence[dict[str, Any]], doc: dict[str, Any] | None) -> Table:
    """AutoPunct Table 6 layout: capitalisation micro-F1 (FIRST_CAP, ALL_CAPS)."""
    return Table(
        "table6_cap_f1",
        "Table 6: capitalisation micro-F1 (%) over FIRST_CAP and ALL_CAPS",
        _scalar_table(scores, doc, "table6", "cap_micro_f1"),
        f"{NA} = the system does not model capitalisation. The paper's BRNN does not "
        "capitalise and has no row." + asr_note(scores) + published_note(doc),
    )


def table5_class_f1(scores: Sequence[dict[str, Any]], doc: dict[str, Any] | None) -> Table:
    """AutoPunct Table 5 layout: class-wise F1 per system and language."""
    used = {lab for s in scores for lab in s.get("labels", ())}
    if doc:
        used |= set(doc["tables"]["table5"]["columns"])
    labels = [lab for lab in PUNCT_LABELS if lab in used]
    records = []
    for s in scores:
        for group, m in s["metrics"].items():
            row = _key(OURS, s["system"], data_label(s), s["label_set"])
            row["Language"] = column_of(group)
            for lab, cnt in m["punct"]["classes"].items():
                row[lab] = _pct(cnt["f1"])
            records.append(row)
    if doc:
        pub = published_class_f1(doc)
        for (system, lang), part in pub.groupby(["system", "language"], sort=False):
            row = _key(_source(doc, "table5"), str(system), doc["data"], "full13")
            row["Language"] = str(lang)
            row.update(dict(zip(part["label"], part["f1"].astype(float), strict=True)))
            records.append(row)
    frame = pd.DataFrame.from_records(records, columns=[*KEY_COLUMNS, "Language", *labels])
    order = {col: i for i, col in enumerate(_columns(scores, doc["languages"] if doc else []))}
    frame["_lang"] = frame["Language"].map(order)
    frame["_ours"] = frame["Source"] != OURS
    frame = frame.sort_values(["_lang", "_ours"], kind="stable").drop(columns=["_lang", "_ours"])
    omitted = ", ".join(doc["tables"]["table5"].get("omitted", [])) if doc else ""
    note = "F1 per mark (%), counted label by label over word slots." + asr_note(scores)
    if omitted:
        note += f" {MISSING} in a published row: the paper omits {omitted} (F1 0.0 everywhere)."
    note += published_note(doc)
    return Table("table5_class_f1", "Table 5: class-wise punctuation F1 (%)",
                 frame.reset_index(drop=True), note, split_by="Language")


def table7_speed(scores: Sequence[dict[str, Any]], doc: dict[str, Any] | None) -> Table:
    """AutoPunct Table 7 layout: decoding speed in words per second, device and batch noted."""
    pub_cols = list(doc["tables"]["table7"]["columns"]) if doc else []
    cols = _columns(scores, pub_cols)
    records = []
    for s in scores:
        dec = s.get("decode", {})
        wps = dec.get("words_per_second")
        if wps is None:
            continue
        row = _key(OURS, s["system"], data_label(s), s["label_set"])
        row["Device"] = dec.get("device", MISSING)
        row["Batch"] = str(dec.get("batch_size", MISSING))
        if isinstance(wps, dict):
            row.update({column_of(str(k).lower()): float(v) for k, v in wps.items()})
        else:
            row["ALL"] = float(wps)
        records.append(row)
    if doc:
        spec = doc["tables"]["table7"]
        for system, values in published_scalar(doc, "table7").iterrows():
            row = _key(_source(doc, "table7"), str(system), doc["data"], "full13")
            row["Device"] = spec["device"]
            row["Batch"] = str(spec["batch_size"])
            row.update({col: float(values[col]) for col in values.index})
            records.append(row)
    frame = pd.DataFrame.from_records(records, columns=[*KEY_COLUMNS, "Device", "Batch", *cols])
    return Table("table7_speed", "Table 7: decoding speed (words per second)", frame,
                 "Ours: measured while decoding the whole test set (ALL), on the device and "
                 "batch size noted. Published: the paper's GPU figures (approximate, by its "
                 "own account)." + published_note(doc), decimals=0)


SUMMARY_METRICS: tuple[tuple[str, str], ...] = (
    ("micro P", "micro_precision"),
    ("micro R", "micro_recall"),
    ("micro F1", "micro_f1"),
    ("macro F1", "macro_f1"),
    ("SER", "ser"),
    ("slot acc", "punct_slot_accuracy"),
    ("cap F1", "cap_micro_f1"),
    ("cap acc", "cap_accuracy"),
)
TEXT_METRICS: tuple[tuple[str, str], ...] = (("BLEU", "bleu"), ("chrF", "chrf"), ("TER", "ter"))
"""sacrebleu scores of the restored cased text (``scores["text"]``, already in %)."""


def _text_values(text: dict[str, Any] | None) -> dict[str, float]:
    text = text or {}
    return {col: float(text[key]) if key in text else float("nan") for col, key in TEXT_METRICS}


def asr_note(scores: Sequence[dict[str, Any]]) -> str:
    """The note of tables that hold scores of ASR hypotheses (words aligned), else ""."""
    if not any("asr" in s["metrics"]["all"] for s in scores):
        return ""
    return (" WER: the hypothesis words differ from the reference (ASR); they are aligned by "
            "edit distance and scored over the aligned word slots (Words = reference words "
            "plus inserted words): a mark of a deleted reference word is a false negative, "
            "a mark on an inserted word a false positive (docs/ASR.md).")


def _wer(score: dict[str, Any]) -> float:
    asr = score["metrics"]["all"].get("asr") or {}
    return _pct(asr.get("wer")) if asr else float("nan")


def summary_table(scores: Sequence[dict[str, Any]]) -> Table:
    """All headline metrics of our systems on whole test sets, with the all-O baseline
    (and the WER where some scores are of ASR hypotheses)."""
    with_wer = bool(asr_note(scores))
    records = []
    for s in scores:
        m = s["metrics"]["all"]
        row = _key(OURS, s["system"], data_label(s), s["label_set"])
        row["Words"] = m["words"]
        if with_wer:
            row["WER"] = _wer(s)
        for col, key in SUMMARY_METRICS:
            na = key.startswith("cap_") and not cap_modelled(s)
            row[col] = NA if na else _pct(m.get(key))
        row.update(_text_values(s.get("text")))
        records.append(row)
    for s in _baselines(scores):
        m = s["metrics"]["all"]
        row = _key(OURS, BASELINE, data_label(s), s["label_set"])
        row["Words"] = m["words"]
        if with_wer:
            row["WER"] = _wer(s)
        base = m.get("baseline_all_o") or {}
        row.update({col: _pct(base.get(key)) for col, key in SUMMARY_METRICS})
        row.update(_text_values((s.get("text") or {}).get("baseline")))
        records.append(row)
    cols = [*KEY_COLUMNS, "Words", *(["WER"] if with_wer else []),
            *(c for c, _ in SUMMARY_METRICS), *(c for c, _ in TEXT_METRICS)]
    frame = pd.DataFrame.from_records(records, columns=cols).drop(columns=["Source"])
    return Table(
        "summary", "Summary: our systems on the whole test sets (%)", frame,
        "micro P/R/F1 over the marks (O excluded); macro F1 = mean F1 over all marks of the "
        "label set (Nagy); SER = (S+D+I)/(C+S+D) over punctuation slots; slot acc = share of "
        "words with exactly the right marks; cap F1 = micro F1 over FIRST_CAP and ALL_CAPS. "
        "BLEU, chrF, TER: sacrebleu (13a tokens, character 6-grams, case-sensitive TER) of the "
        "restored cased text against the reference text; the all-O baseline is the "
        "lower-cased text without marks." + asr_note(scores),
    )


def build_tables(scores: Sequence[dict[str, Any]], doc: dict[str, Any] | None) -> list[Table]:
    """All comparison tables, in the order they appear in RESULTS.md."""
    return [
        summary_table(scores),
        table4_micro_f1(scores, doc),
        table5_class_f1(scores, doc),
        table6_cap_f1(scores, doc),
        table7_speed(scores, doc),
    ]


# ---------------------------------------------------------------- rendering


def display_frame(table: Table) -> pd.DataFrame:
    """Strings for Markdown/LaTeX: numbers rounded, missing values as a dash."""

    def fmt(value: Any) -> str:
        if isinstance(value, float):
            return MISSING if math.isnan(value) else f"{value:.{table.decimals}f}"
        if value is None:
            return MISSING
        return str(value)

    return table.frame.map(fmt)


def _md(frame: pd.DataFrame) -> str:
    left = {*KEY_COLUMNS, "Language", "Device", "Batch"}
    align = tuple("left" if col in left else "right" for col in frame.columns)
    return frame.to_markdown(index=False, disable_numparse=True, colalign=align)


def to_markdown(table: Table, heading: str = "###") -> str:
    """The table as Markdown (split into sub-tables by ``split_by`` when set)."""
    parts = [f"{heading} {table.title}", ""]
    if table.note:
        parts += [table.note, ""]
    shown = display_frame(table)
    if table.frame.empty:
        parts.append("(no rows)")
    elif table.split_by:
        for value, part in shown.groupby(table.split_by, sort=False):
            parts += [f"**{table.split_by}: {value}**", ""]
            parts += [_md(part.drop(columns=[table.split_by])), ""]
    else:
        parts.append(_md(shown))
    return "\n".join(parts).rstrip() + "\n"


def write_table(table: Table, out_dir: str | Path) -> list[Path]:
    """Write ``<name>.md``, ``<name>.csv`` and ``<name>.tex`` into ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    md, csv, tex = (out_dir / f"{table.name}.{ext}" for ext in ("md", "csv", "tex"))
    md.write_text(to_markdown(table, "#"), encoding="utf-8")
    table.frame.map(lambda v: round(v, 2) if isinstance(v, float) else v).to_csv(
        csv, index=False)
    tex.write_text(
        display_frame(table).to_latex(index=False, escape=True, caption=table.title),
        encoding="utf-8",
    )
    return [md, csv, tex]
