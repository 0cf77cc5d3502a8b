"""Collect the stage markers' run times (``.stages/N.done``) into one JSON."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def collect(stages_dir: Path) -> dict[str, object]:
    """Stage name -> seconds, plus the total, from the JSON done markers."""
    stages = {}
    for path in sorted(stages_dir.glob("*.done"), key=lambda p: int(p.stem)):
        info = json.loads(path.read_text(encoding="utf-8"))
        stages[f"stage {info['stage']} ({info['name']})"] = info["seconds"]
    return {"seconds_per_stage": stages, "total_seconds": sum(stages.values())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--stages-dir", type=Path, default=Path(".stages"))
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(collect(args.stages_dir), indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
