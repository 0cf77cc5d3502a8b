"""Backends side by side: words/s and micro-F1 of torch fp32/bf16 and onnxruntime fp32/int8.

  punct bench_backends --model EXPORTED_DIR --data-dir data/test [--backends ...] [-o x.json]

Every backend decodes the same data dir (``words.tsv``) with the same engine, windows and
decision rule; only ``PunctModel.predict`` differs. Per backend: words/s (model time,
after one warm-up pass), micro-F1 and cap micro-F1 against the reference, and, against
the first backend (torch fp32), the largest absolute difference of the probabilities
and the share of words whose decisions differ. The export must have ``model.onnx``
(``punct-export --onnx --quantize`` for int8).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from punct.errors import PunctInputError, report_error
from punct.train.env import set_num_threads

BACKENDS = {"torch-fp32": ("torch", "fp32"), "torch-bf16": ("torch", "bf16"),
            "onnx-fp32": ("onnx", "fp32"), "onnx-int8": ("onnx-int8", "fp32")}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="punct bench_backends", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="exported dir (punct-export --onnx)")
    parser.add_argument("--data-dir", required=True, help="data dir with words.tsv")
    parser.add_argument("--backends", default=",".join(BACKENDS),
                        help="comma-separated, first = reference (default: all four)")
    parser.add_argument("--num-threads", type=int, default=None, help="torch/onnx threads")
    parser.add_argument("--repeat", type=int, default=1, help="timed passes (best kept)")
    parser.add_argument("-o", "--output", default=None, help="JSON results file")
    return parser


def bench(model: str, data_dir: str, backends: list[str], repeat: int = 1) -> list[dict]:
    """One record per backend (see the module docstring)."""
    from punct.api import Restorer
    from punct.data.sequences import load_data_dir
    from punct.infer.decode import decide, hypothesis_rows, predict_words
    from punct.score.metrics import score_tables

    rows: list[dict[str, Any]] = []
    ref_probs: np.ndarray | None = None
    ref_marks: np.ndarray | None = None
    ref_caps: np.ndarray | None = None
    utts = seqs = None
    for name in backends:
        if name not in BACKENDS:
            raise ValueError(f"unknown backend {name!r} (known: {', '.join(BACKENDS)})")
        backend, precision = BACKENDS[name]
        r = Restorer.from_pretrained(model, device="cpu", backend=backend, precision=precision)
        st, system = r.settings, r.system
        if utts is None:
            utts, seqs = load_data_dir(data_dir, system.label_set, system.streams)
        assert seqs is not None
        n_words = sum(len(s) for s in seqs)

        runs = [predict_words(r.engine.model, system.featurizer, seqs, st.window, st.stride,
                              st.batch_size, st.bf16, st.aggregate, "cpu",
                              exclusive=st.exclusive)
                for _ in range(1 + max(1, repeat))]  # the first is the warm-up
        pred = min(runs[1:], key=lambda p: p.seconds)
        marks, caps = decide(pred, seqs, system.label_set.labels, st.threshold, st.exclusive,
                             st.combinations, st.constraints)
        hyp = hypothesis_rows(utts, seqs, marks, caps, system.label_set.labels)
        metrics = score_tables(utts, hyp, system.label_set)["all"]
        row: dict[str, Any] = {
            "backend": name, "words": n_words, "seconds": round(pred.seconds, 4),
            "words_per_s": round(n_words / pred.seconds, 1),
            "micro_f1": round(100 * metrics["micro_f1"], 2),
            "cap_micro_f1": round(100 * metrics["cap_micro_f1"], 2)
            if pred.cap is not None else None}
        probs = pred.punct if pred.cap is None else np.concatenate([pred.punct, pred.cap], 1)
        if ref_probs is None:
            ref_probs, ref_marks, ref_caps = probs, marks, caps
        else:
            assert ref_marks is not None and ref_caps is not None
            differ = (marks != ref_marks).any(axis=1) | (caps != ref_caps)
            row["max_abs_diff"] = float(np.abs(probs - ref_probs).max())
            row["decisions_differ"] = round(float(differ.mean()), 6)
        rows.append(row)
    base = rows[0]["words_per_s"]
    for row in rows:
        row["speedup"] = round(row["words_per_s"] / base, 2)
    return rows


def table(rows: list[dict]) -> str:
    """A Markdown table of ``bench`` records."""
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
    try:
        set_num_threads(args.num_threads)
        rows = bench(args.model, args.data_dir, args.backends.split(","), args.repeat)
    except (PunctInputError, ValueError, KeyError, ImportError) as err:
        return report_error("bench_backends", err)
    print(table(rows))
    if args.output:
        Path(args.output).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    print(f"bench_backends: {rows[0]['words']} words of {args.data_dir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
