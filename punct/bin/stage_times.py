"""Collect the run times of a recipe: the stage markers' (``.stages/N.done``) into one
JSON and, with ``--exp-dir``, each trained system's (``exp/<system>/history.json`` and
``env.json``) into another.

Example (stage 6):
  python -m punct.bin.stage_times --stages-dir .stages --out exp/stage_times.json \\
      --exp-dir exp --systems "brnn_text nagy" --train-out exp/train_times.json

A stage's time covers what that run of the stage did; the per-system record says how long
each system trained, for how many epochs, at which commit and on what, so a table stays
honest when systems were trained by separate runs of stage 5.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from punct.errors import PunctInputError, report_error
from punct.score.training import collect_training


def collect(stages_dir: Path) -> dict[str, object]:
    """Stage name -> seconds, plus the total, from the JSON done markers."""
    stages = {}
    for path in sorted(stages_dir.glob("*.done"), key=lambda p: int(p.stem)):
        info = json.loads(path.read_text(encoding="utf-8"))
        stages[f"stage {info['stage']} ({info['name']})"] = info["seconds"]
    return {"seconds_per_stage": stages, "total_seconds": sum(stages.values())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m punct.bin.stage_times", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stages-dir", type=Path, default=Path(".stages"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--exp-dir", type=Path, help="where the systems' experiments are")
    parser.add_argument("--systems", default="", help="space-separated system names")
    parser.add_argument("--train-out", type=Path, help="the per-system JSON (with --exp-dir)")
    args = parser.parse_args(argv)
    if (args.exp_dir is None) != (args.train_out is None):
        parser.error("--exp-dir and --train-out go together")
    try:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(collect(args.stages_dir), indent=2) + "\n",
                            encoding="utf-8")
        if args.exp_dir is not None:
            record = collect_training(args.exp_dir, args.systems.split())
            args.train_out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    except PunctInputError as err:
        return report_error("stage_times", err)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
