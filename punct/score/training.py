"""What a trained experiment records about its training, for tables and model cards.

:func:`system_training` reads ``exp/<system>/history.json`` (epochs, seconds, best),
``env.json`` (commit, threads, device, CPU) and ``train.log`` (the precision in effect).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from punct.errors import PunctInputError


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise PunctInputError(f"not JSON: {err.msg}", path, err.lineno) from None


LOG_PRECISION = re.compile(r"; precision (\w+) \(train\.precision")


def logged_precision(log_path: Path) -> str | None:
    """The precision a training ran in, from the header line of its ``train.log`` (the
    last header: a resumed run writes another)."""
    if not log_path.is_file():
        return None
    found = LOG_PRECISION.findall(log_path.read_text(encoding="utf-8", errors="replace"))
    return found[-1] if found else None


def _history(exp_dir: Path) -> list[dict[str, Any]] | None:
    """``exp_dir/history.json`` (None when absent)."""
    path = exp_dir / "history.json"
    if not path.is_file():
        return None
    history = _read_json(path)
    if not isinstance(history, list):
        raise PunctInputError("history.json must be a list of epochs", path)
    return history


def _soup_row(history: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The one history row of a weight soup (``punct.train.soup``), else None."""
    return history[0] if len(history) == 1 and history[0].get("soup") else None


def system_training(exp_dir: Path) -> dict[str, object] | None:
    """The training record of one experiment: minutes, epochs, best epoch, commit, threads,
    device and precision (None when it has no ``history.json``, e.g. a system that was not
    trained); a weight soup (``punct.train.soup``) has 0 epochs, no precision and
    ``soup_of``, the systems it averages."""
    history = _history(exp_dir)
    if history is None:
        return None
    env_path = exp_dir / "env.json"
    env = _read_json(env_path) if env_path.is_file() else {}
    best = [row["epoch"] for row in history if row.get("best")]
    record: dict[str, object] = {
        "train_minutes": round(sum(float(row.get("seconds", 0.0)) for row in history) / 60, 1),
        "epochs": len(history),
        "best_epoch": best[-1] if best else None,
        "git_sha": str(env.get("git_sha") or "unknown")[:10],
        "threads": env.get("threads"),
        "device": env.get("device"),
        "cpu": env.get("cpu"),
        "precision": logged_precision(exp_dir / "train.log"),
    }
    soup = _soup_row(history)
    if soup is not None:  # built, not trained
        record.update(epochs=0, best_epoch=None, precision=None,
                      soup_of=", ".join(str(p) for p in soup["soup"]))
    return record


def soup_members(exp_dir: Path) -> list[tuple[str, Path]]:
    """The systems a weight soup averages, as its config wrote them and where they lie (the
    paths resolved when it was built; else relative to the recipe, two levels above the
    soup's directory). Empty for a system that is not a soup."""
    history = _history(exp_dir)
    soup = None if history is None else _soup_row(history)
    if soup is None:
        return []
    written = [str(p) for p in soup["soup"]]
    resolved = soup.get("soup_resolved") or []
    if len(resolved) != len(written):
        resolved = [str(p) if Path(p).is_absolute() else str(exp_dir.parent.parent / p)
                    for p in written]
    return [(name, Path(path)) for name, path in zip(written, resolved, strict=True)]


def collect_training(exp_dir: Path, systems: list[str]) -> dict[str, dict[str, object]]:
    """System -> training record, for the systems that have one."""
    out = {}
    for system in systems:
        record = system_training(exp_dir / system)
        if record is not None:
            out[system] = record
    return out
