"""Export a trained system to a self-contained directory (Hugging Face Hub layout).

  punct-export --exp-dir exp/X --out DIR [--onnx [--quantize]] [--train-data TEXT]
      [--check-backends --dev-dir data/dev]

DIR gets config.json (family, label set, decision rule, per-mark thresholds, decode
settings), model.safetensors, featurizer/ (tokenizer files, vocabulary, ...) and a
README.md model card with the scores of the experiment's scores.json files. ``--onnx``
also writes model.onnx (transformer and BRNN families) for ``--backend onnx``.
``--check-backends`` decodes ``--dev-dir`` with torch fp32, torch bf16 (where the CPU has
it natively), torch int8 and the ONNX models written, and records in DIR/backends.json
which keep micro-F1 within 0.5 of fp32, how fast each ran and the kind of CPU:
``--backend auto`` reads it on CPUs without native bf16.
Load it with ``Restorer.from_pretrained(DIR)`` or ``punct-restore --model DIR``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from punct.errors import PunctInputError, report_error
from punct.export.hub import export_hub
from punct.export.measure import check_backends
from punct.export.onnx_export import export_onnx
from punct.extras import require
from punct.infer.quiet import set_loading_verbosity
from punct.train.env import setup_compute


def build_parser(prog: str = "punct-export") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--exp-dir", required=True, help="trained experiment directory")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--checkpoint", default="best", choices=("best", "last"))
    parser.add_argument("--train-data", default=None,
                        help="training data description for the model card")
    parser.add_argument("--overwrite", action="store_true", help="replace a non-empty --out")
    parser.add_argument("--onnx", action="store_true", help="also write model.onnx")
    parser.add_argument("--quantize", action="store_true",
                        help="with --onnx: also write model.int8.onnx (dynamic int8)")
    parser.add_argument("--check-backends", action="store_true",
                        help="measure the backends on --dev-dir and write DIR/backends.json")
    parser.add_argument("--dev-dir", default=None, help="data dir for --check-backends")
    parser.add_argument("--num-threads", type=int, default=None,
                        help="threads for --check-backends")
    parser.add_argument("--verbose", action="store_true", help="show loading progress bars")
    return parser


def record_backends(out: Path, dev_dir: str, num_threads: int | None = None) -> None:
    """Check the backends of the exported ``out`` on ``dev_dir`` (``backends.json``) and
    say which stay within the F1 tolerance."""
    setup_compute(num_threads)
    path = check_backends(out, dev_dir)
    record = json.loads(path.read_text(encoding="utf-8"))
    rows = ", ".join(f"{r['backend']} {r['micro_f1']:.2f} ({r['speedup']:.2f}x)"
                     for r in record["backends"])
    ok = ", ".join(record["within_tolerance"]) or "none"
    print(f"export: backends on {dev_dir}: {rows}; within {record['tolerance']} micro-F1 "
          f"of fp32: {ok} -> {path}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    set_loading_verbosity(args.verbose)
    if args.check_backends and not args.dev_dir:
        build_parser().error("--check-backends needs --dev-dir")
    try:
        if args.onnx:  # the optional extras first, before anything is written
            require("onnx", "onnx", "punct-export --onnx")
        if args.quantize:
            require("onnxruntime", "onnx", "punct-export --quantize")
        out = export_hub(args.exp_dir, args.out, args.checkpoint, args.train_data,
                         args.overwrite)
        if args.onnx:
            export_onnx(out, quantize=args.quantize)
        if args.check_backends:
            record_backends(out, args.dev_dir, args.num_threads)
    except (PunctInputError, FileExistsError) as err:
        return report_error("export", err)
    print(f"export: {args.exp_dir} -> {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
