"""Training speed per precision: tokens/s of training steps in fp32, bf16 (and fp16), in
one run, on the same model, windows and batches.

  python -m punct.bin.train_benchmark --config conf/model/nagy.yaml --data-dir data/train \
      --out-dir results/train_benchmark [--steps 20] [--reps 2] [--num-threads 2]

Per precision: one untimed warm-up step, then ``--steps`` optimizer steps timed, repeated
``--reps`` times interleaved with the other precisions (the best repetition is kept:
other load on a shared machine only ever slows a run). Each precision starts from the
same initial weights. Tokens are the non-padding positions of the batches. The report
names the CPU, its bf16 flags and the precision ``train.precision: auto`` picks here;
bf16 on a CPU without native bf16 is emulated and much slower than fp32.
Writes ``train_benchmark.json`` and ``train_benchmark.md``.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

from punct.config import OptimizerSection, load_config
from punct.data.sequences import load_data_dir
from punct.engine.precision import (
    BF16_CPU_FLAGS,
    autocast_dtype,
    cpu_flags,
    resolve_precision,
)
from punct.errors import PunctInputError, report_error
from punct.labels import get_label_set
from punct.registry import lookup
from punct.train.byte_dropout import apply_dropout_masks
from punct.train.env import cpu_model, set_num_threads
from punct.train.optim import build_optimizer
from punct.train.seed import seed_everything


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m punct.bin.train_benchmark", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", required=True, help="system config (YAML)")
    p.add_argument("--data-dir", required=True, help="data dir whose words.tsv gives windows")
    p.add_argument("--out-dir", required=True, help="where train_benchmark.json/.md go")
    p.add_argument("--precisions", default="fp32,bf16",
                   help="comma-separated: fp32, bf16, fp16 (fp16 uses a gradient scaler)")
    p.add_argument("--steps", type=int, default=20, help="timed steps per repetition")
    p.add_argument("--reps", type=int, default=2, help="repetitions per precision")
    p.add_argument("--batch-size", type=int, default=None, help="default: train.batch_size")
    p.add_argument("--num-threads", type=int, default=None, help="torch threads")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="config override (repeatable)")
    return p


def time_steps(model: torch.nn.Module, batches: list[dict[str, torch.Tensor]],
               opts: OptimizerSection, precision: str) -> float:
    """Seconds for one optimizer step per batch (after one untimed warm-up step)."""
    dtype = autocast_dtype(precision)
    optimizer = build_optimizer(model, opts)
    scaler = torch.amp.GradScaler("cpu") if precision == "fp16" else None
    model.train()

    def step(batch: dict[str, torch.Tensor]) -> None:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=dtype or torch.float32, enabled=dtype is not None):
            loss = model.loss(batch)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()

    step(batches[0])
    start = time.perf_counter()
    for batch in batches:
        step(batch)
    return time.perf_counter() - start


def run(args: argparse.Namespace) -> dict[str, Any]:
    threads = set_num_threads(args.num_threads)
    config = load_config(args.config, args.set)
    family = lookup("family", config.family)
    label_set = get_label_set(config.label_set)
    _, seqs = load_data_dir(args.data_dir, label_set, config.streams)
    seed_everything(config.train.seed)
    featurizer = family.make_featurizer(config)
    featurizer.fit(seqs)
    model = family.make_model(config, featurizer)
    dropout_masks = apply_dropout_masks(model, config.train, "cpu")
    on_epoch_start = getattr(model, "on_epoch_start", None)
    if callable(on_epoch_start):  # past any frozen-encoder epochs: the whole model trains
        on_epoch_start(10**6)
    initial = copy.deepcopy(model.state_dict())
    tcfg = config.train
    size = args.batch_size or tcfg.batch_size
    windows = featurizer.windows(seqs, tcfg.window, tcfg.stride)
    need = size * args.steps
    if len(windows) < need:
        raise PunctInputError(f"{args.data_dir} gives {len(windows)} windows; "
                              f"{args.steps} steps of {size} need {need}")
    batches = [featurizer.collate(windows[i:i + size]) for i in range(0, need, size)]
    tokens = sum(int(b["attention_mask"].sum()) if "attention_mask" in b
                 else int((b["word_ids"] >= 0).sum()) for b in batches)
    precisions = [p.strip() for p in args.precisions.split(",") if p.strip()]
    best: dict[str, float] = {}
    for _ in range(args.reps):
        for precision in precisions:
            model.load_state_dict(initial)
            seconds = time_steps(model, batches, tcfg.optimizer, precision)
            best[precision] = min(best.get(precision, float("inf")), seconds)
    flags = sorted(cpu_flags() & BF16_CPU_FLAGS)
    rows = [{"precision": p, "seconds": round(best[p], 3),
             "tokens_per_s": round(tokens / best[p], 1),
             "speedup_vs_fp32": (round(best["fp32"] / best[p], 3) if "fp32" in best else None)}
            for p in precisions]
    return {"config": str(args.config), "family": config.family, "data_dir": args.data_dir,
            "steps": args.steps, "batch_size": size, "window": tcfg.window,
            "tokens": tokens, "threads": threads, "cpu": cpu_model(), "bf16_flags": flags,
            "auto_precision": resolve_precision("auto", "cpu"), "reps": args.reps, "rows": rows,
            "dropout_masks": dropout_masks, "torch": torch.__version__}


def render(report: dict[str, Any]) -> str:
    """The Markdown table of a report."""
    flags = ", ".join(report["bf16_flags"]) or "none (bf16 is emulated: slow)"
    lines = [
        f"# Training speed per precision ({report['family']}, {report['config']})", "",
        f"CPU: {report['cpu']}; native bf16 flags: {flags}; `train.precision: auto` picks "
        f"**{report['auto_precision']}** here. {report['threads']} threads, "
        f"{report['steps']} steps of batch {report['batch_size']} (window "
        f"{report['window']}, {report['tokens']} tokens), best of {report['reps']}; "
        f"dropout masks: {report.get('dropout_masks', 'torch')}.", "",
        "| precision | seconds | tokens/s | speed-up vs fp32 |", "|---|---|---|---|",
    ]
    for row in report["rows"]:
        ratio = "" if row["speedup_vs_fp32"] is None else f"{row['speedup_vs_fp32']:.2f}x"
        lines.append(f"| {row['precision']} | {row['seconds']:.2f} | "
                     f"{row['tokens_per_s']:.0f} | {ratio} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        report = run(args)
    except PunctInputError as err:
        return report_error("train_benchmark", err)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "train_benchmark.json").write_text(json.dumps(report, indent=2) + "\n",
                                              encoding="utf-8")
    (out / "train_benchmark.md").write_text(render(report), encoding="utf-8")
    sys.stdout.write(render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
