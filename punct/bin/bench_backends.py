"""Backends side by side: words/s and micro-F1 of torch fp32/bf16/int8 and onnxruntime
fp32/int8, on the CPU named in the report.

  punct bench_backends --model EXPORTED_DIR --data-dir data/test [--backends ...] [-o x.json]

Every backend decodes the same data dir (``words.tsv``) with the same engine, windows and
decision rule; only ``PunctModel.predict`` differs (``punct.export.measure``). Per
backend: words/s (model time, after one warm-up pass), micro-F1 and cap micro-F1 against
the reference, and, against the first backend (torch fp32), the largest absolute
difference of the probabilities and the share of words whose decisions differ. The
report starts with the CPU model and its flags that matter here (bf16, int8 dot
products), the engine of torch's int8 kernels, and any limit set on the kernels' instruction
sets. The onnx backends need ``model.onnx`` (``punct-export --onnx --quantize``).

A CPU without bf16 or int8 dot products (e.g. an AMD EPYC of the Zen 2 or 3 generation:
AVX2 only) can be imitated on a newer one: torch's, oneDNN's and MKL's kernels are held to
AVX2 by ``ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2
FBGEMM_ENABLE_INSTRUCTIONS=AVX2`` (the last for fbgemm, the int8 kernels of torch's default
engine on x86; ``--int8-engine onednn`` runs them on oneDNN instead).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import torch

from punct.engine.heap import heap_state
from punct.errors import PunctInputError, report_error
from punct.export.backends import SPEED_FLAGS, cpu_kind
from punct.export.measure import measure_backends
from punct.export.system import load_system
from punct.train.env import setup_compute

DEFAULT = "torch-fp32,torch-bf16,torch-int8,onnx-fp32,onnx-int8"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="punct bench_backends", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True,
                        help="exported dir (punct-export --onnx) or experiment dir (torch)")
    parser.add_argument("--data-dir", required=True, help="data dir with words.tsv")
    parser.add_argument("--backends", default=DEFAULT,
                        help=f"comma-separated, first = reference (default: {DEFAULT})")
    parser.add_argument("--num-threads", type=int, default=None, help="torch/onnx threads")
    parser.add_argument("--repeat", type=int, default=1, help="timed passes (best kept)")
    parser.add_argument("--int8-engine", default=None,
                        choices=torch.backends.quantized.supported_engines,
                        help="torch's engine of int8 kernels (default: torch's choice, "
                             f"{torch.backends.quantized.engine} here)")
    parser.add_argument("-o", "--output", default=None, help="JSON results file")
    return parser


def machine() -> dict[str, Any]:
    """The CPU model, its speed-relevant flags, the threads in use and whether glibc
    keeps freed memory (``punct.engine.heap``)."""
    return {**cpu_kind(), "threads": torch.get_num_threads(),
            "int8_engine": torch.backends.quantized.engine, "heap": heap_state()}


def table(rows: list[dict]) -> str:
    """A Markdown table of ``measure_backends`` records."""
    lines = ["| backend | words/s | speed-up | micro-F1 | cap micro-F1 | max abs diff | "
             "decisions differ |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        diff = f"{r['max_abs_diff']:.2e}" if "max_abs_diff" in r else "(reference)"
        differ = f"{100 * r['decisions_differ']:.3f}%" if "decisions_differ" in r else ""
        cap = "n/a" if r["cap_micro_f1"] is None else f"{r['cap_micro_f1']:.2f}"
        lines.append(f"| {r['backend']} | {r['words_per_s']:.0f} | {r['speedup']:.2f}x | "
                     f"{r['micro_f1']:.2f} | {cap} | {diff} | {differ} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    engine = torch.backends.quantized.engine
    try:
        setup_compute(args.num_threads)
        torch.backends.quantized.engine = args.int8_engine or engine
        info = machine()
        system = load_system(args.model, "cpu")
        rows = measure_backends(system, args.data_dir, args.backends.split(","), args.repeat)
    except PunctInputError as err:
        return report_error("bench_backends", err)
    finally:
        torch.backends.quantized.engine = engine  # the process's choice, as it was
    flags = " ".join(info["cpu_flags"]) or f"none of {', '.join(SPEED_FLAGS)}"
    limits = " ".join(f"{k}={v}" for k, v in info["kernel_limits"].items()) or "none"
    print(f"cpu: {info['cpu']}; flags: {flags}; threads {info['threads']}; "
          f"int8 engine {info['int8_engine']}; kernel limits: {limits}; heap {info['heap']}")
    print(table(rows))
    if args.output:
        doc = {**info, "data_dir": args.data_dir, "backends": rows}
        Path(args.output).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    print(f"bench_backends: {rows[0]['words']} words of {args.data_dir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
