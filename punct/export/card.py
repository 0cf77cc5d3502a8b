"""The model card (README.md) of an exported system: what it is, its data, its scores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCORE_COLUMNS = (("micro_f1", "micro-F1"), ("macro_f1", "macro-F1"),
                 ("cap_micro_f1", "cap micro-F1"), ("ser", "SER"))


def find_scores(exp_dir: Path) -> list[dict[str, Any]]:
    """The ``scores.json`` documents of an experiment (its own and its decode dirs')."""
    docs = []
    for path in [exp_dir / "scores.json", *sorted(exp_dir.glob("*/scores.json"))]:
        if path.is_file():
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError:
                continue
            if isinstance(doc, dict) and isinstance(doc.get("metrics"), dict):
                doc.setdefault("test_set", path.parent.name)
                docs.append(doc)
    return docs


def _fmt(value: Any, percent: bool) -> str:
    if not isinstance(value, int | float):
        return "n/a"
    return f"{100 * value:.1f}" if percent else f"{value:.3f}"


def scores_table(docs: list[dict[str, Any]]) -> str:
    """A Markdown table: one row per test set (group ``all``), F1 in percent, SER as is."""
    head = "| test set | corpus | words | " + " | ".join(n for _, n in SCORE_COLUMNS) + " |"
    lines = [head, "|" + "---|" * (3 + len(SCORE_COLUMNS))]
    for doc in docs:
        m = doc["metrics"].get("all", {})
        cells = [_fmt(m.get(k), k != "ser") for k, _ in SCORE_COLUMNS]
        if not doc.get("cap_modelled", True):
            cells[2] = "n/a"
        lines.append(f"| {doc.get('test_set')} | {doc.get('corpus') or ''} | "
                     f"{m.get('words', '')} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def training_data(exp_dir: Path, given: str | None) -> str:
    """The training data as given, else what the experiment recorded, else unknown."""
    if given:
        return given
    for name in ("train_data.txt", "data.txt"):
        if (exp_dir / name).is_file():
            return (exp_dir / name).read_text(encoding="utf-8").strip()
    return (f"not recorded (experiment `{exp_dir.name}`; see its recipe and train.log)")


def model_card(exp_dir: Path, doc: dict[str, Any], train_data: str | None = None) -> str:
    """README.md text for the exported system described by ``doc`` (its config.json)."""
    scores = find_scores(exp_dir)
    rule = ("one mark per word, argmax" if doc["decision_rule"] == "argmax"
            else "a mark when its probability reaches its threshold")
    thr = doc.get("thresholds")
    thr_text = (", ".join(f"{k} {v:g}" for k, v in thr.items()) if thr
                else f"{doc['decode'].get('threshold', 0.5)} for every mark")
    lines = [
        "---",
        "library_name: punct-recipes",
        "tags: [punctuation-restoration, capitalisation, token-classification]",
        "---",
        "",
        f"# {exp_dir.name}: punctuation and casing restoration ({doc['family']})",
        "",
        f"Exported from `{exp_dir.name}` by punct-recipes {doc['punct_version']}.",
        "",
        "```python",
        "from punct import Restorer",
        'restorer = Restorer.from_pretrained("path/to/this/dir")',
        'print(restorer.restore("hello how are you today"))',
        "```",
        "",
        "## System",
        f"- family: `{doc['family']}`",
        f"- label set: `{doc['label_set']}` ({', '.join(doc['labels'])})",
        f"- decision rule: {rule}; thresholds: {thr_text}",
        f"- acoustic streams: {', '.join(doc['streams']) or 'none (text and word timings)'}",
        "",
        "## Training data",
        training_data(exp_dir, train_data),
        "",
        "## Scores",
        scores_table(scores) if scores else "No scores.json in the experiment directory.",
        "",
    ]
    return "\n".join(lines)
