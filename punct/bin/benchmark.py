"""Speed benchmark: words/s of each system against the Hugging Face pipeline and the bare
encoder, on the same model, the same text and in the same run.

  python -m punct.bin.benchmark --exp-dir exp/A [--exp-dir exp/B ...] --data-dir data/test
      --out-dir results/benchmark [--reps 5] [--num-threads 2] [--bf16 auto]

Per system (decode settings of its config unless overridden), each timed ``--reps``
times, interleaved, best run kept (other load on the machine only ever slows a run):
- ``engine``: our engine at 1 prediction per token (stride = window) on the data dir
  (with its pauses), and ``engine_default`` at the config's stride;
- ``engine_text``: the engine at 1 prediction per token on the words alone (no pauses),
  the input the pipeline gets;
- ``pipeline_b1`` / ``pipeline_bN``: ``pipeline("token-classification", stride=...)``
  over the same weights (``punct.engine.hf_adapter``), chunks of ``window`` pieces, no
  overlap (1 prediction per token), batch size 1 (its default) and N (ours);
  ``*_no_overhead`` subtracts the adapter's own regrouping time from the pipeline's;
- ``encoder``: the bare pretrained encoder's forward pass over the engine's windows
  (already tokenised and batched), the ceiling of any engine;
- ``plan``: the featurizer's window plan alone (tokenisation and windows), the first
  part of every engine row. Engine rows also record their best ``predict_seconds``
  (plan, batches, model, aggregation) and ``decide_seconds`` (decisions and rules).
  ``--profile-engine`` writes torch.profiler's table of one ``engine`` run
  (``engine_profile_<system>.txt``: where the host's time goes, and the device's).
Word-level families (no sub-word tokenizer, no pretrained encoder) get the engine rows.
Engine rows also give the micro F1 under the pipeline's decision rule (at most one mark
per word, ``micro_f1_one_mark``), which separates the decision rule from the engine.
Writes ``benchmark.json`` and ``benchmark.md`` (words/s, ratios, micro F1) to --out-dir.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from punct.data.sequences import load_data_dir
from punct.engine.decode import (
    decide,
    decode_settings,
    hypothesis_rows,
    keep_best_mark,
    load_experiment,
    pick_device,
    predict_words,
)
from punct.engine.hf_adapter import find_encoder, make_pipeline, pipeline_decode
from punct.errors import PunctInputError, report_error
from punct.labels import get_label_set
from punct.score.metrics import score_tables
from punct.train.env import collect_env, setup_compute


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m punct.bin.benchmark", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--exp-dir", action="append", required=True,
                        help="trained experiment directory (repeat for several systems)")
    parser.add_argument("--data-dir", required=True, help="data dir with words.tsv")
    parser.add_argument("--out-dir", required=True, help="where benchmark.json/.md go")
    parser.add_argument("--reps", type=int, default=5, help="timed runs per method")
    parser.add_argument("--num-threads", type=int, default=None, help="torch threads")
    parser.add_argument("--device", default="auto", help="cpu, cuda or auto")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="default: decode.batch_size (on CUDA at least "
                             "decode.gpu_batch_tokens // window)")
    parser.add_argument("--bf16", choices=("auto", "on", "off"), default=None,
                        help="bf16 autocast for every method (default: decode.bf16)")
    parser.add_argument("--no-pipeline", action="store_true", help="skip the HF pipeline rows")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall: elapsed time; cpu: this process's CPU time (steadier on a "
                             "shared machine; use with --num-threads 1)")
    parser.add_argument("--profile-engine", action="store_true",
                        help="also write torch.profiler's table of one engine run per system")
    return parser


def _best_times(methods: dict[str, Callable[[], Any]], reps: int,
                clock: Callable[[], float] = time.perf_counter) -> dict[str, float]:
    """One warm-up run each, then ``reps`` interleaved timed runs; the fastest of each."""
    for fn in methods.values():
        fn()
    best = {name: float("inf") for name in methods}
    for _ in range(reps):
        for name, fn in methods.items():
            start = clock()
            fn()
            best[name] = min(best[name], clock() - start)
    return best


def _without_pauses(seqs: list) -> list:
    return [replace(s, pauses=np.full(len(s), np.nan, dtype=np.float32), feats={})
            for s in seqs]


def _profile_table(fn: Callable[[], Any], device: torch.device) -> str:
    """torch.profiler's operators of one call of ``fn``, by their own host time."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as prof:
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
    return str(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=40))


def bench_system(exp_dir: str, data_dir: str, reps: int, device: torch.device,
                 batch_size: int | None, bf16: str | None, with_pipeline: bool = True,
                 clock: str = "wall", profile_dir: Path | None = None) -> dict[str, Any]:
    """All rows of one system: words/s, seconds and micro F1 per method, and the ratios;
    with ``profile_dir``, the profiler's table of one engine run written there."""
    timer = time.process_time if clock == "cpu" else time.perf_counter
    exp = load_experiment(exp_dir, device=device)
    cfg = exp.config
    ls = get_label_set(cfg.label_set)
    utts, seqs = load_data_dir(data_dir, ls, cfg.streams)
    text_seqs = _without_pauses(seqs)
    default = decode_settings(cfg, device, batch_size=batch_size, bf16=bf16)
    one = decode_settings(cfg, device, per_token=1, batch_size=batch_size, bf16=bf16)
    n_words = sum(len(s) for s in seqs)
    decisions: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    parts: dict[str, dict[str, float]] = {}  # an engine row's best predict and decide times

    def engine(name: str, st: Any, inputs: list) -> Callable[[], None]:
        def run() -> None:
            start = timer()
            pred = predict_words(exp.model, exp.featurizer, inputs, st.window, st.stride,
                                 st.batch_size, st.bf16, st.aggregate, device,
                                 exclusive=st.exclusive)
            middle = timer()
            marks, caps = decide(pred, inputs, ls.labels, st.threshold, st.exclusive,
                                 st.combinations, st.constraints)
            best = parts.setdefault(name, {})
            for part, seconds in (("predict_seconds", middle - start),
                                  ("decide_seconds", timer() - middle)):
                best[part] = min(best.get(part, float("inf")), seconds)
            decisions[name] = (marks, caps)
            decisions[f"{name}_one_mark"] = (keep_best_mark(marks, pred.punct), caps)
        return run

    methods: dict[str, Callable[[], Any]] = {
        "engine": engine("engine", one, seqs),
        "engine_default": engine("engine_default", default, seqs),
        "engine_text": engine("engine_text", one, text_seqs),
        "plan": lambda: exp.featurizer.plan(list(seqs), one.window, one.stride),
    }
    notes: list[str] = []
    wrappers: dict[str, Any] = {}
    has_tokenizer = getattr(getattr(exp.featurizer, "tokenizer", None), "is_fast", False)
    if with_pipeline and has_tokenizer:
        for name, size in (("pipeline_b1", 1), (f"pipeline_b{one.batch_size}", one.batch_size)):
            pipe, wrapper = make_pipeline(exp.model, exp.featurizer, ls, one.window,
                                          one.aggregate, one.bf16, device)
            wrappers[name] = wrapper

            def run(pipe: Any = pipe, name: str = name, size: int = size) -> None:
                decisions[name] = pipeline_decode(pipe, text_seqs, ls.labels, overlap=0,
                                                  batch_size=size)
            methods[name] = run
    elif with_pipeline:
        notes.append("no HF pipeline: the family has no fast sub-word tokenizer")
    try:
        encoder = find_encoder(exp.model)
    except ValueError:
        encoder = None
        notes.append("no bare-encoder row: the model holds no Hugging Face encoder")
    if encoder is not None:
        windows = exp.featurizer.windows(list(seqs), one.window, one.stride)
        windows.sort(key=lambda w: -len(w["word_ids"]))
        batches = [exp.featurizer.collate(windows[i:i + one.batch_size])
                   for i in range(0, len(windows), one.batch_size)]
        inputs = [{k: b[k].to(device) for k in ("input_ids", "attention_mask") if k in b}
                  for b in batches]

        def bare() -> None:
            with torch.inference_mode(), torch.autocast(device.type, dtype=torch.bfloat16,
                                                        enabled=one.bf16):
                for batch in inputs:
                    encoder(**batch)
            if device.type == "cuda":
                torch.cuda.synchronize()
        methods["encoder"] = bare
    best = _best_times(methods, reps, timer)
    if profile_dir is not None:
        profile_dir.mkdir(parents=True, exist_ok=True)
        (profile_dir / f"engine_profile_{Path(exp_dir).name}.txt").write_text(
            _profile_table(methods["engine"], device) + "\n", encoding="utf-8")
    for name, wrapper in wrappers.items():  # the adapter's own time, per run (warm-up too)
        per_run = wrapper.overhead_seconds / (reps + 1)
        best[f"{name}_no_overhead"] = max(best[name] - per_run, 1e-9)
    rows: dict[str, dict[str, Any]] = {}
    for name, seconds in best.items():
        row: dict[str, Any] = {"seconds": round(seconds, 7),
                               "words_per_s": round(n_words / seconds, 1)}
        row.update({k: round(v, 7) for k, v in parts.get(name, {}).items()})
        key = name.removesuffix("_no_overhead")
        if key in decisions:
            marks, caps = decisions[key]
            hyp = hypothesis_rows(utts, seqs, marks, caps, ls.labels)
            scores = score_tables(utts, hyp, ls)["all"]
            row["micro_f1"] = round(scores["micro_f1"], 4)
            row["cap_micro_f1"] = round(scores["cap_micro_f1"], 4)
        if f"{key}_one_mark" in decisions:  # the pipeline's rule: at most one mark per word
            marks, caps = decisions[f"{key}_one_mark"]
            hyp = hypothesis_rows(utts, seqs, marks, caps, ls.labels)
            row["micro_f1_one_mark"] = round(score_tables(utts, hyp, ls)["all"]["micro_f1"], 4)
        rows[name] = row

    def ratio(a: str, b: str) -> float | None:
        if a in rows and b in rows:
            return round(rows[a]["words_per_s"] / rows[b]["words_per_s"], 3)
        return None

    ratios = {"engine_vs_encoder": ratio("engine", "encoder"),
              "engine_default_vs_encoder": ratio("engine_default", "encoder")}
    for name in wrappers:
        ratios[f"engine_text_vs_{name}"] = ratio("engine_text", name)
        ratios[f"engine_text_vs_{name}_no_overhead"] = ratio("engine_text",
                                                             f"{name}_no_overhead")
    return {"exp_dir": str(exp_dir), "family": cfg.family, "label_set": cfg.label_set,
            "words": n_words, "utterances": len(seqs), "window": one.window,
            "stride_default": default.stride, "batch_size": one.batch_size, "bf16": one.bf16,
            "aggregate": one.aggregate, "methods": rows,
            "ratios": {k: v for k, v in ratios.items() if v is not None}, "notes": notes}


def _pct(value: float | None) -> str:
    return "" if value is None else f"{100 * value:.1f}"


def to_markdown(report: dict[str, Any]) -> str:
    """The benchmark as Markdown: one table of methods and one of ratios per system."""
    env = report["env"]
    lines = [f"# Speed benchmark ({env['device']}, {env['threads']} threads, best of "
             f"{report['reps']} runs, {report.get('clock', 'wall')} clock, load average "
             f"{env['load_average']})", ""]
    for sysrep in report["systems"]:
        name = Path(sysrep["exp_dir"]).name
        lines += [f"## {name} ({sysrep['family']}, {sysrep['words']} words, window "
                  f"{sysrep['window']}, batch {sysrep['batch_size']}, bf16 {sysrep['bf16']})",
                  "", "| method | words/s | x engine | micro F1 | micro F1, one mark/word "
                  "| cap F1 |", "|---|---:|---:|---:|---:|---:|"]
        base = sysrep["methods"]["engine"]["words_per_s"]
        for method, row in sysrep["methods"].items():
            cells = [_pct(row.get(k)) for k in ("micro_f1", "micro_f1_one_mark", "cap_micro_f1")]
            lines.append(f"| {method} | {row['words_per_s']:.0f} | "
                         f"{row['words_per_s'] / base:.2f} | {' | '.join(cells)} |")
        split = [f"- {method}: {row['seconds']:.3f} s at best; its best predict "
                 f"{row['predict_seconds']:.3f} s, decide {row['decide_seconds']:.3f} s"
                 for method, row in sysrep["methods"].items() if "predict_seconds" in row]
        lines += ["", *split] if split else []
        lines += ["", "| ratio | value |", "|---|---:|"]
        lines += [f"| {k} | {v:.2f}x |" for k, v in sysrep["ratios"].items()]
        lines += [f"- {note}" for note in sysrep["notes"]]
        lines.append("")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Benchmark every system; write the JSON and Markdown reports."""
    if args.reps < 1:
        raise PunctInputError(f"--reps must be >= 1, got {args.reps}")
    device = pick_device(args.device)
    env = collect_env(threads=torch.get_num_threads())
    env["device"] = str(device)
    env["load_average"] = round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None
    profile_dir = Path(args.out_dir) if args.profile_engine else None
    systems = [bench_system(e, args.data_dir, args.reps, device, args.batch_size, args.bf16,
                            not args.no_pipeline, args.clock, profile_dir)
               for e in args.exp_dir]
    report = {"format": "punct-benchmark/1", "data_dir": str(args.data_dir), "reps": args.reps,
              "clock": args.clock, "env": env, "systems": systems}
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "benchmark.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (out / "benchmark.md").write_text(to_markdown(report), encoding="utf-8")
    return report


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        setup_compute(args.num_threads)
        report = run(args)
    except PunctInputError as err:
        return report_error("benchmark", err)
    for sysrep in report["systems"]:
        ratios = ", ".join(f"{k} {v:.2f}x" for k, v in sysrep["ratios"].items())
        print(f"{Path(sysrep['exp_dir']).name}: {ratios}")
    print(f"-> {args.out_dir}/benchmark.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
