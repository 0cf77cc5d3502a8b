"""Restore punctuation and casing with a trained system.

  python -m punct.bin.restore --exp-dir exp/X [INPUT ...] [-o OUT]
      [--input-format text|ctm|textgrid|jsonl] [--output-format text|kaldi|jsonl|table]

INPUT: files (``-`` = stdin, the default); for TextGrids also directories. Input is
read lazily and restored in batches of about ``--batch-words`` words, so unbounded
input (a pipe) runs in bounded memory; a document longer than ``--block-words`` +
``--context-words`` is restored block by block. Text input: one document per line.
CTM/TextGrid/JSONL-with-times give the model the pauses between words. See
docs/RESTORE.md for formats and examples.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, TextIO

from punct.errors import MissingDataError, PunctInputError, report_error
from punct.train.env import set_num_threads


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m punct.bin.restore", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("inputs", nargs="*", default=["-"], metavar="INPUT",
                        help="input files ('-' = stdin; default: stdin)")
    parser.add_argument("--exp-dir", required=True, help="trained experiment directory")
    parser.add_argument("-o", "--output", default="-", help="output file ('-' = stdout)")
    parser.add_argument("--input-format", choices=("text", "ctm", "textgrid", "jsonl"),
                        default="text")
    parser.add_argument("--output-format", choices=("text", "kaldi", "jsonl", "table"),
                        default=None, help="default: text for text input, kaldi otherwise")
    parser.add_argument("--tier", default="words", help="TextGrid word tier (default: words)")
    parser.add_argument("--lang", default=None, help="language of documents without one")
    parser.add_argument("--checkpoint", default="best", choices=("best", "last"))
    parser.add_argument("--device", default="auto", help="cpu, cuda or auto")
    parser.add_argument("--num-threads", type=int, default=None, help="torch threads")
    parser.add_argument("--window", type=int, default=None, help="default: decode.window")
    parser.add_argument("--stride", type=int, default=None, help="default: decode.stride")
    parser.add_argument("--per-token", type=int, default=None, metavar="N",
                        help="N predictions per token: stride = window // N")
    parser.add_argument("--batch-size", type=int, default=None, help="windows per batch")
    parser.add_argument("--aggregate", choices=("mean", "sum"), default=None)
    parser.add_argument("--bf16", choices=("auto", "on", "off"), default=None,
                        help="bf16 autocast (default: decode.bf16)")
    parser.add_argument("--threshold", type=float, default=None, help="mark threshold")
    parser.add_argument("--batch-words", type=int, default=2048,
                        help="decode once this many words wait (latency vs. throughput)")
    parser.add_argument("--block-words", type=int, default=512,
                        help="long documents are restored in blocks of this many words")
    parser.add_argument("--context-words", type=int, default=None,
                        help="words of context either side of a block (default: the window)")
    parser.add_argument("--quiet", action="store_true", help="no summary line on stderr")
    return parser


@contextlib.contextmanager
def _open_in(name: str) -> Iterator[BinaryIO]:
    if name == "-":
        yield sys.stdin.buffer
        return
    path = Path(name)
    if not path.is_file():
        raise MissingDataError("input file not found", path)
    with open(path, "rb") as fh:
        yield fh


@contextlib.contextmanager
def _open_out(name: str) -> Iterator[TextIO]:
    if name == "-":
        yield sys.stdout
        return
    Path(name).parent.mkdir(parents=True, exist_ok=True)
    with open(name, "w", encoding="utf-8", newline="\n") as fh:
        yield fh


def documents(args: argparse.Namespace) -> Iterator:
    """The ``Document`` stream of all inputs, read lazily."""
    from punct.infer import inputs

    if args.input_format == "textgrid":
        if "-" in args.inputs:
            raise PunctInputError("TextGrid input must be files or directories, not stdin")
        for path in inputs.textgrid_files(args.inputs):
            doc = inputs.read_textgrid_doc(path, args.tier)
            doc.lang = doc.lang or args.lang
            yield doc
        return
    reader = {"text": inputs.read_text, "ctm": inputs.read_ctm,
              "jsonl": inputs.read_jsonl}[args.input_format]
    for name in args.inputs:
        with _open_in(name) as stream:
            for doc in reader(stream, name):
                doc.lang = doc.lang or args.lang
                yield doc


def run(args: argparse.Namespace) -> dict:
    """Restore all inputs into ``args.output``; return a summary."""
    from punct.infer.decode import decode_settings, load_experiment, pick_device
    from punct.infer.outputs import write_segments
    from punct.infer.stream import Restorer
    from punct.labels import get_label_set

    device = pick_device(args.device)
    exp = load_experiment(args.exp_dir, args.checkpoint, device)
    streams = exp.config["featurizer"].get("streams") or ()
    if streams:
        raise PunctInputError(f"{args.exp_dir} needs acoustic feature streams {list(streams)}, "
                              "which restore does not compute; decode a data dir instead")
    st = decode_settings(exp.config, device, window=args.window, stride=args.stride,
                         per_token=args.per_token, batch_size=args.batch_size,
                         aggregate=args.aggregate, bf16=args.bf16, threshold=args.threshold)
    restorer = Restorer(exp.model, exp.featurizer, get_label_set(exp.config["label_set"]), st,
                        device, args.batch_words, args.block_words, args.context_words)
    fmt = args.output_format or ("text" if args.input_format == "text" else "kaldi")
    start = time.perf_counter()
    with _open_out(args.output) as out:
        docs = write_segments(restorer.restore(documents(args)), out, fmt,
                              flush=args.output == "-")
    return {"documents": docs, "words": restorer.words_done,
            "seconds": time.perf_counter() - start, "model_seconds": restorer.seconds,
            "device": str(device), "window": st.window, "stride": st.stride, "bf16": st.bf16}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        set_num_threads(args.num_threads)
        info = run(args)
    except (PunctInputError, ValueError, KeyError) as err:
        return report_error("restore", err)
    if not args.quiet:
        rate = info["words"] / info["seconds"] if info["seconds"] > 0 else 0.0
        print(f"restore: {info['documents']} documents, {info['words']} words in "
              f"{info['seconds']:.2f}s ({rate:.0f} words/s, {info['device']}, window "
              f"{info['window']}, stride {info['stride']}, bf16 {info['bf16']})",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
