"""Pre-train an encoder directory with masked-language modelling on a recipe's text.

Example (after the token stage wrote data/token_list/unigram4000/bert):
  python -m punct.bin.pretrain_encoder --encoder data/token_list/unigram4000/bert \\
      --train-dir data/train --dev-dir data/dev \\
      --out-dir data/token_list/unigram4000/bert_mlm --epochs 3 --num-threads 1

Reads the lower-cased words of ``<train-dir>/words.tsv`` (and ``<dev-dir>``'s for a dev
MLM loss), trains BERT's MLM objective, writes the encoder and its tokenizer
(``save_pretrained``) and ``mlm.json`` (losses per epoch) to ``--out-dir``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from punct.data.tokens import table_lines
from punct.errors import MissingDataError, PunctInputError, report_error
from punct.train.env import setup_compute
from punct.train.mlm import MlmOptions, pretrain_mlm


def parser() -> argparse.ArgumentParser:
    default = MlmOptions()
    p = argparse.ArgumentParser(prog="python -m punct.bin.pretrain_encoder", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--encoder", type=Path, required=True, help="encoder directory (HF)")
    p.add_argument("--train-dir", type=Path, required=True, help="data dir with words.tsv")
    p.add_argument("--dev-dir", type=Path, help="data dir for the dev MLM loss")
    p.add_argument("--out-dir", type=Path, required=True)
    p.add_argument("--epochs", type=int, default=default.epochs)
    p.add_argument("--batch-size", type=int, default=default.batch_size)
    p.add_argument("--block", type=int, default=default.block, help="pieces per block")
    p.add_argument("--lr", type=float, default=default.lr)
    p.add_argument("--max-steps", type=int, default=default.max_steps, help="0: no limit")
    p.add_argument("--seed", type=int, default=default.seed)
    p.add_argument("--precision", default=default.precision, choices=("auto", "bf16", "fp32"),
                   help="auto: bf16 autocast where the CPU has native bf16, else fp32")
    p.add_argument("--num-threads", type=int, default=1)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    setup_compute(args.num_threads)
    options = MlmOptions(epochs=args.epochs, batch_size=args.batch_size, block=args.block,
                         lr=args.lr, seed=args.seed, max_steps=args.max_steps,
                         precision=args.precision)
    try:
        train = table_lines(args.train_dir / "words.tsv")
        dev = table_lines(args.dev_dir / "words.tsv") if args.dev_dir else []
        report = pretrain_mlm(args.encoder, train, args.out_dir, options, dev)
    except (PunctInputError, MissingDataError) as err:
        return report_error("pretrain_encoder", err)
    print(f"pretrain_encoder: {report['steps']} steps on {report['train_blocks']} blocks "
          f"-> {args.out_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
