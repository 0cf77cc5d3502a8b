"""Build comparison tables, plots and RESULTS.md from scores.json files.

Example:
  python -m punct.bin.report --scores 'exp/*/decode_*/scores.json' --out-dir results \\
      --results-md RESULTS.md --extra-json alignment=exp/align/eval.json
"""

from __future__ import annotations

import argparse
import glob
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from punct.atomic import atomic_write_text
from punct.errors import MissingDataError, PunctInputError, report_error
from punct.score.layouts import layout_plots, layout_tables
from punct.score.plots import make_plots
from punct.score.published import load_published
from punct.score.results_md import build_results_md
from punct.score.tables import (
    build_tables,
    load_scores,
    summary_table,
    without_published,
    write_table,
)


def expand_scores(patterns: list[str]) -> list[Path]:
    """Files matching the glob patterns (a plain path is kept as is), without duplicates."""
    paths: list[Path] = []
    for pattern in patterns:
        found = sorted(glob.glob(pattern, recursive=True)) if glob.has_magic(pattern) \
            else [pattern]
        paths += [Path(p) for p in found if Path(p) not in paths]
    if not paths:
        raise MissingDataError("no scores.json file matches " + " ".join(patterns))
    return paths


def read_extra(spec: str) -> tuple[str, str, Any]:
    """``name=path`` -> (name, path, parsed JSON)."""
    name, sep, path = spec.partition("=")
    if not sep or not name or not path:
        raise PunctInputError(f"--extra-json expects name=path, got {spec!r}")
    file = Path(path)
    if not file.is_file():
        raise MissingDataError(f"extra JSON {name!r} not found", file)
    try:
        return name, path, json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise PunctInputError(f"invalid JSON: {err.msg}", file, err.lineno) from None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m punct.bin.report", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scores", nargs="+", required=True,
                   help="scores.json files or glob patterns (quote them)")
    p.add_argument("--out-dir", required=True, help="where tables and plots go")
    p.add_argument("--results-md", help="RESULTS.md to write (default: <out-dir>/RESULTS.md)")
    p.add_argument("--title", default="Results", help="title of RESULTS.md")
    p.add_argument("--published", default="autopunct_2021",
                   help="published figures of the autopunct layout; 'none' leaves the "
                        "published rows out of every layout")
    p.add_argument("--extra-json", action="append", default=[], metavar="NAME=PATH",
                   help="a JSON file rendered as a section of RESULTS.md (repeatable)")
    p.add_argument("--layouts", default="autopunct",
                   help="comma-separated table layouts: autopunct (Tables 4-7 of AutoPunct) "
                        "and the modules of punct/score/layouts (e.g. courtland, nagy)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    return p


def run(args: argparse.Namespace, command: str) -> Path:
    """Write tables, plots and RESULTS.md; return the RESULTS.md path."""
    scores = load_scores(expand_scores(args.scores))
    doc = None if args.published == "none" else load_published(args.published)
    extras = {}
    for spec in args.extra_json:
        name, path, value = read_extra(spec)
        extras[name] = (path, value)
    out_dir = Path(args.out_dir)
    layouts = [name.strip() for name in args.layouts.split(",") if name.strip()]
    tables, plots = [], []
    for name in layouts:
        if name == "autopunct":
            tables += build_tables(scores, doc)
            plots += [] if args.no_plots else make_plots(scores, out_dir)
        else:
            layout = layout_tables(name, scores)
            tables += layout if doc is not None else without_published(layout)
            plots += [] if args.no_plots else layout_plots(name, scores, out_dir)
    if "autopunct" not in layouts:  # the summary (with the text metrics) comes with every report
        tables.insert(0, summary_table(scores))
    files = {t.name: write_table(t, out_dir) for t in tables}
    md_path = Path(args.results_md) if args.results_md else out_dir / "RESULTS.md"
    text = build_results_md(title=args.title, command=command, md_path=md_path, scores=scores,
                            tables=tables, table_files=files, plots=plots, extras=extras)
    atomic_write_text(md_path, text)
    return md_path


def main(argv: list[str] | None = None) -> int:
    raw = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(raw)
    command = "python -m punct.bin.report " + " ".join(shlex.quote(a) for a in raw)
    try:
        md_path = run(args, command)
    except PunctInputError as err:
        return report_error("report", err)
    print(f"report: tables and plots in {args.out_dir}, {md_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
