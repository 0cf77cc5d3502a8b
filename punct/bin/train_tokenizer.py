"""The token stage: train a sentencepiece model on a training set's words.

Example:
  python -m punct.bin.train_tokenizer --train-dir data/train \
      --out-dir data/token_list/unigram4000 --vocab-size 4000 --model-type unigram \
      --oov-dir data/test

Writes ``<out-dir>/sp.model`` and ``sp.vocab`` (piece, score), and for each
``--oov-dir`` ``oov_<set>.json``: the OOV rate of the word vocabulary (words seen at
least ``--min-count`` times in train, as the BRNN's) against the sentencepiece units
(pieces per word, unknown pieces).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from punct.data.tokens import (
    MODEL_TYPES,
    oov_report,
    table_lines,
    train_sentencepiece,
    write_json,
)
from punct.errors import PunctInputError, report_error


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m punct.bin.train_tokenizer", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--train-dir", type=Path, required=True, help="data dir with words.tsv")
    p.add_argument("--out-dir", type=Path, required=True, help="data/token_list/<name>")
    p.add_argument("--vocab-size", type=int, default=4000, help="pieces (default 4000)")
    p.add_argument("--model-type", choices=MODEL_TYPES, default="unigram")
    p.add_argument("--oov-dir", type=Path, action="append", default=[],
                   help="data dir to report OOV rates on (repeatable)")
    p.add_argument("--min-count", type=int, default=2,
                   help="word vocabulary of the OOV report: words seen this often")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        lines = table_lines(args.train_dir / "words.tsv")
        model = train_sentencepiece(lines, args.out_dir, args.vocab_size, args.model_type)
        print(f"train_tokenizer: {args.model_type} {args.vocab_size} on {len(lines)} "
              f"utterances -> {model}")
        for data_dir in args.oov_dir:
            rep = oov_report(lines, table_lines(data_dir / "words.tsv"), model.read_bytes(),
                             args.min_count)
            write_json(args.out_dir / f"oov_{data_dir.name}.json", rep)
            print(f"train_tokenizer: {data_dir.name}: word OOV {100 * rep['word_oov_rate']:.1f}% "
                  f"(vocab {rep['word_vocab_size']}, min count {args.min_count}); "
                  f"sentencepiece {rep['sp_pieces_per_word']:.2f} pieces/word, words with an "
                  f"unknown piece {100 * rep['sp_word_with_unk_rate']:.2f}%")
    except (PunctInputError, RuntimeError) as err:
        return report_error("train_tokenizer", err)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
