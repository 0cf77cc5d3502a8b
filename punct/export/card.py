"""The model card (README.md) of an exported system: what it is, its data, its scores."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
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


def selection_section(selection: Sequence[tuple[str, float]], dev_set: str) -> list[str]:
    """Lines saying which systems competed on ``dev_set`` and which won (first)."""
    lines = ["## Selection",
             f"Chosen as the best of {len(selection)} systems by micro-F1 on the validation "
             f"set `{dev_set}` (test sets never enter the choice):", "",
             "| system | dev micro-F1 |", "|---|---|"]
    lines += [f"| {'**' + name + '**' if i == 0 else name} | {100 * f1:.1f} |"
              for i, (name, f1) in enumerate(selection)]
    return [*lines, ""]


TRAINING_FIELDS = (("train_minutes", "training time (minutes)"), ("epochs", "epochs"),
                   ("best_epoch", "best epoch (on dev)"), ("device", "device"),
                   ("cpu", "CPU"), ("threads", "threads"), ("precision", "precision"),
                   ("git_sha", "commit"))


def _cell(value: Any) -> str:
    return "not recorded" if value is None else str(value)


def training_section(training: Mapping[str, Any]) -> list[str]:
    """Lines with the training record (``punct.score.training.system_training``); for a
    weight soup, what it averages and the record of each of those systems
    (``training["ingredients"]``: system -> record)."""
    if training.get("soup_of"):
        lines = ["## Training",
                 f"Not trained: the mean of the weights of {training['soup_of']} (a weight "
                 f"soup, built in {training.get('train_minutes')} minutes at commit "
                 f"{training.get('git_sha')}). Their training:", ""]
        ingredients = training.get("ingredients") or {}
        lines += ["| system | " + " | ".join(name for _, name in TRAINING_FIELDS) + " |",
                  "|---" * (len(TRAINING_FIELDS) + 1) + "|"]
        for system, record in ingredients.items():
            cells = [_cell(record.get(k)) for k, _ in TRAINING_FIELDS]
            lines.append(f"| {system} | " + " | ".join(cells) + " |")
        return [*lines, ""]
    lines = ["## Training", "| | |", "|---|---|"]
    for key, name in TRAINING_FIELDS:
        lines.append(f"| {name} | {_cell(training.get(key))} |")
    return [*lines, ""]


def model_card(exp_dir: Path, doc: dict[str, Any], train_data: str | None = None,
               selection: Sequence[tuple[str, float]] | None = None,
               dev_set: str | None = None, training: Mapping[str, Any] | None = None
               ) -> str:
    """README.md text for the exported system described by ``doc`` (its config.json);
    ``selection`` (system, dev micro-F1 on ``dev_set``, best first) and ``training``
    add the sections that say why this system and how it was trained."""
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
        "or from the command line: `echo \"hello how are you today\" | punct-restore "
        "--model path/to/this/dir`.",
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
        *(selection_section(selection, dev_set or "dev") if selection else []),
        *(training_section(training) if training else []),
        "## Scores",
        scores_table(scores) if scores else "No scores.json in the experiment directory.",
        "",
    ]
    return "\n".join(lines)
