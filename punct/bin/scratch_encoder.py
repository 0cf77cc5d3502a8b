"""Write a from-scratch BERT over the token stage's sentencepiece model (an HF dir).

Example (stage 3, after train_tokenizer):
  python -m punct.bin.scratch_encoder --sp-model data/token_list/unigram4000/sp.model \\
      --out-dir data/token_list/unigram4000/bert

The directory (tokenizer + random BertModel, ``save_pretrained``) is what a sub-word
family's ``featurizer.encoder`` names; its default size is AutoPunct's custom BERT
(4 layers x 4 heads, hidden 256, feed-forward 1024).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from punct.errors import MissingDataError, PunctInputError, report_error
from punct.models.scratch import Geometry, build_scratch_encoder


def parser() -> argparse.ArgumentParser:
    default = Geometry()
    p = argparse.ArgumentParser(prog="python -m punct.bin.scratch_encoder", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sp-model", type=Path, required=True, help="unigram sp.model")
    p.add_argument("--out-dir", type=Path, required=True, help="encoder directory to write")
    p.add_argument("--hidden", type=int, default=default.hidden)
    p.add_argument("--layers", type=int, default=default.layers)
    p.add_argument("--heads", type=int, default=default.heads)
    p.add_argument("--ffn", type=int, default=default.ffn)
    p.add_argument("--max-positions", type=int, default=default.max_positions)
    p.add_argument("--dropout", type=float, default=default.dropout)
    p.add_argument("--seed", type=int, default=1234)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    geometry = Geometry(hidden=args.hidden, layers=args.layers, heads=args.heads, ffn=args.ffn,
                        max_positions=args.max_positions, dropout=args.dropout)
    try:
        out = build_scratch_encoder(args.sp_model, args.out_dir, geometry, args.seed)
    except (PunctInputError, MissingDataError) as err:
        return report_error("scratch_encoder", err)
    print(f"scratch_encoder: {geometry} over {args.sp_model} -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
