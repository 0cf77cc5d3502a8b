"""The report: tables from scores.json files with the published figures, plots, RESULTS.md."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from punct.bin import report
from punct.labels import PUNCT_LABELS
from punct.score.published import load_published, published_class_f1, published_value
from punct.score.results_md import git_info, render_json

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def fake_group(micro: float, cap: float, class_f1: dict[str, float], words: int = 100,
               labels: tuple[str, ...] = PUNCT_LABELS) -> dict[str, Any]:
    """A metrics group as bin/score writes it, with chosen numbers."""
    classes = {lab: {"tp": 1, "fp": 0, "fn": 0, "precision": class_f1.get(lab, 0.0),
                     "recall": class_f1.get(lab, 0.0), "f1": class_f1.get(lab, 0.0)}
               for lab in labels}
    return {
        "utterances": 10, "words": words,
        "micro_precision": micro, "micro_recall": micro, "micro_f1": micro,
        "macro_f1": micro / 2, "ser": 1 - micro, "punct_slot_accuracy": 0.9,
        "cap_micro_f1": cap, "cap_accuracy": 0.95,
        "punct": {"classes": classes},
        "baseline_all_o": {"micro_f1": 0.0, "micro_precision": 0.0, "micro_recall": 0.0,
                           "macro_f1": 0.0, "ser": 1.0, "punct_slot_accuracy": 0.8,
                           "cap_micro_f1": 0.0, "cap_accuracy": 0.85},
    }


def fake_scores(tmp_path: Path) -> list[Path]:
    a = {
        "system": "sysA", "test_set": "test", "corpus": "mini", "label_set": "full13",
        "labels": list(PUNCT_LABELS), "cap_modelled": True,
        "metrics": {
            "all": fake_group(0.40, 0.90, {"COMMA": 0.5, "PERIOD": 0.8}),
            "en": fake_group(0.50, 0.925, {"COMMA": 0.6}),
            "es": fake_group(0.25, 0.80, {"QUESTION": 0.125}),
        },
        "decode": {"words_per_second": 5000.0, "device": "cpu", "batch_size": 8},
    }
    b = {
        "system": "brnnB", "test_set": "test", "corpus": "mini", "label_set": "iwslt4",
        "labels": ["COMMA", "PERIOD", "QUESTION"], "cap_modelled": False,
        "metrics": {"all": fake_group(0.30, 0.0, {"PERIOD": 0.7}, labels=("COMMA", "PERIOD",
                                                                         "QUESTION"))},
        "decode": {"words_per_second": {"en": 900.0, "es": 1100.0}, "device": "cpu",
                   "batch_size": 16, "cap_modelled": False},
    }
    paths = []
    for doc in (a, b):
        path = tmp_path / "exp" / doc["system"] / "decode_test" / "scores.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(doc), encoding="utf-8")
        paths.append(path)
    return paths


def row(frame: pd.DataFrame, system: str, **where: str) -> pd.Series:
    sel = frame[frame["System"] == system]
    for col, val in where.items():
        sel = sel[sel[col] == val]
    assert len(sel) == 1, (system, where, sel)
    return sel.iloc[0]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("report")
    fake_scores(tmp)
    extra = tmp / "align_eval.json"
    extra.write_text(json.dumps({
        "en": {"boundary_error_ms": {"median": 21.5, "p90": 64.0},
               "pause": {"precision": 0.91, "recall": 0.82, "f1": 0.863}},
        "es": {"boundary_error_ms": {"median": 30.0, "p90": 88.0},
               "pause": {"precision": 0.8, "recall": 0.7, "f1": 0.747}}}), encoding="utf-8")
    out = tmp / "results"
    md = tmp / "RESULTS.md"
    rc = report.main(["--scores", str(tmp / "exp" / "*" / "decode_*" / "scores.json"),
                      "--out-dir", str(out), "--results-md", str(md), "--title", "Mini results",
                      "--extra-json", f"Alignment evaluation={extra}"])
    assert rc == 0
    return {"out": out, "md": md, "tmp": tmp}


def test_table4_ours_and_published(built):
    t4 = pd.read_csv(built["out"] / "table4_micro_f1.csv")
    a = row(t4, "sysA", Source="ours")
    assert (a["EN"], a["ES"], a["ALL"]) == (50.0, 25.0, 40.0)
    assert a["Data"] == "mini/test" and a["Labels"] == "full13"
    assert pd.isna(a["EU"])
    b = row(t4, "brnnB", Source="ours")
    assert b["ALL"] == 30.0 and b["Labels"] == "iwslt4"
    base = row(t4, "all-O baseline", Labels="full13")
    assert base["ALL"] == 0.0
    pub = t4[t4["Source"].str.startswith("published")]
    assert len(pub) == 9
    assert row(pub, "S D G B")["ES+EU"] == 76.4
    assert row(pub, "BRNN")["ES"] == 68.7
    assert row(pub, "- - - -")["EU"] == 76.2
    assert set(pub["Data"]) == {"mintzai-ST test"}
    assert list(t4.columns[4:]) == ["EN", "ES", "EU", "ES+EU", "ALL"]


def test_table5_class_f1(built):
    t5 = pd.read_csv(built["out"] / "table5_class_f1.csv")
    a_all = row(t5, "sysA", Language="ALL")
    assert a_all["COMMA"] == 50.0 and a_all["PERIOD"] == 80.0 and a_all["QUOTE"] == 0.0
    assert row(t5, "sysA", Language="ES")["QUESTION"] == 12.5
    b = row(t5, "brnnB", Language="ALL")
    assert b["PERIOD"] == 70.0 and pd.isna(b["QUOTE"])  # not in the iwslt4 label set
    pub = t5[t5["Source"].str.startswith("published")]
    assert len(pub) == 27
    assert row(pub, "S D U B", Language="EU")["OPEN_QUOTE"] == 59.9
    assert row(pub, "S D G B", Language="ES")["OPEN_QUES"] == 64.8
    assert row(pub, "BRNN", Language="ES+EU")["PERIOD"] == 87.4
    assert pub["OPEN_DASH"].isna().all()  # omitted by the paper
    md = (built["out"] / "table5_class_f1.md").read_text(encoding="utf-8")
    assert "**Language: EU**" in md and "**Language: ALL**" in md


def test_table6_cap_na_and_table7_speed(built):
    t6 = pd.read_csv(built["out"] / "table6_cap_f1.csv", dtype=str, keep_default_na=False)
    assert row(t6, "sysA", Source="ours")["EN"] == "92.5"
    assert row(t6, "brnnB", Source="ours")["ALL"] == "n/a"
    assert row(t6, "S D U B")["ES+EU"] == "91.7"
    assert (t6["System"] == "BRNN").sum() == 0
    t7 = pd.read_csv(built["out"] / "table7_speed.csv")
    a = row(t7, "sysA", Source="ours")
    assert a["ALL"] == 5000.0 and a["Device"] == "cpu" and a["Batch"] == "8"
    b = row(t7, "brnnB", Source="ours")
    assert (b["EN"], b["ES"]) == (900.0, 1100.0)
    brnn = row(t7, "BRNN")
    assert (brnn["EU"], brnn["ES"], brnn["ES+EU"]) == (1729, 2126, 2524)
    assert "2080 Ti" in brnn["Device"]


def test_summary_and_all_formats(built):
    s = pd.read_csv(built["out"] / "summary.csv", dtype=str, keep_default_na=False)
    assert row(s, "sysA")["micro F1"] == "40.0"
    assert row(s, "sysA")["SER"] == "60.0"
    assert row(s, "all-O baseline", Labels="full13")["SER"] == "100.0"
    assert row(s, "brnnB")["cap F1"] == "n/a"
    for name in ("summary", "table4_micro_f1", "table5_class_f1", "table6_cap_f1",
                 "table7_speed"):
        for ext in ("md", "csv", "tex"):
            assert (built["out"] / f"{name}.{ext}").stat().st_size > 0
    tex = (built["out"] / "table4_micro_f1.tex").read_text(encoding="utf-8")
    assert "\\begin{tabular}" in tex and "76.4" in tex


def test_plots_are_valid_png(built):
    import matplotlib.image as mpimg

    for name in ("class_f1.png", "class_pr.png", "lang_micro_f1.png"):
        path = built["out"] / name
        assert path.read_bytes()[:8] == PNG_MAGIC
        img = mpimg.imread(path)
        assert img.ndim == 3 and img.shape[0] > 200 and img.shape[1] > 200


def test_results_md(built):
    text = built["md"].read_text(encoding="utf-8")
    assert text.startswith("# Mini results\n")
    assert git_info()["commit"] in text
    assert "| torch |" in text and "| transformers |" in text and "| python |" in text
    assert "python -m punct.bin.report --scores" in text
    assert "### Table 4: punctuation micro-F1 (%) per language" in text
    assert "| ours " in text and "published: AutoPunct 2021 (Table 4)" in text
    assert "76.4" in text and "68.7" in text
    assert "![class_f1](results/class_f1.png)" in text
    assert "[csv](results/table4_micro_f1.csv)" in text
    # The extra JSON: one row per language, nested keys flattened.
    assert "## Alignment evaluation" in text
    assert "boundary_error_ms.median" in text and "pause.f1" in text
    assert "| en | 21.5 | 64 | 0.91 | 0.82 | 0.863 |" in text


def test_report_errors(tmp_path, capsys):
    assert report.main(["--scores", str(tmp_path / "none*" / "scores.json"),
                        "--out-dir", str(tmp_path / "r")]) == 2
    bad = tmp_path / "scores.json"
    bad.write_text('{"system": "x",\n "oops"}', encoding="utf-8")
    assert report.main(["--scores", str(bad), "--out-dir", str(tmp_path / "r")]) == 1
    assert f"{bad}:2" in capsys.readouterr().err
    bad.write_text('{"system": "x"}', encoding="utf-8")
    assert report.main(["--scores", str(bad), "--out-dir", str(tmp_path / "r")]) == 1
    assert "lacks the key 'test_set'" in capsys.readouterr().err


def test_published_figures():
    doc = load_published()
    assert published_value(doc, "table4", "S D G B", "ES+EU") == 76.4
    assert published_value(doc, "table4", "BRNN", "ES") == 68.7
    assert published_value(doc, "table6", "S D U B", "EU") == 92.2
    assert published_value(doc, "table7", "- - - -", "ES+EU") == 7572
    t5 = published_class_f1(doc)
    assert len(t5) == 3 * 9 * 12 and "OPEN_DASH" not in set(t5["label"])
    hit = t5[(t5.system == "- - - B") & (t5.language == "ES+EU") & (t5.label == "OPEN_EXCL")]
    assert hit["f1"].tolist() == [33.0]


def test_render_json_shapes():
    flat = render_json({"a": 1, "b": "x|y"})
    assert flat == "| key | value |\n|---|---|\n| a | 1 |\n| b | x\\|y |"
    text = render_json({"stages": {"1": 2.5, "2": 12345.678}, "total": 3})
    assert text.startswith("| key | value |\n|---|---|\n| total | 3 |")
    assert "### stages" in text and "| 2 | 12345.7 |" in text
    deep = render_json({"x": {"y": {"z": {"w": [{"a": 1}, {"a": 2, "b": None}]}}}})
    assert "### x" in deep and "#### y" in deep and "###### w" in deep
    assert "| # | a | b |" in deep and "| 1 | 2 | – |" in deep


def test_git_info_on_a_temporary_repository(tmp_path):
    def git(*args: str) -> str:
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                              cwd=tmp_path, check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    assert git_info(tmp_path)["commit"].startswith("unknown (no commits")
    (tmp_path / "f").write_text("1", encoding="utf-8")
    git("add", "f")
    git("commit", "-q", "-m", "x")
    head = git("rev-parse", "HEAD").strip()
    assert git_info(tmp_path) == {"commit": head, "dirty": False}
    (tmp_path / "f").write_text("2", encoding="utf-8")
    assert git_info(tmp_path) == {"commit": head, "dirty": True}
    # the files a report is writing (RESULTS.md, results/) do not make the tree dirty
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "t.md").write_text("a", encoding="utf-8")
    git("add", "results/t.md")
    git("commit", "-q", "-am", "y")
    head = git("rev-parse", "HEAD").strip()
    (tmp_path / "results" / "t.md").write_text("b", encoding="utf-8")
    assert git_info(tmp_path)["dirty"] is True
    assert git_info(tmp_path, [tmp_path / "results"]) == {"commit": head, "dirty": False}
    (tmp_path / "f").write_text("3", encoding="utf-8")
    assert git_info(tmp_path, [tmp_path / "results"])["dirty"] is True
