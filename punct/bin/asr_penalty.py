"""What recognition errors cost: each system on a reference set and on its ASR condition.

  python -m punct.bin.asr_penalty --exp-dir exp --pair test:test_asr --pair dev:dev_asrsim \\
      --system brnn_text --system autopunct_text --json exp/asr_penalty.json

Prints, per pair of sets and per system, micro- and macro-F1 (%) on the reference
words and on the recogniser's words, their difference (the ASR penalty: reference minus
ASR) and the WER of the ASR set (:mod:`punct.score.asr_penalty`). A system without scores on
both sides is left out with a note on stderr. ``--json`` writes the rows, keyed
``<system> (<ASR set>)``, for the report.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from punct.atomic import atomic_write_text
from punct.errors import PunctInputError, report_error
from punct.score.asr_penalty import asr_penalty, parse_pair


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m punct.bin.asr_penalty", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--exp-dir", type=Path, default=Path("exp"))
    p.add_argument("--pair", action="append", default=[], required=True, metavar="SET:ASR_SET",
                   help="a reference set and its ASR condition, repeatable")
    p.add_argument("--system", action="append", default=[], required=True,
                   help="a system (exp/<system>), repeatable")
    p.add_argument("--json", type=Path, default=None, help="write the rows here (JSON)")
    args = p.parse_args(argv)
    rows: dict[str, dict[str, object]] = {}
    try:
        for test_set, asr_set in (parse_pair(text) for text in args.pair):
            for system in args.system:
                row = asr_penalty(args.exp_dir, system, test_set, asr_set)
                if row is None:
                    print(f"asr_penalty: {system}: no scores on both {test_set} and {asr_set}, "
                          "left out", file=sys.stderr)
                    continue
                rows[f"{system} ({asr_set})"] = asdict(row)
                wer = "n/a" if row.wer is None else f"{row.wer:.1f}%"
                print(f"{system} on {test_set} / {asr_set}: micro-F1 {row.ref_micro_f1:.1f} ref, "
                      f"{row.asr_micro_f1:.1f} ASR (WER {wer}): penalty {row.micro_penalty:+.1f}; "
                      f"macro-F1 penalty {row.macro_penalty:+.1f}")
    except PunctInputError as err:
        return report_error("asr_penalty", err)
    if args.json is not None:
        atomic_write_text(args.json, json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
