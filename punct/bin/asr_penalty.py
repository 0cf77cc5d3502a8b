"""What recognition errors cost: each system on a test set and on its ASR twin ``<set>_asr``.

  python -m punct.bin.asr_penalty --exp-dir exp --sets "test" --system brnn_text \\
      --system autopunct_text --json exp/asr_penalty.json

Prints, per set with an ASR twin and per system, micro- and macro-F1 (%) on the reference
words and on the recogniser's words, their difference (the ASR penalty: reference minus
ASR) and the WER of the twin (:mod:`punct.score.asr_penalty`). A system without scores on
both sides is left out with a note on stderr. ``--json`` writes the rows, keyed
``<system> (<set>)``, for the report.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from punct.errors import PunctInputError, report_error
from punct.score.asr_penalty import asr_penalty


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m punct.bin.asr_penalty", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--exp-dir", type=Path, default=Path("exp"))
    p.add_argument("--sets", default="test", help="reference test sets, space-separated")
    p.add_argument("--system", action="append", default=[], required=True,
                   help="a system (exp/<system>), repeatable")
    p.add_argument("--json", type=Path, default=None, help="write the rows here (JSON)")
    args = p.parse_args(argv)
    rows: dict[str, dict[str, object]] = {}
    try:
        for test_set in args.sets.split():
            for system in args.system:
                row = asr_penalty(args.exp_dir, system, test_set)
                if row is None:
                    print(f"asr_penalty: {system} on {test_set}: no scores on both "
                          f"{test_set} and {test_set}_asr, left out", file=sys.stderr)
                    continue
                rows[f"{system} ({test_set})"] = asdict(row)
                wer = "n/a" if row.wer is None else f"{row.wer:.1f}%"
                print(f"{system} on {test_set}: micro-F1 {row.ref_micro_f1:.1f} ref, "
                      f"{row.asr_micro_f1:.1f} ASR (WER {wer}): penalty {row.micro_penalty:+.1f}; "
                      f"macro-F1 penalty {row.macro_penalty:+.1f}")
    except PunctInputError as err:
        return report_error("asr_penalty", err)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
