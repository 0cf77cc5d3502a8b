"""Predictions-per-token sweep: F1 and relative runtime vs N (Courtland et al. 2020, Table 2;
Nagy et al. 2021, Fig. 6).

  python -m punct.bin.sweep --exp-dir exp/A [--exp-dir exp/B ...] --data-dir data/test
      --out-dir results/sweep [--per-token 1 2 3 6 9] [--reps 3] [--aggregate mean|sum]

For each system and N the data dir is decoded with stride = window // N
(``punct.data.windows.stride_for``), timed ``--reps`` times (interleaved over N, best
run kept) and scored. Runtime is relative to the smallest N (1 by default), as in
Courtland's table. Writes to --out-dir: ``sweep.json``, ``sweep.csv`` (one row per system
and N), ``sweep.md`` (Courtland Table 2 layout with the published figures beside ours)
and ``sweep.png`` (F1 and relative runtime vs predictions per token).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

from punct.data.sequences import load_data_dir
from punct.engine.decode import (
    decide,
    decode_settings,
    hypothesis_rows,
    load_experiment,
    pick_device,
    predict_words,
)
from punct.errors import PunctInputError, report_error
from punct.extras import require
from punct.labels import get_label_set
from punct.score.figure import new_figure, save_png
from punct.score.metrics import score_tables
from punct.train.env import collect_env, setup_compute

COURTLAND_TABLE2 = {  # N: (overall F1 %, CPU runtime x, GPU runtime x), TED test set
    1: (76.3, 1.0, 1.0), 2: (79.4, 1.8, 1.1), 3: (81.8, 2.6, 1.2), 6: (83.2, 5.2, 1.5),
    9: (83.9, 7.7, 1.9),
}
"""Courtland et al. (2020), Table 2 (RoBERTa-base, IWSLT TED ref test, mean of 10 runs)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m punct.bin.sweep", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--exp-dir", action="append", required=True,
                        help="trained experiment directory (repeat for several systems)")
    parser.add_argument("--data-dir", required=True, help="data dir with words.tsv")
    parser.add_argument("--out-dir", required=True, help="where the sweep files go")
    parser.add_argument("--per-token", type=int, nargs="+", default=[1, 2, 3, 6, 9],
                        metavar="N", help="predictions per token to try (default: 1 2 3 6 9)")
    parser.add_argument("--reps", type=int, default=3, help="timed runs per N (best kept)")
    parser.add_argument("--aggregate", choices=("mean", "sum"), default=None,
                        help="default: decode.aggregate of each system")
    parser.add_argument("--bf16", choices=("auto", "on", "off"), default=None)
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--num-threads", type=int, default=None, help="torch threads")
    parser.add_argument("--device", default="auto", help="cpu, cuda or auto")
    return parser


def sweep_system(exp_dir: str, data_dir: str, per_token: list[int], reps: int,
                 device: torch.device, aggregate: str | None = None, bf16: str | None = None,
                 batch_size: int | None = None) -> list[dict[str, Any]]:
    """One row per N: stride, measured predictions per word, F1s, seconds, relative runtime."""
    exp = load_experiment(exp_dir, device=device)
    ls = get_label_set(exp.config.label_set)
    utts, seqs = load_data_dir(data_dir, ls, exp.config.streams)
    settings = {n: decode_settings(exp.config, device, per_token=n, aggregate=aggregate,
                                   bf16=bf16, batch_size=batch_size) for n in per_token}
    best = {n: float("inf") for n in per_token}
    preds: dict[int, Any] = {}
    for rep in range(reps + 1):  # run 0 warms up
        for n, st in settings.items():
            start = time.perf_counter()
            pred = predict_words(exp.model, exp.featurizer, seqs, st.window, st.stride,
                                 st.batch_size, st.bf16, st.aggregate, device,
                                 exclusive=st.exclusive)
            decisions = decide(pred, seqs, ls.labels, st.threshold, st.exclusive,
                               st.combinations, st.constraints)
            elapsed = time.perf_counter() - start
            if rep:
                best[n] = min(best[n], elapsed)
            preds[n] = (pred, decisions)
    base = best[min(per_token)]
    rows = []
    for n, st in settings.items():
        pred, (marks, caps) = preds[n]
        scores = score_tables(utts, hypothesis_rows(utts, seqs, marks, caps, ls.labels), ls)
        metrics = scores["all"]
        rows.append({
            "system": Path(exp_dir).name, "family": exp.config.family, "per_token": n,
            "window": st.window, "stride": st.stride, "aggregate": st.aggregate,
            "bf16": st.bf16, "predictions_per_word": round(float(pred.counts.mean()), 3),
            "micro_f1": round(metrics["micro_f1"], 4), "macro_f1": round(metrics["macro_f1"], 4),
            "cap_micro_f1": round(metrics["cap_micro_f1"], 4),
            "seconds": round(best[n], 4), "relative_runtime": round(best[n] / base, 3),
        })
    return rows


def table2_markdown(rows: list[dict[str, Any]], device: str) -> str:
    """Courtland Table 2 layout: N | F1 Overall | runtime, per system, published beside."""
    systems = list(dict.fromkeys(r["system"] for r in rows))
    ns = sorted({r["per_token"] for r in rows})
    proc = "CPU" if device == "cpu" else "GPU"
    head = ["Predictions per token"]
    for s in systems:
        head += [f"{s} micro F1", f"{s} macro F1", f"{s} {proc} Runtime"]
    head += ["Courtland Overall F1 (macro)", f"Courtland {proc} Runtime"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    by_key = {(r["system"], r["per_token"]): r for r in rows}
    for n in ns:
        cells = [str(n)]
        for s in systems:
            r = by_key.get((s, n))
            cells += ([f"{100 * r['micro_f1']:.1f}", f"{100 * r['macro_f1']:.1f}",
                       f"{r['relative_runtime']:.1f}x"] if r else ["", "", ""])
        pub = COURTLAND_TABLE2.get(n)
        col = 1 if proc == "CPU" else 2
        cells += [f"{pub[0]:.1f}", f"{pub[col]:.1f}x"] if pub else ["", ""]
        lines.append("| " + " | ".join(cells) + " |")
    note = ("micro F1 = F1 over all marks of each system's label set pooled; macro F1 = "
            "mean of the per-mark F1s; runtime relative to the smallest N, best of the timed "
            "runs. Courtland et al. (2020), Table 2: RoBERTa-base trained on train2012 (2.1M "
            "words), on the IWSLT TED test set; its Overall F1 is the mean of the class F1s "
            "(a macro F1): compare the trend, not the level.")
    return "\n".join(["### Predictions per token: F1 and runtime", "", *lines, "", note, ""])


def plot_sweep(rows: list[dict[str, Any]], path: Path) -> Path:
    """F1 (%) and relative runtime vs predictions per token, one line per system."""
    fig = new_figure((9, 3.6))
    ax_f1, ax_rt = fig.subplots(1, 2)
    for k, system in enumerate(dict.fromkeys(r["system"] for r in rows)):
        mine = sorted((r for r in rows if r["system"] == system), key=lambda r: r["per_token"])
        ns = [r["per_token"] for r in mine]
        color = f"C{k % 10}"
        ax_f1.plot(ns, [100 * r["micro_f1"] for r in mine], "o-", color=color,
                   label=f"{system} micro")
        ax_f1.plot(ns, [100 * r["macro_f1"] for r in mine], "s--", color=color,
                   label=f"{system} macro")
        ax_rt.plot(ns, [r["relative_runtime"] for r in mine], "o-", color=color, label=system)
    ax_f1.set_xlabel("predictions per token")
    ax_f1.set_ylabel("F1 (%)")
    ax_f1.set_title("F1 vs predictions per token")
    ax_rt.set_xlabel("predictions per token")
    ax_rt.set_ylabel("runtime (x N=1)")
    ax_rt.set_title("relative runtime")
    for ax in (ax_f1, ax_rt):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return save_png(fig, path)


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Sweep every system; write JSON, CSV, Markdown and PNG."""
    pd = require("pandas", "report", "the sweep tables")  # optional extra

    per_token = sorted(set(args.per_token))
    if per_token[0] < 1:
        raise PunctInputError(f"predictions per token must be >= 1, got {per_token[0]}")
    if args.reps < 1:
        raise PunctInputError(f"--reps must be >= 1, got {args.reps}")
    device = pick_device(args.device)
    rows = [row for exp in args.exp_dir
            for row in sweep_system(exp, args.data_dir, per_token, args.reps, device,
                                    args.aggregate, args.bf16, args.batch_size)]
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    env = collect_env(threads=torch.get_num_threads())
    env["device"] = str(device)
    record = {"format": "punct-sweep/1", "data_dir": str(args.data_dir), "reps": args.reps,
              "env": env, "rows": rows}
    (out / "sweep.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    pd.DataFrame(rows).to_csv(out / "sweep.csv", index=False)
    (out / "sweep.md").write_text(table2_markdown(rows, device.type), encoding="utf-8")
    plot_sweep(rows, out / "sweep.png")
    return rows


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        setup_compute(args.num_threads)
        rows = run(args)
    except PunctInputError as err:
        return report_error("sweep", err)
    for r in rows:
        print(f"{r['system']} N={r['per_token']}: micro F1 {100 * r['micro_f1']:.1f}, "
              f"runtime {r['relative_runtime']:.2f}x ({r['predictions_per_word']} per word)")
    print(f"-> {args.out_dir}/sweep.md, sweep.png", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
