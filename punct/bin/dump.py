"""Stage 3 (dump): validate word tables and write label statistics per set.

``python -m punct.bin.dump --data-dir data/train --data-dir data/dev --data-dir data/test
--out-dir dump``

Writes ``<out-dir>/<set>/stats.json`` (words, utterances, counts per mark and per cap
class, also under each smaller label set, share of words with pauses). Vocabularies and
pause normalisation of each system are built by its featurizer, fitted on the training
set by the trainer.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from punct.errors import MissingDataError, PunctInputError, report_error
from punct.labels import CAP_LABELS, LABEL_SETS, PUNCT_LABELS
from punct.wordtable import WordRow, read_word_table


def validate_rows(utts: dict[str, list[WordRow]], path: Path) -> None:
    """Checks beyond the reader's: timings consistent (end >= start, pauses >= 0)."""
    line = 1
    for rows in utts.values():
        for row in rows:
            line += 1
            if row.start is not None and row.end is not None and row.end < row.start:
                raise PunctInputError(f"word {row.word!r} ends ({row.end}) before it starts "
                                      f"({row.start})", path, line)
            if (row.start is None) != (row.end is None):
                raise PunctInputError("start and end must both be set or both be empty",
                                      path, line)


def set_stats(utts: dict[str, list[WordRow]]) -> dict[str, Any]:
    """Label and timing statistics of one word table."""
    rows = [r for rs in utts.values() for r in rs]
    words = len(rows)
    marks = Counter(lab for r in rows for lab in r.punct)
    caps = Counter(r.cap for r in rows)
    by_set = {}
    for name, ls in LABEL_SETS.items():
        mapped = Counter(lab for r in rows for lab in ls.map(r.punct))
        by_set[name] = {"O": sum(1 for r in rows if not ls.map(r.punct)),
                        **{lab: mapped.get(lab, 0) for lab in ls.labels}}
    with_pause = sum(r.pause_after is not None for r in rows)
    with_time = sum(r.start is not None for r in rows)
    return {
        "utterances": len(utts),
        "words": words,
        "punct": {"O": sum(1 for r in rows if not r.punct),
                  **{lab: marks.get(lab, 0) for lab in PUNCT_LABELS}},
        "multi_mark_words": sum(1 for r in rows if len(r.punct) > 1),
        "cap": {lab: caps.get(lab, 0) for lab in CAP_LABELS},
        "label_sets": by_set,
        "words_with_timing": with_time,
        "words_with_pause": with_pause,
        "share_with_pause": with_pause / words if words else 0.0,
    }


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m punct.bin.dump", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", action="append", required=True, dest="data_dirs",
                        help="data dir with words.tsv (repeat for every set)")
    parser.add_argument("--out-dir", required=True, help="dump directory")
    return parser


def run(data_dirs: list[str], out_dir: str) -> dict[str, Any]:
    """Validate every set and write the statistics; return a summary."""
    out = Path(out_dir)
    names: dict[str, Path] = {}
    for d in data_dirs:
        name = Path(d).name
        if name in names and names[name] != Path(d):
            raise PunctInputError(f"two data dirs share the set name {name!r}: {names[name]} "
                                  f"and {d}")
        names[name] = Path(d)
    tables: dict[str, dict[str, list[WordRow]]] = {}
    for name, d in names.items():
        path = d / "words.tsv"
        if not path.is_file():
            raise MissingDataError(f"no word table in {d} (run stage 1)", path)
        utts = read_word_table(path)
        validate_rows(utts, path)
        tables[name] = utts
        (out / name).mkdir(parents=True, exist_ok=True)
        stats = {"data_dir": str(d), **set_stats(utts)}
        (out / name / "stats.json").write_text(json.dumps(stats, indent=2) + "\n",
                                               encoding="utf-8")
    return {"sets": len(names), "words": sum(sum(map(len, t.values())) for t in tables.values())}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        summary = run(args.data_dirs, args.out_dir)
    except PunctInputError as err:
        return report_error("dump", err)
    print(f"dump: {summary['sets']} sets, {summary['words']} words validated -> "
          f"{args.out_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
