"""Is system A's micro-F1 above system B's beyond chance? Paired tests over utterances.

  python -m punct.bin.significance exp/A/decode_test/scores.json \\
      exp/B/decode_test/scores.json [--samples 1000] [--seed 0] [--level 0.95] [--json F]

Both scores files must come from the same reference word table, test set, label set and
non-speech map; the word tables they name are read again (relative paths from the working
directory, else from the recipe directory above ``exp/<system>/decode_<set>/``) and
scored utterance by utterance, and their sums must give the counts each file recorded.
Prints the micro-F1 difference A - B in points, its paired bootstrap interval at
``--level`` (n/a below 5 utterances) and the two-sided p-value of paired approximate
randomization (``punct.score.significance``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from punct.atomic import atomic_write_text
from punct.errors import PunctInputError, report_error
from punct.score.significance import DEFAULT_SAMPLES, compare_scores


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m punct.bin.significance", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scores_a", type=Path, help="scores.json of system A")
    p.add_argument("scores_b", type=Path, help="scores.json of system B (same test set)")
    p.add_argument("--samples", type=int, default=DEFAULT_SAMPLES, help="bootstrap draws")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--level", type=float, default=0.95, help="interval coverage")
    p.add_argument("--json", type=Path, default=None, help="also write the result here")
    args = p.parse_args(argv)
    try:
        result = compare_scores(args.scores_a, args.scores_b, args.samples, args.seed,
                                args.level)
    except (PunctInputError, OSError) as err:
        return report_error("significance", err)
    interval = ("n/a" if result.low is None or result.high is None
                else f"[{result.low:+.2f}, {result.high:+.2f}]")
    print(f"micro-F1 A - B = {result.delta:+.2f} points, {100 * result.level:g} % interval "
          f"{interval}, p = {result.p_value:.3f} ({result.utterances} utterances, "
          f"{result.samples} draws)")
    if args.json is not None:
        atomic_write_text(args.json, json.dumps(result.as_dict(), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
