"""Seeded short trainings, to check that a refactoring leaves training unchanged:
``python -m punct.bin.seeded_weights --config a.yaml --config b.yaml --train-dir data/train
--dev-dir data/dev --out DIR [--compare OLD_DIR]``.

Each config trains for ``--epochs`` epochs of ``--steps`` steps (its own seed, one thread)
into ``DIR/<config name>``. With ``--compare``, every weight of each ``best.pt`` must be
bit-identical to the one under ``OLD_DIR`` (written by the same command on the code before
the change), and the two ``config.yaml`` must resolve to the same config; the command
prints one line per config and exits 1 when any differs. Run both sides on the same
machine: float sums in another order (another CPU's kernels) change the last bits.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import torch

from punct.config import load_config
from punct.errors import MissingDataError, PunctInputError, report_error


def train_one(config: Path, args: argparse.Namespace, exp: Path) -> int:
    """One short seeded training of ``config`` into ``exp`` (a fresh directory); returns
    the trainer's exit code (its error, if any, is on stderr)."""
    command = [sys.executable, "-m", "punct.bin.train", "--config", str(config),
               "--train-dir", args.train_dir, "--dev-dir", args.dev_dir, "--exp-dir", str(exp),
               "--num-threads", "1", "--quiet",
               "--set", f"train.epochs={args.epochs}",
               "--set", f"train.max_steps_per_epoch={args.steps}",
               "--set", "train.min_epochs=0", *(x for s in args.overrides for x in ("--set", s))]
    return subprocess.run(command, check=False, stdout=subprocess.DEVNULL).returncode


def weights(exp: Path) -> dict[str, torch.Tensor]:
    """The model weights of ``exp/best.pt``."""
    path = exp / "best.pt"
    if not path.is_file():
        raise MissingDataError("no best.pt to compare with", path)
    return torch.load(path, map_location="cpu", weights_only=False)["model"]


def differences(new: Path, old: Path) -> list[str]:
    """What differs between two experiments' weights and resolved configs."""
    out = []
    a, b = weights(new), weights(old)
    if set(a) != set(b):
        out.append(f"weight names differ: {sorted(set(a) ^ set(b))[:5]}")
    out += [f"{name}: max |diff| {(a[name].float() - b[name].float()).abs().max().item():.3g}"
            for name in sorted(set(a) & set(b))
            if a[name].shape != b[name].shape or not torch.equal(a[name], b[name])]
    if load_config(new / "config.yaml") != load_config(old / "config.yaml"):
        out.append("the resolved config.yaml differs")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m punct.bin.seeded_weights",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", action="append", required=True, type=Path)
    parser.add_argument("--train-dir", required=True)
    parser.add_argument("--dev-dir", required=True)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--compare", type=Path, help="the same command's output before")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args(argv)
    failed = 0
    for config in args.config:
        exp = args.out / config.stem
        if not (exp / "best.pt").is_file():
            code = train_one(config, args, exp)
            if code:
                print(f"seeded_weights: training {config} failed (exit {code}; its error "
                      "is above)", file=sys.stderr)
                return code
        if args.compare is None:
            print(f"{config.stem}: trained")
            continue
        try:
            diff = differences(exp, args.compare / config.stem)
        except PunctInputError as err:
            return report_error("seeded_weights", err)
        failed += bool(diff)
        print(f"{config.stem}: " + ("identical weights and config" if not diff
                                    else "DIFFERS: " + "; ".join(diff[:6])))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
