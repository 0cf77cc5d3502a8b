"""Restore punctuation and casing with a trained system.

  punct-restore --exp-dir exp/X|--model EXPORTED_DIR [INPUT ...] [-o OUT]
      [--input-format text|ctm|textgrid|jsonl|srt|vtt|kaldi|trn|ctc-segments]
      [--asr-model ESPNET_MODEL_DIR]  (INPUTs are then audio files)
      [--output-format text|kaldi|jsonl|table|srt|vtt]
  (or python -m punct.bin.restore)

INPUT: files (``-`` = stdin, the default); for TextGrids also directories. Input is
read lazily and restored in batches of about ``--batch-words`` words, so unbounded
input (a pipe) runs in bounded memory; a document longer than ``--block-words`` +
``--context-words`` is restored block by block. Text input: one document per line.
CTM/TextGrid/JSONL-with-times/SRT/WebVTT give the model the pauses between words; from
them srt/vtt output writes subtitles whose cues are chosen over each document (sentence
ends first, then long pauses, then commas; --min-cue-seconds, --max-cue-*).
Words written with internal or all capitals (USA, iPhone) keep their form when the input
is already cased (--keep-case/--no-keep-case force it). A progress bar shows on a
terminal's stderr (--quiet: none; --progress: always).
ESPnet decode outputs are read as kaldi (``text``), trn (``hyp.trn``) and ctc-segments
(``asr_align`` segments); ``--asr-model`` runs an ESPnet ASR model on audio files first
(the optional extra: ``./setup.sh --with-espnet``).
Symbols outside the label set pass through unchanged (counted on stderr); so do
non-speech tokens such as ``<breath>`` or ``[noise]`` (``--nonspeech``, docs/NONSPEECH.md),
which the model does not see. See docs/RESTORE.md for formats and examples.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, TextIO

from punct.api import Restorer
from punct.data.nonspeech import add_nonspeech_option
from punct.engine.decode import pick_device
from punct.engine.symbols import cased_input, tally
from punct.errors import MissingDataError, PunctInputError, report_error
from punct.export.backends import BACKENDS
from punct.infer import espnet_inputs, inputs, subtitles
from punct.infer.asr import RECOGNIZERS, SpeechInput, make_recognizer
from punct.infer.casing import CaseKeeper
from punct.infer.outputs import write_segments
from punct.infer.progress import InputShare, ProgressBar
from punct.train.env import setup_compute

if TYPE_CHECKING:
    from punct.infer.stream import Restorer as Engine
    from punct.infer.stream import Segment


def build_parser(prog: str = "punct-restore") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("inputs", nargs="*", default=["-"], metavar="INPUT",
                        help="input files ('-' = stdin; default: stdin)")
    parser.add_argument("--exp-dir", "--model", required=True,
                        help="experiment dir, exported dir (punct-export) or Hub id")
    parser.add_argument("--backend", choices=BACKENDS, default="auto",
                        help="auto (default): bf16 where the CPU/GPU has it, else the fastest "
                        "backend the system's backends.json found within 0.5 micro-F1 of "
                        "fp32 (punct-export --check-backends), else fp32; torch-int8: "
                        "dynamic int8 Linear layers (CPU); onnx, onnx-int8: onnxruntime on "
                        "an exported dir with model.onnx (punct-export --onnx [--quantize])")
    parser.add_argument("-o", "--output", default="-", help="output file ('-' = stdout)")
    parser.add_argument("--input-format",
                        choices=("text", "ctm", "textgrid", "jsonl", "srt", "vtt", "kaldi",
                                 "trn", "ctc-segments"),
                        default="text",
                        help="kaldi, trn, ctc-segments: ESPnet decode outputs (text, hyp.trn, "
                        "asr_align segments)")
    parser.add_argument("--asr", choices=RECOGNIZERS, default=None,
                        help="INPUTs are audio files: transcribe them first. pocketsphinx: "
                        "English, offline (the pocketsphinx wheel's model and language model; "
                        "the speech extra); espnet: the ESPnet model of --asr-model; ctc: the "
                        "wav2vec2/MMS CTC model of --asr-model (greedy, timed by its frames)")
    parser.add_argument("--asr-model", default=None, metavar="MODEL",
                        help="--asr espnet: an ESPnet ASR model (dir with config.yaml and a "
                        ".pth; the default recogniser when --asr is not given): its words "
                        "are timed by its CTC; needs ./setup.sh --with-espnet. --asr ctc: a "
                        "CTC model directory or Hugging Face id")
    parser.add_argument("--asr-beam-size", type=int, default=10,
                        help="--asr espnet: beam size (default 10)")
    parser.add_argument("--output-format",
                        choices=("text", "kaldi", "jsonl", "table", "srt", "vtt"), default=None,
                        help="default: the input format for text/srt/vtt, kaldi otherwise; "
                        "srt/vtt need timed input")
    parser.add_argument("--max-cue-chars", type=int, default=84,
                        help="srt/vtt output: most characters in a cue (default 84)")
    parser.add_argument("--max-cue-seconds", type=float, default=7.0,
                        help="srt/vtt output: longest cue in seconds (default 7)")
    parser.add_argument("--min-cue-seconds", type=float, default=1.0,
                        help="srt/vtt output: shortest cue in seconds where anything else "
                        "fits (default 1)")
    parser.add_argument("--line-chars", type=int, default=42,
                        help="srt/vtt output: most characters in a cue line (two lines at "
                        "most; default 42)")
    parser.add_argument("--keep-case", action=argparse.BooleanOptionalAction, default=None,
                        help="keep the exact form of words written with internal or all "
                        "capitals (USA, iPhone, McDonald); default: when the input is "
                        "already cased (a word with a capital, fewer than half of the words "
                        "of two or more letters in capitals; docs/RESTORE.md)")
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
    parser.add_argument("--no-constraints", dest="constraints", action="store_false",
                        default=None, help="decide word by word, without the document rules "
                        "(paired quotes, capitals after sentence ends, a final mark; "
                        "default: decode.constraints)")
    parser.add_argument("--batch-words", type=int, default=None,
                        help="decode once this many words wait (latency vs. throughput; "
                             "default 2048, on CUDA at least a decoding batch: batch size "
                             "x window, 32768 for nagy; lower it for live input)")
    parser.add_argument("--block-words", type=int, default=512,
                        help="long documents are restored in blocks of this many words")
    parser.add_argument("--context-words", type=int, default=None,
                        help="words of context either side of a block (default: the window)")
    add_nonspeech_option(parser)
    parser.add_argument("--quiet", action="store_true",
                        help="no summary line and no progress bar on stderr")
    parser.add_argument("--progress", action="store_true",
                        help="a progress bar on stderr even when it is not a terminal "
                        "(default: on a terminal, unless --quiet)")
    parser.add_argument("--verbose", action="store_true",
                        help="show the encoder's loading progress bars and logs")
    return parser


@contextlib.contextmanager
def _open_in(name: str, share: InputShare | None = None) -> Iterator[BinaryIO]:
    if name == "-":
        yield sys.stdin.buffer
        return
    path = Path(name)
    if not path.is_file():
        raise MissingDataError("input file not found", path)
    with open(path, "rb") as fh:
        if share is not None:
            share.open(fh)
        yield fh
    if share is not None:
        share.close(path.stat().st_size)


@contextlib.contextmanager
def _open_out(name: str) -> Iterator[TextIO]:
    if name == "-":
        yield sys.stdout
        return
    Path(name).parent.mkdir(parents=True, exist_ok=True)
    with open(name, "w", encoding="utf-8", newline="\n") as fh:
        yield fh


def documents(args: argparse.Namespace, speech: SpeechInput | None = None,
              share: InputShare | None = None) -> Iterator:
    """The ``Document`` stream of all inputs, read lazily (audio files through ``speech``;
    ``share`` follows the bytes read of input files)."""
    if speech is not None:
        for doc in speech.documents(args.inputs):
            doc.lang = doc.lang or args.lang
            yield doc
        return
    if args.input_format == "textgrid":
        if "-" in args.inputs:
            raise PunctInputError("TextGrid input must be files or directories, not stdin")
        for path in inputs.textgrid_files(args.inputs):
            doc = inputs.read_textgrid_doc(path, args.tier)
            doc.lang = doc.lang or args.lang
            yield doc
        return
    reader = {"text": inputs.read_text, "ctm": inputs.read_ctm, "jsonl": inputs.read_jsonl,
              "srt": subtitles.read_srt, "vtt": subtitles.read_vtt,
              "kaldi": espnet_inputs.read_kaldi_text, "trn": espnet_inputs.read_trn,
              "ctc-segments": espnet_inputs.read_ctc_segments}[args.input_format]
    for name in args.inputs:
        with _open_in(name, share) as stream:
            for doc in reader(stream, name):
                doc.lang = doc.lang or args.lang
                yield doc


def run(args: argparse.Namespace) -> dict:
    """Restore all inputs into ``args.output``; return a summary."""
    speech = None
    if args.asr:  # the recogniser first: a missing extra stops before the model loads
        asr_device = pick_device(args.device)
        speech = SpeechInput(make_recognizer(args.asr, args.asr_model,
                                             "cuda" if asr_device.type == "cuda" else "cpu",
                                             args.asr_beam_size))
    api = Restorer.from_pretrained(
        args.exp_dir, device=args.device, backend=args.backend, checkpoint=args.checkpoint,
        verbose=args.verbose, window=args.window, stride=args.stride, per_token=args.per_token,
        batch_size=args.batch_size, aggregate=args.aggregate, bf16=args.bf16,
        threshold=args.threshold, constraints=args.constraints, batch_words=args.batch_words,
        block_words=args.block_words, context_words=args.context_words,
        nonspeech=args.nonspeech)
    restorer, st, device = api.engine, api.settings, api.device
    fmt = args.output_format or (args.input_format if args.input_format in ("text", "srt", "vtt")
                                 and not args.asr else "kaldi")
    cues = {"max_chars": args.max_cue_chars, "max_seconds": args.max_cue_seconds,
            "min_seconds": args.min_cue_seconds, "line_chars": args.line_chars}
    share = InputShare(_input_bytes(args))
    # --progress: at once, wherever stderr goes; by default only on a terminal, after 1 s
    bar = (ProgressBar(sys.stderr, delay=0.0) if args.progress
           else ProgressBar(sys.stderr) if not args.quiet and sys.stderr.isatty() else None)
    keeper = None if args.keep_case is False else CaseKeeper(args.keep_case)
    start = time.perf_counter()
    done = [0]  # documents written
    try:
        with _open_out(args.output) as out, tally(api.nonspeech) as symbols, \
                contextlib.nullcontext() if keeper is None else cased_input():
            docs = documents(args, speech, share)
            segments = restorer.restore(docs if keeper is None else keeper.documents(docs))
            if keeper is not None:
                segments = keeper.segments(segments)
            if bar is not None:
                segments = _follow(segments, bar, restorer, share, done)
            n_docs = write_segments(segments, out, fmt, flush=args.output == "-", cues=cues)
    finally:
        if bar is not None:
            bar.close(restorer.words_done, done[0], share.fraction())
    return {"documents": n_docs, "words": restorer.words_done, "symbols": symbols.message(),
            "kept_case": None if keeper is None else keeper.documents_kept,
            "audio_seconds": speech.audio_seconds if speech is not None else None,
            "seconds": time.perf_counter() - start, "model_seconds": restorer.seconds,
            "device": str(device), "window": st.window, "stride": st.stride, "bf16": st.bf16,
            "backend": api.backend}


def _input_bytes(args: argparse.Namespace) -> int | None:
    """The total size of the input files read as streams (None: stdin, TextGrid, audio)."""
    if args.asr or args.input_format == "textgrid" or "-" in args.inputs:
        return None
    paths = [Path(name) for name in args.inputs]
    return sum(p.stat().st_size for p in paths) if all(p.is_file() for p in paths) else None


def _follow(segments: Iterable[Segment], bar: ProgressBar, restorer: Engine,
            share: InputShare, done: list[int]) -> Iterator[Segment]:
    """``segments``, updating ``bar`` (and ``done``, the documents finished) after each."""
    for seg in segments:
        yield seg
        done[0] += seg.last
        bar.update(restorer.words_done, done[0], share.fraction())


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.asr_model and args.asr is None:
        args.asr = "espnet"
    if args.asr and args.input_format != "text":
        parser.error("--asr reads audio files: --input-format does not apply")
    try:
        setup_compute(args.num_threads)
        info = run(args)
    except PunctInputError as err:
        return report_error("restore", err)
    if info["symbols"]:
        print(f"restore: {info['symbols']}", file=sys.stderr)
    if not args.quiet:
        rate = info["words"] / info["seconds"] if info["seconds"] > 0 else 0.0
        print(f"restore: {info['documents']} documents, {info['words']} words in "
              f"{info['seconds']:.2f}s ({rate:.0f} words/s, {info['device']}, window "
              f"{info['window']}, stride {info['stride']}, bf16 {info['bf16']}, "
              f"backend {info['backend']})",
              file=sys.stderr)
        if info["kept_case"]:
            print(f"restore: words with internal or all capitals kept as written in "
                  f"{info['kept_case']} of {info['documents']} documents", file=sys.stderr)
        if info["audio_seconds"]:
            print(f"restore: {info['audio_seconds']:.1f}s of audio, real-time factor "
                  f"{info['seconds'] / info['audio_seconds']:.2f} (recognition included)",
                  file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
