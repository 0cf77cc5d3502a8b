"""Export the recipe's best system on the validation set, with a model card (stage 7).

  python -m punct.bin.export_best --exp-dir exp --systems "nagy autopunct_text" \\
      --dev-set dev --out exp/export/en --train-data "IWSLT 2012 TED talks (train)"

Ranks the systems by micro-F1 on ``exp/<system>/decode_<dev-set>/scores.json`` (stage 6),
exports the best with ``punct-export`` into ``--out`` (replacing an earlier export) and
writes its model card: training data, the ranking on dev, the training record (time,
epochs, device, CPU, precision) and every scored set. Load the result with
``punct-restore --model OUT`` or ``Restorer.from_pretrained(OUT)``. With ``--dev-dir``
(the dev set's data dir) the export's backends are checked on it too (``backends.json``:
which of torch int8 and the ONNX models keep micro-F1 within 0.5 of fp32, for
``--backend auto`` on CPUs without native bf16; ``punct-export --check-backends``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from punct.bin.export import record_backends
from punct.errors import PunctInputError, report_error
from punct.export.hub import export_hub
from punct.export.select import best_on_dev, training_facts
from punct.wordtable import read_word_table


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m punct.bin.export_best", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--exp-dir", type=Path, default=Path("exp"), help="the recipe's exp/")
    p.add_argument("--systems", required=True,
                   help="candidate systems, space-separated (exp/<system>)")
    p.add_argument("--dev-set", default="dev", help="the validation set that chooses")
    p.add_argument("--out", type=Path, required=True, help="export directory")
    p.add_argument("--train-data", default=None, help="training data, for the model card")
    p.add_argument("--train-dir", type=Path, default=None,
                   help="the training data dir: its words and utterances go into the card")
    p.add_argument("--dev-dir", type=Path, default=None,
                   help="the dev set's data dir: check the export's backends on it")
    p.add_argument("--num-threads", type=int, default=None, help="threads for the check")
    return p


def data_size(data_dir: Path) -> str:
    """``<dir>: N words in M utterances`` of a data dir's word table."""
    rows = read_word_table(data_dir / "words.tsv")
    words = sum(len(r) for r in rows.values())
    return f"{data_dir}: {words:,} words in {len(rows):,} utterances"


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    systems = args.systems.split()
    if not systems:
        return report_error("export_best", PunctInputError("--systems names no system"))
    try:
        ranked = best_on_dev(args.exp_dir, systems, args.dev_set)
        best = ranked[0]
        train_data = args.train_data
        if args.train_dir is not None:
            train_data = f"{train_data or 'training data'} ({data_size(args.train_dir)})"
        facts = {"selection": [(c.system, c.micro_f1) for c in ranked],
                 "dev_set": args.dev_set,
                 "training": training_facts(args.exp_dir / best.system)}
        export_hub(args.exp_dir / best.system, args.out, train_data=train_data,
                   overwrite=True, card_facts=facts)
        if args.dev_dir is not None:
            record_backends(args.out, str(args.dev_dir), args.num_threads)
    except PunctInputError as err:
        return report_error("export_best", err)
    others = ", ".join(f"{c.system} {100 * c.micro_f1:.1f}" for c in ranked[1:]) or "none"
    print(f"export_best: {best.system} (dev {args.dev_set} micro-F1 {100 * best.micro_f1:.1f}; "
          f"others: {others}) -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
