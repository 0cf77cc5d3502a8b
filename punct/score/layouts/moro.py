"""Moró & Szaszák (2017) layouts: Table 2 (P/R/F1 of comma and period, SER, SMR) and the
feature-stream ablation plot (Fig. 2). The PR operating curves (Fig. 1) need the decoder's
probabilities: ``python -m punct.bin.pr_curves``.

Our rows: every system of the ``prosodic_pp`` family (``decode.family`` in scores.json, or a
system name starting with ``prosodic_pp``), scored with the ``moro2`` label set, per
metric group (ALL and the languages). SMR (Slot Miss Ratio) = unmatched PP slots / word
slots with a reference mark, and Miss = reference-marked word slots that no PP end covers
/ the same; both come from the PP slot statistics (``decode.pp`` in scores.json, from
the decoder's ``decode.json``; ``pp_stats.json`` beside the hypothesis, which
``pr_curves`` wrote before, is still read), for the whole test set only. All figures in
percent (the paper's fractions x 100).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from punct.extras import require
from punct.score.figure import new_figure, save_png
from punct.score.tables import KEY_COLUMNS, OURS, Table, column_of, data_label, groups_of

pd = require("pandas", "report", "score tables")  # optional extra: the report tables

PUBLISHED = Path(__file__).resolve().parent.parent / "published" / "moro_2017.yaml"
FAMILY = "prosodic_pp"
METRIC_COLUMNS = ("COMMA Pr", "COMMA Rc", "COMMA F1", "PERIOD Pr", "PERIOD Rc", "PERIOD F1",
                  "SER", "SMR", "Miss")
ABLATION_ORDER = ("labelonly", "nopause")


def is_prosodic_pp(score: dict[str, Any]) -> bool:
    family = (score.get("decode") or {}).get("family")
    return family == FAMILY or (family is None and str(score["system"]).startswith(FAMILY))


def pp_stats(score: dict[str, Any]) -> dict[str, Any] | None:
    """PP slot statistics of a scored decode (None when absent)."""
    stats = (score.get("decode") or {}).get("pp")
    if stats:
        return stats
    hyp = score.get("hyp")
    path = Path(hyp).parent / "pp_stats.json" if hyp else None
    if path is not None and path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    return None


def load_published() -> dict[str, Any]:
    with open(PUBLISHED, encoding="utf-8") as f:
        return yaml.safe_load(f)


def _pct(value: Any) -> float:
    return float("nan") if value is None else 100.0 * float(value)


def _row(score: dict[str, Any], group: str) -> dict[str, Any]:
    m = score["metrics"][group]
    classes = m["punct"]["classes"]
    row = dict(zip(KEY_COLUMNS, (OURS, score["system"], data_label(score), score["label_set"]),
                   strict=True))
    row["Group"] = column_of(group)
    stats = pp_stats(score) if group == "all" else None
    row["logP_ins"] = (stats or {}).get("insertion", float("nan"))
    for lab in ("COMMA", "PERIOD"):
        c = classes.get(lab)
        row[f"{lab} Pr"] = _pct(c["precision"]) if c else float("nan")
        row[f"{lab} Rc"] = _pct(c["recall"]) if c else float("nan")
        row[f"{lab} F1"] = _pct(c["f1"]) if c else float("nan")
    row["SER"] = _pct(m.get("ser"))
    row["SMR"] = _pct((stats or {}).get("smr"))
    row["Miss"] = _pct((stats or {}).get("missed_punct_ratio"))
    return row


def table2(scores: Sequence[dict[str, Any]], doc: dict[str, Any] | None) -> Table:
    """Table 2 layout: our prosodic_pp systems beside the published rows."""
    ours = [s for s in scores if is_prosodic_pp(s)]
    records = [_row(s, g) for s in ours for g in groups_of([s])]
    if doc:
        spec = doc["tables"]["table2"]
        for system, values in spec["rows"].items():
            vals = dict(zip(spec["columns"], values, strict=True))
            row = dict(zip(KEY_COLUMNS, (f"published: {doc['short']} (Table 2)", system,
                                         doc["data"], "moro2"), strict=True))
            row["Group"] = "HU"
            row["logP_ins"] = -50.0 if "sparse" in system else 0.0
            for lab in ("comma", "period"):
                for short, col in (("pr", "Pr"), ("rc", "Rc"), ("f1", "F1")):
                    row[f"{lab.upper()} {col}"] = 100.0 * vals[f"{lab}_{short}"]
            row["SER"], row["SMR"], row["Miss"] = vals["ser"], vals["smr"], float("nan")
            records.append(row)
    frame = pd.DataFrame.from_records(
        records, columns=[*KEY_COLUMNS, "Group", "logP_ins", *METRIC_COLUMNS])
    note = ("Word-slot P/R/F1 of comma and period (moro2 labels) and SER (%); PP slots are "
            "mapped to word slots (unmatched PP slots dropped, uncovered word slots = O). "
            "SMR = unmatched PP slots / reference-marked word slots; Miss = reference-marked "
            "word slots with no PP end / the same (both for the whole set). logP_ins: PP "
            "insertion log-likelihood (0 dense, -50 sparse).")
    if doc:
        note += f" Published rows: {doc['short']}, {doc['data']} ({doc['data_note']})."
    return Table("moro_table2", "Moró & Szaszák Table 2: punctuation of PP slots (%)", frame,
                 note)


def build_tables(scores: Sequence[dict[str, Any]]) -> list[Table]:
    """The Moró & Szaszák tables."""
    return [table2(scores, load_published())]


def _ablation_rank(system: str) -> tuple[int, str]:
    for k, name in enumerate(ABLATION_ORDER):
        if system.endswith(name):
            return (k, system)
    return (len(ABLATION_ORDER), system)


def make_plots(scores: Sequence[dict[str, Any]], out_dir: Path) -> list[Path]:
    """Fig. 2 layout: P/R/F1 of comma and period per prosodic_pp system (bar chart)."""
    out: list[Path] = []
    ours = [s for s in scores if is_prosodic_pp(s)]
    for data in sorted({data_label(s) for s in ours}):
        systems = sorted((s for s in ours if data_label(s) == data),
                         key=lambda s: _ablation_rank(str(s["system"])))
        fig = new_figure((9, 4))
        axes = fig.subplots(1, 2, sharey=True)
        width = 0.8 / max(len(systems), 1)
        for ax, lab in zip(axes, ("COMMA", "PERIOD"), strict=True):
            for k, s in enumerate(systems):
                c = s["metrics"]["all"]["punct"]["classes"].get(lab)
                vals = [c["precision"], c["recall"], c["f1"]] if c else [0.0, 0.0, 0.0]
                ax.bar([i + k * width for i in range(3)], vals, width, label=s["system"])
            ax.set_xticks([i + 0.4 - width / 2 for i in range(3)], ["P", "R", "F1"])
            ax.set_title(lab.lower())
            ax.set_ylim(0, 1)
            ax.grid(axis="y", alpha=0.3)
        axes[0].legend(fontsize=7, loc="lower left")
        fig.suptitle(f"Feature streams of the PP slots ({data})")
        fig.tight_layout()
        path = Path(out_dir) / f"moro_fig2_feature_streams_{data.replace('/', '_')}.png"
        out.append(save_png(fig, path))
    return out
