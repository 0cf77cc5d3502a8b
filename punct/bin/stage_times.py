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
import re
from pathlib import Path

from punct.errors import PunctInputError, report_error


def collect(stages_dir: Path) -> dict[str, object]:
    """Stage name -> seconds, plus the total, from the JSON done markers."""
    stages = {}
    for path in sorted(stages_dir.glob("*.done"), key=lambda p: int(p.stem)):
        info = json.loads(path.read_text(encoding="utf-8"))
        stages[f"stage {info['stage']} ({info['name']})"] = info["seconds"]
    return {"seconds_per_stage": stages, "total_seconds": sum(stages.values())}


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise PunctInputError(f"not JSON: {err.msg}", path, err.lineno) from None


LOG_PRECISION = re.compile(r"; precision (\w+) \(train\.precision")


def logged_precision(log_path: Path) -> str | None:
    """The precision a training ran in, from the header line of its ``train.log`` (the
    last header: a resumed run writes another)."""
    if not log_path.is_file():
        return None
    found = LOG_PRECISION.findall(log_path.read_text(encoding="utf-8", errors="replace"))
    return found[-1] if found else None


def system_training(exp_dir: Path) -> dict[str, object] | None:
    """The training record of one experiment: minutes, epochs, best epoch, commit, threads,
    device and precision (None when it has no ``history.json``, e.g. a system that was not
    trained)."""
    history_path = exp_dir / "history.json"
    if not history_path.is_file():
        return None
    history = _read_json(history_path)
    if not isinstance(history, list):
        raise PunctInputError("history.json must be a list of epochs", history_path)
    env_path = exp_dir / "env.json"
    env = _read_json(env_path) if env_path.is_file() else {}
    best = [row["epoch"] for row in history if row.get("best")]
    return {
        "train_minutes": round(sum(float(row.get("seconds", 0.0)) for row in history) / 60, 1),
        "epochs": len(history),
        "best_epoch": best[-1] if best else None,
        "git_sha": str(env.get("git_sha") or "unknown")[:10],
        "threads": env.get("threads"),
        "device": env.get("device"),
        "precision": logged_precision(exp_dir / "train.log"),
    }


def collect_training(exp_dir: Path, systems: list[str]) -> dict[str, dict[str, object]]:
    """System -> training record, for the systems that have one."""
    out = {}
    for system in systems:
        record = system_training(exp_dir / system)
        if record is not None:
            out[system] = record
    return out


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
