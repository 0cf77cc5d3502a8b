"""Generate RESULTS.md: provenance, tables, plots and extra JSON sections."""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from punct.score.tables import Table, data_label, to_markdown

Scalar = str | int | float | bool | None
REPO_DIR = Path(__file__).resolve().parents[2]  # the checkout this code runs from
PACKAGES = ("torch", "transformers", "tokenizers", "pandas", "numpy", "matplotlib")


def git_info(cwd: str | Path | None = REPO_DIR, outputs: Sequence[str | Path] = ()
             ) -> dict[str, Any]:
    """Commit hash and dirty flag of the repository around ``cwd`` (default: the checkout of
    this code); read-only git calls. ``dirty``: tracked files differ from the commit, not
    counting ``outputs`` (the files and folders the report itself is writing)."""

    def run(*args: str) -> subprocess.CompletedProcess[str] | None:
        try:
            return subprocess.run(["git", "--no-optional-locks", *args], cwd=cwd,
                                  capture_output=True, text=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None

    head = run("rev-parse", "HEAD")
    if head is None or head.returncode != 0:
        inside = run("rev-parse", "--is-inside-work-tree")
        reason = "no commits yet" if inside and inside.returncode == 0 else "not a git checkout"
        return {"commit": f"unknown ({reason})", "dirty": None}
    excluded = [f":(exclude){Path(p).resolve()}" for p in outputs]
    status = run("status", "--porcelain", "--untracked-files=no", "--", ".", *excluded)
    dirty = bool(status.stdout.strip()) if status and status.returncode == 0 else None
    return {"commit": head.stdout.strip(), "dirty": dirty}


def package_versions(names: Sequence[str] = PACKAGES) -> dict[str, str]:
    """Python and package versions (from metadata: nothing is imported)."""
    out = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


# ---------------------------------------------------------------- JSON rendering


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _is_flat(value: Any) -> bool:
    """A scalar, or a list of scalars."""
    return _is_scalar(value) or (isinstance(value, list) and all(map(_is_scalar, value)))


def fmt_value(value: Any) -> str:
    """A JSON value as Markdown table text."""
    if isinstance(value, list):
        return ", ".join(fmt_value(v) for v in value)
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value != value:
            return "–"
        return f"{value:.1f}" if abs(value) >= 1000 else f"{value:.4g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def _md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(fmt_value(h) for h in header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(fmt_value(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _flatten(obj: Mapping[str, Any], prefix: str = "") -> dict[str, Any] | None:
    """Nested dicts with flat leaves -> one dict with dotted keys (None if not possible)."""
    out: dict[str, Any] = {}
    for key, value in obj.items():
        name = f"{prefix}{key}"
        if _is_flat(value):
            out[name] = value
        elif isinstance(value, dict) and value:
            inner = _flatten(value, name + ".")
            if inner is None:
                return None
            out.update(inner)
        else:
            return None
    return out


MAX_COLUMNS = 16


def _record_table(records: Mapping[str, Mapping[str, Any]], key_name: str = "") -> str:
    cols: list[str] = []
    for rec in records.values():
        cols += [k for k in rec if k not in cols]
    return _md_table([key_name, *cols], [[k, *(rec.get(c) for c in cols)]
                                         for k, rec in records.items()])


def render_json(obj: Any, level: int = 3) -> str:
    """Render any JSON value readably: flat dicts as key/value tables; dicts of (nested) dicts
    as one table with a row per key and dotted column names (``pause.f1``) when that stays
    narrow; lists of flat dicts as tables; anything deeper as sub-headings."""
    if _is_flat(obj):
        return fmt_value(obj)
    if isinstance(obj, list):
        if all(isinstance(v, dict) and all(map(_is_flat, v.values())) for v in obj):
            return _record_table({str(i): v for i, v in enumerate(obj)}, "#")
        return "\n\n".join(f"{'#' * min(level, 6)} [{i}]\n\n{render_json(v, level + 1)}"
                           for i, v in enumerate(obj))
    if not obj:
        return "(empty)"
    values = list(obj.values())
    if all(_is_flat(v) for v in values):
        return _md_table(["key", "value"], [[k, v] for k, v in obj.items()])
    if all(isinstance(v, dict) and v for v in values):
        flat_rows = {k: _flatten(v) for k, v in obj.items()}
        columns = {c for row in flat_rows.values() if row is not None for c in row}
        if all(row is not None for row in flat_rows.values()) and len(columns) <= MAX_COLUMNS:
            return _record_table(flat_rows)  # type: ignore[arg-type]
    parts = []
    flat = {k: v for k, v in obj.items() if _is_flat(v)}
    if flat:
        parts.append(_md_table(["key", "value"], [[k, v] for k, v in flat.items()]))
    for key, value in obj.items():
        if key not in flat:
            parts.append(f"{'#' * min(level, 6)} {key}\n\n{render_json(value, level + 1)}")
    return "\n\n".join(parts)


# ---------------------------------------------------------------- the document


def _rel(path: str | Path, start: Path) -> str:
    return Path(os.path.relpath(Path(path).resolve(), start.resolve())).as_posix()


def build_results_md(
    *,
    title: str,
    command: str,
    md_path: str | Path,
    scores: Sequence[dict[str, Any]],
    tables: Sequence[Table],
    table_files: Mapping[str, Sequence[Path]] | None = None,
    plots: Sequence[Path] = (),
    extras: Mapping[str, tuple[str, Any]] | None = None,
    git: Mapping[str, Any] | None = None,
    versions: Mapping[str, str] | None = None,
    generated: dt.datetime | None = None,
) -> str:
    """The text of RESULTS.md. ``extras`` maps a section name to (source path, JSON value)."""
    md_dir = Path(md_path).parent
    outputs = [Path(md_path), *{Path(p).parent for p in plots},
               *{Path(f).parent for files in (table_files or {}).values() for f in files}]
    git = git if git is not None else git_info(REPO_DIR, outputs)
    versions = versions if versions is not None else package_versions()
    when = (generated or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%d %H:%M:%S UTC")
    dirty = {True: " (dirty: uncommitted changes)", False: " (clean)", None: ""}[git["dirty"]]
    info = [["generated", when], ["git commit", f"{git['commit']}{dirty}"]]
    info += [[name, ver] for name, ver in versions.items()]
    info.append(["command", f"`{command}`"])
    out = [f"# {title}", "",
           "_Generated by `python -m punct.bin.report` from the scores JSON files; "
           "do not edit by hand._", "", _md_table(["", ""], info), ""]
    out += ["## Systems scored", "",
            _md_table(["system", "data", "labels", "words", "device", "batch", "scores"],
                      [[s["system"], data_label(s), s["label_set"], s["metrics"]["all"]["words"],
                        s.get("decode", {}).get("device"), s.get("decode", {}).get("batch_size"),
                        _rel(s["_path"], md_dir) if "_path" in s else None] for s in scores]),
            "", "## Tables", ""]
    for table in tables:
        out.append(to_markdown(table, "###"))
        files = (table_files or {}).get(table.name, ())
        if files:
            out += ["Files: " + ", ".join(f"[{p.suffix[1:]}]({_rel(p, md_dir)})" for p in files),
                    ""]
    if plots:
        out += ["## Plots", ""]
        for plot in plots:
            out += [f"![{Path(plot).stem}]({_rel(plot, md_dir)})", ""]
    for name, (source, value) in (extras or {}).items():
        out += [f"## {name}", "", f"_From `{source}`._", "", render_json(value, 3), ""]
    return "\n".join(out).rstrip() + "\n"
