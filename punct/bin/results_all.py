"""Merge the RESULTS.md of every recipe into one report (``./run.sh --corpus all``).

Example:
  python -m punct.bin.results_all --egs-dir egs --out RESULTS_ALL.md
  python -m punct.bin.results_all --egs-dir egs --status-dir .run_all --out RESULTS_ALL.md

``--status-dir`` holds what ``./run.sh --corpus all`` did to each recipe (see
``punct.score.combine``); without it every RESULTS.md under ``--egs-dir`` is merged.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from punct.atomic import atomic_write_text
from punct.errors import MissingDataError, PunctInputError, report_error
from punct.score.combine import RecipeStatus, combine_results, find_recipes, read_status


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m punct.bin.results_all", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--egs-dir", default="egs", help="the folder of the recipes (egs/)")
    p.add_argument("--status-dir", help="what ./run.sh --corpus all did to each recipe")
    p.add_argument("--out", default="RESULTS_ALL.md", help="the combined report to write")
    p.add_argument("--command", help="the command line that ran the recipes (for the report)")
    return p


def run(args: argparse.Namespace) -> tuple[Path, list[RecipeStatus]]:
    """Write the report; return its path and the recipes' statuses."""
    egs = Path(args.egs_dir)
    names = find_recipes(egs)
    if not names:
        raise MissingDataError("no recipe <name>/punct1 in the egs folder", egs)
    statuses = [read_status(Path(args.status_dir), n) if args.status_dir else RecipeStatus(n)
                for n in names]
    out = Path(args.out)
    text = combine_results(egs, out, statuses, command=args.command)
    atomic_write_text(out, text)
    return out, statuses


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        out, statuses = run(args)
    except PunctInputError as err:
        return report_error("results_all", err)
    for status in statuses:
        if status.state in ("missing", "check-failed", "no-check"):
            print(f"results_all: {status.name}: not run ({status.state}); see {out}")
    print(f"results_all: {len(statuses)} recipes, report in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
