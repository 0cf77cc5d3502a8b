"""PNG plots of the scores (matplotlib, Agg canvas; no display needed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from punct.labels import PUNCT_LABELS
from punct.score.figure import new_figure, save_png
from punct.score.tables import cap_modelled, column_of, data_label, groups_of

SHORT = {
    "COMMA": "COM", "PERIOD": "PER", "QUESTION": "QUES", "EXCLAMATION": "EXC",
    "COLON": "COL", "SEMICOLON": "SCOL", "DASH": "DASH", "OPEN_DASH": "O_DASH",
    "ELLIPSIS": "ELL", "OPEN_QUOTE": "O_QUO", "QUOTE": "QUO", "OPEN_QUES": "O_QS",
    "OPEN_EXCL": "O_EX",
}


def _name(score: dict[str, Any], many_sets: bool) -> str:
    return f"{score['system']} [{data_label(score)}]" if many_sets else str(score["system"])


def _labels(scores: Sequence[dict[str, Any]], group: str) -> list[str]:
    used = {lab for s in scores if group in s["metrics"]
            for lab in s["metrics"][group]["punct"]["classes"]}
    return [lab for lab in PUNCT_LABELS if lab in used]


def _save(fig: Any, path: Path) -> Path:
    return save_png(fig, path)


def _grouped_bars(ax: Any, categories: Sequence[str], series: dict[str, list[float]]) -> None:
    n = max(len(series), 1)
    width = 0.8 / n
    x = np.arange(len(categories))
    for k, (name, values) in enumerate(series.items()):
        ax.bar(x + (k - (n - 1) / 2) * width, values, width, label=name)
    ax.set_xticks(x)
    ax.set_xticklabels(categories, rotation=45, ha="right")
    ax.set_ylim(0, 100)
    ax.grid(axis="y", alpha=0.3)


def plot_class_f1(scores: Sequence[dict[str, Any]], path: str | Path,
                  group: str = "all") -> Path:
    """Bar plot of per-class punctuation F1 (%) per system on one metrics group."""
    labels = _labels(scores, group)
    many = len({data_label(s) for s in scores}) > 1
    series = {}
    for s in scores:
        if group not in s["metrics"]:
            continue
        classes = s["metrics"][group]["punct"]["classes"]
        series[_name(s, many)] = [100 * classes[lab]["f1"] if lab in classes else np.nan
                                  for lab in labels]
    fig = new_figure((max(7.0, 0.9 * len(labels) + 3), 4.8))
    ax = fig.add_subplot()
    _grouped_bars(ax, [SHORT[lab] for lab in labels], series)
    ax.set_ylabel("F1 (%)")
    ax.set_title(f"Punctuation F1 per class ({column_of(group)})")
    ax.legend(fontsize="small", ncol=2, loc="best")
    fig.tight_layout()
    return _save(fig, Path(path))


def plot_class_pr(scores: Sequence[dict[str, Any]], path: str | Path,
                  group: str = "all") -> Path:
    """Precision vs recall of each class and system, with iso-F1 curves."""
    labels = _labels(scores, group)
    many = len({data_label(s) for s in scores}) > 1
    fig = new_figure((7.5, 6.5))
    ax = fig.add_subplot()
    r = np.linspace(0.01, 1, 200)
    for f in (0.2, 0.4, 0.6, 0.8):
        p = f * r / (2 * r - f)
        ok = (p > 0) & (p <= 1) & (2 * r > f)
        ax.plot(100 * r[ok], 100 * p[ok], color="grey", lw=0.6, alpha=0.5)
        ax.annotate(f"F1={f:.1f}", (88, 100 * f * 0.88 / (1.76 - f) + 1), fontsize=7,
                    color="grey")
    markers = "os^vDP*Xhp<>"
    for k, s in enumerate(scores):
        if group not in s["metrics"]:
            continue
        classes = s["metrics"][group]["punct"]["classes"]
        # A class neither in the reference nor predicted has no precision or recall.
        shown = [lab for lab in labels
                 if lab in classes and classes[lab]["tp"] + classes[lab]["fp"]
                 + classes[lab]["fn"] > 0]
        xs = [100 * classes[lab]["recall"] for lab in shown]
        ys = [100 * classes[lab]["precision"] for lab in shown]
        ax.scatter(xs, ys, marker=markers[k % len(markers)], label=_name(s, many), alpha=0.8)
        for lab, x, y in zip(shown, xs, ys, strict=True):
            ax.annotate(SHORT[lab], (x, y), fontsize=6, xytext=(2, 2),
                        textcoords="offset points")
    ax.set_xlim(0, 105)
    ax.set_ylim(0, 105)
    ax.set_xlabel("recall (%)")
    ax.set_ylabel("precision (%)")
    ax.set_title(f"Precision and recall per class ({column_of(group)})")
    ax.legend(fontsize="small", loc="best")
    fig.tight_layout()
    return _save(fig, Path(path))


def plot_lang_micro_f1(scores: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Bar plot of punctuation and capitalisation micro-F1 (%) per language and system."""
    groups = groups_of(scores)
    many = len({data_label(s) for s in scores}) > 1
    fig = new_figure((max(7.0, 1.2 * len(groups) + 4), 7.5))
    for k, (metric, title) in enumerate((("micro_f1", "punctuation micro-F1"),
                                         ("cap_micro_f1", "capitalisation micro-F1"))):
        ax = fig.add_subplot(2, 1, k + 1)
        series = {}
        for s in scores:
            if metric.startswith("cap_") and not cap_modelled(s):
                continue
            series[_name(s, many)] = [100 * s["metrics"][g][metric] if g in s["metrics"]
                                      else np.nan for g in groups]
        _grouped_bars(ax, [column_of(g) for g in groups], series)
        ax.set_ylabel("F1 (%)")
        ax.set_title(title + " per language")
        if series:
            ax.legend(fontsize="small", ncol=2)
    fig.tight_layout()
    return _save(fig, Path(path))


def make_plots(scores: Sequence[dict[str, Any]], out_dir: str | Path) -> list[Path]:
    """All plots of the report into ``out_dir``."""
    out_dir = Path(out_dir)
    return [
        plot_class_f1(scores, out_dir / "class_f1.png"),
        plot_class_pr(scores, out_dir / "class_pr.png"),
        plot_lang_micro_f1(scores, out_dir / "lang_micro_f1.png"),
    ]
