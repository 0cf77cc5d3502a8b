"""Training speed per precision: tokens/s of training steps in fp32, bf16 (and fp16), in
one run, on the same model, windows and batches.

  python -m punct.bin.train_benchmark --config conf/model/nagy.yaml --data-dir data/train \
      --out-dir results/train_benchmark [--steps 20] [--reps 2] [--num-threads 2]

Per precision (and ``--compile`` mode): one untimed warm-up step (more with
``--warmup``: a compiled loss compiles there), then ``--steps`` optimizer steps timed,
repeated ``--reps`` times interleaved with the other rows (the best repetition is kept:
other load on a shared machine only ever slows a run). Each row starts from the same
initial weights. Tokens are the non-padding positions of the batches. The report names
the CPU, its bf16 flags and the precision ``train.precision: auto`` picks here; bf16 on a
CPU without native bf16 is emulated and much slower than fp32.
- ``--device cuda``: the steps on the GPU (batches copied there beforehand; the clock
  waits for the device);
- ``--compile off,default``: each mode of ``train.compile`` (``punct.train.compiled``);
- ``--trainer-extras``: each step also does what the trainer adds around the model: the
  finite-loss check and the loss read (two waits for the device) and gradient clipping
  at ``train.grad_clip``;
- ``--profile FILE``: torch.profiler's table (top operations by host time, and the
  device's) of one more run of the first row, over its first ``--profile-steps`` steps
  (default 10: on a GPU each launch becomes profiler events, and 100 steps took over
  90 s to tabulate).
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

from punct.config import COMPILE_MODES, OptimizerSection, load_config
from punct.data.sequences import load_data_dir
from punct.engine.precision import (
    BF16_CPU_FLAGS,
    autocast_dtype,
    cpu_flags,
    cpu_model,
    resolve_precision,
)
from punct.engine.transfer import batch_to_device
from punct.errors import PunctInputError, report_error
from punct.labels import get_label_set
from punct.registry import lookup
from punct.train.byte_dropout import apply_dropout_masks
from punct.train.compiled import loss_function
from punct.train.env import setup_compute
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
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--compile", default="off",
                   help="comma-separated train.compile modes: off, default, reduce-overhead")
    p.add_argument("--warmup", type=int, default=1, help="untimed steps before each run")
    p.add_argument("--trainer-extras", action="store_true",
                   help="add the trainer's finite-loss check, loss read and grad clipping")
    p.add_argument("--profile", default=None, metavar="FILE",
                   help="write torch.profiler's table of one run of the first row")
    p.add_argument("--profile-steps", type=int, default=10,
                   help="steps of the profiled run (its first batches)")
    return p


def time_steps(model: torch.nn.Module, batches: list[dict[str, torch.Tensor]],
               opts: OptimizerSection, precision: str, device: torch.device,
               compile_mode: str = "off", warmup: int = 1, grad_clip: float | None = None,
               profile: Path | None = None) -> float:
    """Seconds for one optimizer step per batch (after ``warmup`` untimed steps).
    ``grad_clip`` (not None): the trainer's extras (finite-loss check, loss read, clipping
    at that norm when positive)."""
    dtype = autocast_dtype(precision)
    optimizer = build_optimizer(model, opts)
    scaler = torch.amp.GradScaler(device.type) if precision == "fp16" else None
    loss_of = loss_function(model, compile_mode)
    params = [p for p in model.parameters() if p.requires_grad]
    model.train()

    def step(batch: dict[str, torch.Tensor]) -> None:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=dtype or torch.float32,
                            enabled=dtype is not None):
            loss = loss_of(batch)
        if grad_clip is not None:
            _ = bool(torch.isfinite(loss)), float(loss.detach())
        (scaler.scale(loss) if scaler is not None else loss).backward()
        if scaler is not None:
            scaler.unscale_(optimizer)
        if grad_clip:
            torch.nn.utils.clip_grad_norm_([p for p in params if p.grad is not None],
                                           grad_clip)
        if scaler is not None:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()

    for i in range(warmup):
        step(batches[i % len(batches)])
    _wait(device)
    start = time.perf_counter()
    if profile is None:
        for batch in batches:
            step(batch)
    else:
        with torch.profiler.profile(activities=_activities(device)) as prof:
            for batch in batches:
                step(batch)
            _wait(device)
    _wait(device)
    seconds = time.perf_counter() - start
    if profile is not None:
        sort = "self_cpu_time_total"
        tables = [prof.key_averages().table(sort_by=sort, row_limit=30)]
        if device.type == "cuda":
            tables.append(prof.key_averages().table(sort_by="self_cuda_time_total",
                                                    row_limit=20))
        profile.parent.mkdir(parents=True, exist_ok=True)
        profile.write_text("\n\n".join(tables) + "\n", encoding="utf-8")
    return seconds


def _wait(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _activities(device: torch.device) -> list[torch.profiler.ProfilerActivity]:
    acts = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    return acts


def run(args: argparse.Namespace) -> dict[str, Any]:
    threads = setup_compute(args.num_threads)
    config = load_config(args.config, args.set)
    family = lookup("family", config.family)
    label_set = get_label_set(config.label_set)
    _, seqs = load_data_dir(args.data_dir, label_set, config.streams)
    seed_everything(config.train.seed)
    featurizer = family.make_featurizer(config)
    featurizer.fit(seqs)
    model = family.make_model(config, featurizer)
    device = torch.device(args.device)
    dropout_masks = apply_dropout_masks(model, config.train, device)
    on_epoch_start = getattr(model, "on_epoch_start", None)
    if callable(on_epoch_start):  # past any frozen-encoder epochs: the whole model trains
        on_epoch_start(10**6)
    model.to(device)
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
    batches = [batch_to_device(b, device) for b in batches]
    precisions = [p.strip() for p in args.precisions.split(",") if p.strip()]
    modes = [m.strip() for m in args.compile.split(",") if m.strip()]
    unknown = sorted(set(modes) - set(COMPILE_MODES))
    if unknown:
        raise PunctInputError(f"--compile: unknown mode(s) {', '.join(unknown)} (known: "
                              f"{', '.join(COMPILE_MODES)})")
    grad_clip = tcfg.grad_clip if args.trainer_extras else None
    combos = [(p, m) for p in precisions for m in modes]
    best: dict[tuple[str, str], float] = {}
    for _ in range(args.reps):
        for combo in combos:
            model.load_state_dict(initial)
            seconds = time_steps(model, batches, tcfg.optimizer, combo[0], device, combo[1],
                                 args.warmup, grad_clip)
            best[combo] = min(best.get(combo, float("inf")), seconds)
    if args.profile:
        precision, mode = combos[0]
        model.load_state_dict(initial)
        time_steps(model, batches[:max(args.profile_steps, 1)], tcfg.optimizer, precision,
                   device, mode, args.warmup, grad_clip, Path(args.profile))
    flags = sorted(cpu_flags() & BF16_CPU_FLAGS)
    rows = [{"precision": p, "compile": m, "seconds": round(best[p, m], 3),
             "ms_per_step": round(1000 * best[p, m] / args.steps, 2),
             "tokens_per_s": round(tokens / best[p, m], 1),
             "speedup_vs_fp32": (round(best["fp32", m] / best[p, m], 3)
                                 if ("fp32", m) in best else None)}
            for p, m in combos]
    return {"config": str(args.config), "family": config.family, "data_dir": args.data_dir,
            "steps": args.steps, "batch_size": size, "window": tcfg.window,
            "tokens": tokens, "threads": threads, "cpu": cpu_model(), "bf16_flags": flags,
            "device": _device_name(device), "trainer_extras": args.trainer_extras,
            "auto_precision": resolve_precision("auto", device), "reps": args.reps,
            "rows": rows, "dropout_masks": dropout_masks, "torch": torch.__version__}


def _device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"


def render(report: dict[str, Any]) -> str:
    """The Markdown table of a report."""
    flags = ", ".join(report["bf16_flags"]) or "none (bf16 is emulated: slow)"
    lines = [
        f"# Training speed per precision ({report['family']}, {report['config']})", "",
        f"Device: {report['device']}; CPU: {report['cpu']}; native bf16 flags: {flags}; "
        f"`train.precision: auto` picks **{report['auto_precision']}** here. "
        f"{report['threads']} threads, {report['steps']} steps of batch "
        f"{report['batch_size']} (window {report['window']}, {report['tokens']} tokens), "
        f"best of {report['reps']}; dropout masks: {report['dropout_masks']}; the "
        f"trainer's extras: {'yes' if report['trainer_extras'] else 'no'}.", "",
        "| precision | compile | seconds | ms/step | tokens/s | speed-up vs fp32 |",
        "|---|---|---|---|---|---|",
    ]
    for row in report["rows"]:
        ratio = "" if row["speedup_vs_fp32"] is None else f"{row['speedup_vs_fp32']:.2f}x"
        lines.append(f"| {row['precision']} | {row['compile']} | {row['seconds']:.2f} | "
                     f"{row['ms_per_step']:.1f} | {row['tokens_per_s']:.0f} | {ratio} |")
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
