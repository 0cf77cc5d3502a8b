"""What the pauses are worth: each pause-aware system against its text-only twin.

  python -m punct.bin.pause_gain --exp-dir exp --sets "test test_mixed" \\
      --pair brnn_pause:brnn_text --pair autopunct_dg:autopunct_text --json exp/pause_gain.json

Reads ``<exp-dir>/<system>/decode_<set>/scores.json`` of both systems of each pair and
prints, per set, the micro- and macro-F1 (%) of both and their difference (pause-aware
minus text-only), with the 95 % bootstrap interval and the randomization p-value of the
micro-F1 difference over the set's utterances (``punct.score.significance``; ``--samples``
draws, ``--seed``; the word tables each scores file names are read again, from the working
directory or the recipe directory; without them the figures come without the test, with
a note on stderr). A pair whose scores are missing on a set is left
out with a note on stderr (a recipe may train only some of its systems); a pair of two
different label sets is an error. ``--json`` writes the rows, keyed ``<system> (<set>)``,
for the report.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from punct.atomic import atomic_write_text
from punct.errors import PunctInputError, report_error
from punct.score.significance import DEFAULT_SAMPLES, compare_documents
from punct.score.tables import load_scores


@dataclass
class PauseGain:
    """One pair on one set; F1 figures in %."""

    twin: str
    set: str
    label_set: str
    micro_f1: float
    twin_micro_f1: float
    micro_gain: float
    macro_f1: float
    twin_macro_f1: float
    macro_gain: float
    micro_gain_low: float | None  # the 95 % bootstrap interval of micro_gain (None: too
    micro_gain_high: float | None  # few utterances, or no word tables)
    micro_gain_p: float | None  # two-sided p-value of micro_gain (paired randomization)


def parse_pair(text: str) -> tuple[str, str]:
    """``system:twin`` -> (system, twin)."""
    system, sep, twin = text.partition(":")
    if not sep or not system or not twin or ":" in twin:
        raise PunctInputError(f"--pair expects <pause-aware system>:<text-only twin>, got "
                              f"{text!r}")
    return system, twin


def pair_gain(exp_dir: Path, system: str, twin: str, test_set: str,
              samples: int = DEFAULT_SAMPLES, seed: int = 0) -> PauseGain | None:
    """The gain of ``system`` over ``twin`` on ``test_set``; None when a score is missing."""
    paths = [exp_dir / name / f"decode_{test_set}" / "scores.json" for name in (system, twin)]
    missing = [p for p in paths if not p.is_file()]
    if missing:
        print(f"pause_gain: {system} vs {twin} on {test_set} left out: no {missing[0]}",
              file=sys.stderr)
        return None
    ours_doc, twin_doc = (load_scores([path])[0] for path in paths)
    labels, twin_labels = ours_doc["label_set"], twin_doc["label_set"]
    ours, theirs = ours_doc["metrics"]["all"], twin_doc["metrics"]["all"]
    if labels != twin_labels:
        raise PunctInputError(f"{system} ({labels}) and {twin} ({twin_labels}) are scored on "
                              "different label sets", paths[1])
    micro, twin_micro = 100 * ours["micro_f1"], 100 * theirs["micro_f1"]
    macro, twin_macro = 100 * ours["macro_f1"], 100 * theirs["macro_f1"]
    low = high = p_value = None
    try:
        test = compare_documents(ours_doc, twin_doc, paths[0], paths[1], samples, seed)
        low, high, p_value = (None if v is None else round(v, r)
                              for v, r in ((test.low, 1), (test.high, 1), (test.p_value, 3)))
    except PunctInputError as err:  # the word tables are gone or changed: figures without it
        print(f"pause_gain: {system} vs {twin} on {test_set}: no significance test: {err}",
              file=sys.stderr)
    return PauseGain(twin, test_set, labels, round(micro, 1), round(twin_micro, 1),
                     round(micro - twin_micro, 1), round(macro, 1), round(twin_macro, 1),
                     round(macro - twin_macro, 1), low, high, p_value)


def describe(gain: PauseGain) -> str:
    """``95 % [lo, hi], p P`` of a gain, n/a where not measured."""
    interval = ("n/a" if gain.micro_gain_low is None else
                f"[{gain.micro_gain_low:+.1f}, {gain.micro_gain_high:+.1f}]")
    p_value = "n/a" if gain.micro_gain_p is None else f"{gain.micro_gain_p:.3f}"
    return f"95 % {interval}, p {p_value}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m punct.bin.pause_gain", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--exp-dir", type=Path, default=Path("exp"))
    p.add_argument("--sets", default="test", help="test sets, space-separated")
    p.add_argument("--pair", action="append", default=[], required=True,
                   metavar="SYSTEM:TWIN", help="a pause-aware system and its text-only twin")
    p.add_argument("--json", type=Path, default=None, help="write the rows here (JSON)")
    p.add_argument("--samples", type=int, default=DEFAULT_SAMPLES, help="bootstrap draws")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    args = p.parse_args(argv)
    try:
        pairs = [parse_pair(text) for text in args.pair]
        rows: dict[str, dict[str, object]] = {}
        for test_set in args.sets.split():
            for system, twin in pairs:
                gain = pair_gain(args.exp_dir, system, twin, test_set, args.samples, args.seed)
                if gain is None:
                    continue
                rows[f"{system} ({test_set})"] = asdict(gain)
                print(f"{system} - {twin} on {test_set}: micro-F1 {gain.micro_f1:.1f} - "
                      f"{gain.twin_micro_f1:.1f} = {gain.micro_gain:+.1f} "
                      f"({describe(gain)}), macro-F1 {gain.macro_gain:+.1f}")
    except PunctInputError as err:
        return report_error("pause_gain", err)
    if args.json is not None:
        atomic_write_text(args.json, json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
