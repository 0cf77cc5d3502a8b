"""Courtland Table 1/2 and Nagy Table 4 layouts, and their published figures."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from punct.bin import report
from punct.labels import PUNCT_LABELS
from punct.score.layouts import available_layouts, layout_tables
from punct.score.layouts.courtland import CLASSES, PR_COLUMNS, load_pr_published, three_class


def counts(tp: int, fp: int, fn: int) -> dict[str, Any]:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"tp": tp, "fp": fp, "fn": fn, "support": tp + fn, "predicted": tp + fp,
            "precision": p, "recall": r, "f1": f}


def score(system: str, label_set: str = "iwslt4", extra: dict[str, Any] | None = None
          ) -> dict[str, Any]:
    """A scores.json document: COMMA 6/10 predicted right of 12, PERIOD 8/8 of 16,
    QUESTION 0 predicted of 2."""
    classes = {"COMMA": counts(6, 4, 6), "PERIOD": counts(8, 0, 8), "QUESTION": counts(0, 0, 2)}
    if label_set == "full13":
        classes.update({lab: counts(0, 0, 0) for lab in PUNCT_LABELS if lab not in classes})
        classes.update(extra or {})
    tp, fp, fn = 14, 4, 16
    return {
        "system": system, "test_set": "test2011", "corpus": "iwslt2012",
        "label_set": label_set,
        "metrics": {"all": {"punct": {"classes": classes},
                            "micro_f1": 2 * tp / (2 * tp + fp + fn)}},
        "decode": {"predictions_per_word": 2.0, "words_per_s": 1234.0, "device": "cpu",
                   "threads": 2},
    }


def row(frame: Any, system: str) -> dict[str, Any]:
    rows = frame[frame["System"] == system].to_dict("records")
    assert len(rows) == 1, rows
    return rows[0]


def test_layouts_are_registered() -> None:
    assert {"courtland", "nagy"} <= set(available_layouts())


def test_courtland_table1_our_row_by_hand() -> None:
    tables = layout_tables("courtland", [score("brnn_text")])
    assert [t.name for t in tables] == ["courtland_table1", "courtland_table2"]
    ours = row(tables[0].frame, "brnn_text")
    assert ours["COMMA P"] == pytest.approx(60.0)
    assert ours["COMMA R"] == pytest.approx(50.0)
    assert ours["COMMA F"] == pytest.approx(100 * 6 / 11)
    assert (ours["PERIOD P"], ours["PERIOD R"]) == (pytest.approx(100.0), pytest.approx(50.0))
    assert ours["QUESTION F"] == 0.0
    assert ours["Overall P"] == pytest.approx((60 + 100 + 0) / 3)
    assert ours["Overall F"] == pytest.approx((100 * 6 / 11 + 100 * 2 / 3) / 3)
    assert ours["micro F"] == pytest.approx(100 * 28 / 48)
    baseline = row(tables[0].frame, "all-O baseline")
    assert baseline["Overall F"] == 0.0
    roberta = row(tables[0].frame, "RoBERTa base")
    assert roberta["Source"] == "published: Courtland 2020 (Table 1)"
    assert roberta["Overall F"] == 83.9
    assert math.isnan(row(tables[0].frame, "DNN-A (Che et al., 2016)")["QUESTION P"])
    table2 = tables[1].frame
    assert table2[table2["Source"] == "ours"]["Predictions per token"].tolist() == [2.0]
    assert sorted(table2["Predictions per token"].tolist()) == [1.0, 2.0, 2.0, 3.0, 6.0, 9.0]


def test_three_class_selection() -> None:
    assert three_class(score("a"))
    assert three_class(score("b", "full13"))  # test2011 scored with full13: no other class
    assert not three_class(score("c", "full13", {"COLON": counts(0, 0, 5)}))
    tables = layout_tables("nagy", [score("a"), score("c", "full13", {"COLON": counts(1, 0, 0)})])
    ours = tables[0].frame[tables[0].frame["Source"] == "ours"]
    assert ours["System"].tolist() == ["a", "all-O baseline"]


def test_nagy_table4_published_rows() -> None:
    (table,) = layout_tables("nagy", [score("x")])
    assert table.name == "nagy_table4"
    best = row(table.frame, "BERT-base-uncased (by F1-score)")
    assert (best["COMMA R"], best["Overall F"]) == (80.7, 79.8)
    assert len(table.frame) == 2 + 8


@pytest.mark.parametrize(("name", "table", "macro_rows"), [
    ("courtland_2020", "table1", ["RoBERTa base", "XLNet base", "BERT base", "DistilRoBERTa"]),
    ("nagy_2021", "table4", None),
])
def test_published_overall_is_the_macro_average(name: str, table: str,
                                                macro_rows: list[str] | None) -> None:
    """A transcription check: Overall P/R/F = mean of the classes, within rounding."""
    rows = load_pr_published(name, table)["tables"][table]["rows"]
    for system in macro_rows or list(rows):
        values = dict(zip(PR_COLUMNS, rows[system], strict=True))
        for part in ("P", "R", "F"):
            mean = sum(values[f"{c} {part}"] for c in CLASSES) / 3
            assert abs(mean - values[f"Overall {part}"]) <= 0.11, (system, part)


def test_report_cli_writes_the_layouts(tmp_path: Path) -> None:
    path = tmp_path / "exp" / "brnn_text" / "decode_test2011" / "scores.json"
    path.parent.mkdir(parents=True)
    doc = score("brnn_text")
    doc["metrics"]["all"].update({"utterances": 1, "words": 100, "macro_f1": 0.4})
    path.write_text(json.dumps(doc), encoding="utf-8")
    out = tmp_path / "results"
    rc = report.main(["--scores", str(path), "--out-dir", str(out), "--layouts",
                      "courtland,nagy", "--no-plots"])
    assert rc == 0
    md = (out / "courtland_table1.md").read_text()
    assert "| ours " in md and "RoBERTa base" in md
    assert "published:" in (out / "nagy_table4.md").read_text()
    assert (out / "nagy_table4.csv").is_file()
    # --published none leaves the published rows out of every layout
    bare = tmp_path / "bare"
    assert report.main(["--scores", str(path), "--out-dir", str(bare), "--layouts",
                        "courtland,nagy", "--published", "none", "--no-plots"]) == 0
    for name in ("courtland_table1", "courtland_table2", "nagy_table4"):
        sources = pd.read_csv(bare / f"{name}.csv")["Source"].astype(str)
        assert not sources.str.startswith("published").any(), name
        assert "Published rows left out" in (bare / f"{name}.md").read_text()
    assert "| ours " in (bare / "courtland_table1.md").read_text()
