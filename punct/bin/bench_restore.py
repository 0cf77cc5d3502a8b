"""The restore path end to end with a stub encoder: what ``punct-restore`` costs per word
besides the model.

  python -m punct.bin.bench_restore --stub-encoder --iwslt DIR/dev2012 [--iwslt ...]
      [--family autopunct] [--format text] [--no-constraints] [--reps 3]

The input is the IWSLT words as plain text, ``--doc-words`` words per line (one document
each), or (``--input-format ctm``) as a CTM of timed words, one recording per
``--doc-words`` words. Timed (best of ``--reps``, one thread, this process's CPU time) is what the
command does with it: read the lines and split the words (``read_text``; ``read_ctm``
and the pauses for a CTM), keep-case
(``CaseKeeper``, the command's default), the streaming restorer (units, the engine,
the word rows) and the output writer (``--format``), with the model replaced by
``punct.bin.bench_engine``'s stub of ~zero cost. ``model_seconds`` is the engine's own
share (``predict_words``), ``us_per_word`` the whole path's; the rest is the Python work
per word around the engine.
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from punct.bin.bench_engine import (
    AGGREGATION,
    FAMILIES,
    add_stub_arguments,
    emit,
    make_featurizer,
    read_utterances,
    stub_model,
)
from punct.data.windows import stride_for
from punct.engine.decode import DecodeSettings
from punct.engine.symbols import cased_input, tally
from punct.errors import PunctInputError, report_error
from punct.infer.casing import CaseKeeper
from punct.infer.inputs import read_ctm, read_text
from punct.infer.outputs import FORMATS, SUBTITLE_FORMATS, write_segments
from punct.infer.stream import Restorer
from punct.labels import get_label_set
from punct.train.env import setup_compute


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m punct.bin.bench_restore",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iwslt", action="append", required=True,
                        help="IWSLT 2012 Che TSV file (repeatable)")
    add_stub_arguments(parser)
    parser.add_argument("--format", choices=[f for f in FORMATS if f not in SUBTITLE_FORMATS],
                        default="text", help="output format (subtitles need timed words)")
    parser.add_argument("--input-format", choices=INPUT_FORMATS, default="text",
                        help="the input as lines of text, or as a CTM of timed words "
                             "(a word of 0.2 s every 0.25 s, a gap of 0.65 s after every 12th)")
    parser.add_argument("--reps", type=int, default=3, help="timed runs")
    parser.add_argument("--json", help="also write the result here")
    return parser


INPUT_FORMATS = ("text", "ctm")


def ctm_lines(blocks: list[list[str]]) -> str:
    """A CTM of each block of words as one recording: a word every 0.25 s (0.2 s long:
    gaps of 0.05 s), and a gap of 0.65 s after every 12th."""
    lines = []
    for b, block in enumerate(blocks):
        start = 0.0
        for k, word in enumerate(block, 1):
            lines.append(f"rec{b:05d} 1 {start:.2f} 0.20 {word}")
            start += 0.85 if k % 12 == 0 else 0.25
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Time the restore path on the IWSLT words; return the report."""
    setup_compute(1)
    ls = get_label_set(FAMILIES[args.family])
    utts = read_utterances(args)
    words = [row.word for rows in utts.values() for row in rows]
    blocks = [words[i:i + args.doc_words] for i in range(0, len(words), args.doc_words)]
    data = (ctm_lines(blocks) if args.input_format == "ctm"
            else "\n".join(" ".join(block) for block in blocks) + "\n").encode("utf-8")
    reader = read_ctm if args.input_format == "ctm" else read_text
    with tempfile.TemporaryDirectory() as tmp:
        feat = make_featurizer(args.family, utts, args.vocab, args.window, Path(tmp))
    model = stub_model(args.family, len(ls.labels), ls.exclusive)
    settings = DecodeSettings(args.window, stride_for(args.window, args.per_token),
                              args.batch_size, AGGREGATION[args.family],
                              False, 0.5, ls.exclusive, None, not args.no_constraints)

    def restore() -> tuple[Restorer, str]:
        restorer = Restorer(model, feat, ls, settings, "cpu")
        out = io.StringIO()
        keeper = CaseKeeper(None)
        with tally(None), cased_input():
            docs = keeper.documents(reader(io.BytesIO(data), "bench"))
            write_segments(keeper.segments(restorer.restore(docs)), out, args.format)
        return restorer, out.getvalue()

    restorer, text = restore()  # warm-up: the piece table, the stub's outputs
    best, model_seconds = float("inf"), 0.0
    for _ in range(args.reps):
        start = time.process_time()
        restorer, text = restore()
        took = time.process_time() - start
        if took < best:
            best, model_seconds = took, restorer.seconds
    n_words = len(words)
    return {"family": args.family, "format": args.format, "words": n_words,
            "input_format": args.input_format,
            "documents": len(blocks), "words_restored": restorer.words_done,
            "output_lines": text.count("\n"), "constraints": not args.no_constraints,
            "threads": torch.get_num_threads(), "reps": args.reps,
            "seconds": round(best, 4), "model_seconds": round(model_seconds, 4),
            "us_per_word": round(1e6 * best / n_words, 3),
            "us_per_word_outside_engine": round(1e6 * (best - model_seconds) / n_words, 3),
            "words_per_s": round(n_words / best)}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.reps < 1 or args.doc_words < 1:
        print("bench_restore: --reps and --doc-words must be >= 1", file=sys.stderr)
        return 2
    try:
        report = run(args)
    except PunctInputError as err:  # a missing or malformed input file, named
        return report_error("bench_restore", err)
    emit(report, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
