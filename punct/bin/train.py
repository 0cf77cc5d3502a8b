"""Train one system (stages 4-5): ``python -m punct.bin.train --config conf/model/X.yaml
--train-dir data/train --dev-dir data/dev --exp-dir exp/X [--set train.epochs=3]``."""

from __future__ import annotations

import argparse
import json

from punct.errors import PunctInputError, report_error
from punct.train.config import load_config
from punct.train.env import set_num_threads


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m punct.bin.train", description=__doc__,
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--config", required=True, help="model config YAML (conf/model/*.yaml)")
    parser.add_argument("--train-dir", required=True, help="data dir with words.tsv")
    parser.add_argument("--dev-dir", required=True, help="data dir with words.tsv")
    parser.add_argument("--exp-dir", required=True, help="output experiment directory")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help="override a config value, e.g. train.epochs=3")
    parser.add_argument("--num-threads", type=int, default=None,
                        help="torch threads (default: $OMP_NUM_THREADS, else torch's default)")
    parser.add_argument("--quiet", action="store_true", help="no progress output on stderr")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        threads = set_num_threads(args.num_threads)
        config = load_config(args.config, args.overrides)
        from punct.train.trainer import train_experiment

        summary = train_experiment(config, args.train_dir, args.dev_dir, args.exp_dir,
                                   threads=threads, quiet=args.quiet)
    except (PunctInputError, ValueError, KeyError) as err:
        return report_error("train", err)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
