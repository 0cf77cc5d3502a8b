"""Train one system (stages 4-5): ``python -m punct.bin.train --config conf/model/X.yaml
--train-dir data/train --dev-dir data/dev --exp-dir exp/X [--set train.epochs=3]``.

Data parallel: ``--ngpu N`` (N > 1) starts N local processes, one per GPU (NCCL);
``--nproc N`` starts N local CPU processes (gloo). Under torchrun (``WORLD_SIZE`` > 1) or
srun with several tasks each process is one rank (with ``--ngpu`` > 0 on its own GPU).
SIGTERM/SIGUSR1 write ``last.pt`` and exit with status 75; ``--resume`` continues.

``--decode-data-dir D --decode-out-dir O`` (repeatable, paired): once trained, the main
process decodes and scores the sets with ``best.pt`` exactly as ``punct.bin.decode
--score`` would, without a second process paying the imports and the model build again
(the stage driver's CPU runs: stage 6 then finds them done).
"""

from __future__ import annotations

import argparse
import json
import sys

from punct.bin import decode
from punct.config import load_config
from punct.data.nonspeech import add_nonspeech_option
from punct.errors import PunctInputError, report_error
from punct.train.checkpoint import PREEMPTED_EXIT, TrainingPreempted
from punct.train.distributed import (
    Dist,
    check_local_gpus,
    choose_device,
    detect_env,
    launch_local,
)
from punct.train.env import setup_compute
from punct.train.trainer import train_experiment


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
    parser.add_argument("--resume", action="store_true",
                        help="continue from exp-dir/last.pt (last.prev.pt if it is damaged)")
    parser.add_argument("--ngpu", type=int, default=0,
                        help="GPUs: 0 = CPU; N > 1 starts N local processes, one per GPU")
    parser.add_argument("--nproc", type=int, default=1,
                        help="local data-parallel CPU processes (gloo) when --ngpu is 0")
    parser.add_argument("--decode-data-dir", action="append", default=[],
                        help="once trained, decode and score this set (repeatable)")
    parser.add_argument("--decode-out-dir", action="append", default=[],
                        help="where each --decode-data-dir's hypothesis and scores go")
    add_nonspeech_option(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress output on stderr")
    return parser


def decode_argv(args: argparse.Namespace) -> list[str]:
    """``punct.bin.decode`` arguments for the sets to decode after training (empty: none)."""
    if len(args.decode_data_dir) != len(args.decode_out_dir):
        raise PunctInputError(f"{len(args.decode_data_dir)} --decode-data-dir but "
                              f"{len(args.decode_out_dir)} --decode-out-dir: give one out "
                              "dir per data dir")
    if not args.decode_data_dir:
        return []
    argv = ["--exp-dir", args.exp_dir, "--score", "--nonspeech", args.nonspeech, "--quiet"]
    if args.num_threads is not None:
        argv += ["--num-threads", str(args.num_threads)]
    for data_dir, out_dir in zip(args.decode_data_dir, args.decode_out_dir, strict=True):
        argv += ["--data-dir", data_dir, "--out-dir", out_dir]
    return argv


def _local_processes(args: argparse.Namespace) -> int:
    """How many local ranks to start (1: run in this process)."""
    if args.nproc < 1:
        raise PunctInputError(f"--nproc must be >= 1, got {args.nproc}")
    if args.ngpu > 1 and args.nproc not in (1, args.ngpu):
        raise PunctInputError(f"--nproc {args.nproc} contradicts --ngpu {args.ngpu}")
    return max(args.ngpu, args.nproc)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        then_decode = decode_argv(args)
        env = detect_env()
        nproc = _local_processes(args)
        if nproc > 1 and env.world_size == 1:
            if args.ngpu > 0:
                check_local_gpus(nproc)  # fail here, not in every rank
            command = [sys.executable, "-m", "punct.bin.train",
                       *(sys.argv[1:] if argv is None else argv)]
            return launch_local(nproc, command)
        threads = setup_compute(args.num_threads)
        config = load_config(args.config, args.overrides)
        with Dist(env, choose_device(args.ngpu, env)) as dist:
            summary = train_experiment(config, args.train_dir, args.dev_dir, args.exp_dir,
                                       threads=threads, quiet=args.quiet, resume=args.resume,
                                       dist=dist)
    except TrainingPreempted as err:
        print(f"train: {err}", file=sys.stderr)
        return PREEMPTED_EXIT
    except PunctInputError as err:
        return report_error("train", err)
    if not env.is_main:
        return 0
    print(json.dumps(summary), flush=True)
    return decode_after_training(then_decode) if then_decode else 0


def decode_after_training(argv: list[str]) -> int:
    """Decode and score the sets once trained; a failure there is reported and leaves the
    sets without their ``.done``, so the training still counts and stage 6 decodes them
    again (and stops there, naming the error)."""
    try:
        status = decode.main(argv)
    except Exception as err:  # any decoding error is deferred to stage 6
        print(f"train: decoding after training failed: {err!r}; stage 6 decodes these "
              "sets again", file=sys.stderr)
        return 0
    if status:
        print("train: decoding after training failed (above); stage 6 decodes these sets "
              "again", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
