"""A simulated ASR condition of a text set: seeded substitutions, deletions and insertions.

  python -m punct.bin.simulate_asr --data-dir data/dev --train-dir data/train \\
      --out-dir data/dev_asrsim --wer 0.2 --seed 1

writes ``words.tsv`` (the noisy words with the labels projected from the reference),
``ref_words.tsv``, ``text``, ``utt2spk``/``spk2utt``/``utt2lang`` and ``asr.json`` (the
measured WER). The noise model is :mod:`punct.data.asr_simulation` (docs/ASR.md).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from punct.data.asr_simulation import DEFAULT_SHARES, simulate_asr_set
from punct.errors import PunctInputError, report_error


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m punct.bin.simulate_asr", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", required=True, help="the reference set (words.tsv)")
    p.add_argument("--train-dir", required=True, help="training set: the substitute words")
    p.add_argument("--out-dir", required=True, help="the simulated ASR set to write")
    p.add_argument("--wer", type=float, default=0.2, help="target WER (default 0.2)")
    p.add_argument("--seed", type=int, default=1, help="seed of the draws (default 1)")
    p.add_argument("--shares", default=",".join(str(s) for s in DEFAULT_SHARES),
                   help="shares of substitutions, deletions, insertions (default "
                        "%(default)s)")
    p.add_argument("--substitutes", choices=("confusable", "frequent"), default="confusable",
                   help="words that sound alike (CMU dictionary; the speech extra) or "
                        "frequent training words (default confusable)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        shares = [float(x) for x in args.shares.split(",")]
    except ValueError as err:
        return report_error("simulate_asr", PunctInputError(f"--shares: {err}"))
    try:
        summary = simulate_asr_set(Path(args.data_dir), Path(args.train_dir),
                                   Path(args.out_dir), args.wer, args.seed, shares,
                                   args.substitutes)
    except PunctInputError as err:
        return report_error("simulate_asr", err)
    print(f"simulate_asr: {summary['utterances']} utterances -> {args.out_dir}: WER "
          f"{100 * float(summary['wer'] or 0):.1f}% (target {100 * args.wer:.1f}%; S "
          f"{summary['sub']}, D {summary['del']}, I {summary['ins']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
