"""The ASR condition of a test set: decode its audio with a recogniser, project its labels.

Example (stage 2 of the driver with ``--asr pocketsphinx``)::

    python -m punct.bin.recognize --data-dir data/test --out-dir data/test_asr --asr pocketsphinx

writes ``data/test_asr`` (``hyp.ctm``, ``words.tsv`` with the recogniser's words, their
pauses and the projected labels, ``ref_words.tsv``, the Kaldi files of the utterances in
the recogniser's language, ``asr.json`` with the WER): see
:mod:`punct.align.asr_condition`. A rerun resumes from ``hyp.ctm.partial``.
Recognisers: ``pocketsphinx`` (English, offline, the wheel's en-US model and language
model), ``espnet`` (the ESPnet ASR model of ``--asr-model``, its words timed by CTC
segmentation; ``./setup.sh --with-espnet``) and ``ctc`` (a wav2vec2/MMS CTC model of
``--asr-model``, greedy best path timed by its frames: :mod:`punct.asr.ctc_asr`); the
last two serve the utterances of ``--language``.

Parallel jobs (through the launcher), in the style of :mod:`punct.bin.align`::

    python -m punct.bin.recognize --data-dir data/test --out-dir data/test_asr \
        --asr pocketsphinx --job J --num-jobs N
    python -m punct.bin.recognize --data-dir data/test --out-dir data/test_asr \
        --asr pocketsphinx --merge --num-jobs N

Job J decodes the utterances of ``<data-dir>/split<N>/<J>/ids`` into
``<out-dir>/decoded.J`` (resumable, skipped when done); the merge writes the set from
all of them. The words are those of the one-process run: PocketSphinx carries its
cepstral mean from one utterance to the next, so a job replays the utterances before each
of its own with a cheap search (:meth:`~punct.asr.pocketsphinx_asr.PocketsphinxRecognizer.replay`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from punct.align.asr_condition import build_asr_set, decode_job, merge_asr_set
from punct.data.nonspeech import add_nonspeech_option
from punct.errors import PunctInputError, report_error
from punct.infer.asr import RECOGNIZERS, make_recognizer, recognizer_language
from punct.jobs_split import add_job_options, check_job_options


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m punct.bin.recognize", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", required=True, help="test set with audio (wav.scp, words.tsv)")
    p.add_argument("--out-dir", required=True, help="the ASR set to write, e.g. data/test_asr")
    p.add_argument("--asr", choices=RECOGNIZERS, default="pocketsphinx",
                   help="recogniser (default: pocketsphinx)")
    p.add_argument("--asr-model", default=None, metavar="MODEL",
                   help="--asr espnet: the ESPnet ASR model dir; --asr ctc: a CTC model "
                        "(wav2vec2/MMS) directory or Hugging Face id")
    p.add_argument("--language", default=None,
                   help="--asr espnet/ctc: the utt2lang code of the utterances it decodes "
                        "(default: every utterance)")
    p.add_argument("--quiet", action="store_true", help="no per-utterance progress lines")
    add_nonspeech_option(p)
    add_job_options(p, merge_help="write the set from the jobs' decoded.J")
    return p


def run(args: argparse.Namespace, progress: Callable[[str], None] | None) -> str:
    """Decode (one job, or everything and write the set) or merge; the summary line."""
    data_dir, out_dir = Path(args.data_dir), Path(args.out_dir)
    if args.merge:
        summary = merge_asr_set(data_dir, out_dir, args.asr,
                                recognizer_language(args.asr, args.language), args.num_jobs,
                                args.nonspeech)
        return _summary_line(args, summary)
    recognizer = make_recognizer(args.asr, args.asr_model, language=args.language)
    if args.job is None:
        return _summary_line(args, build_asr_set(data_dir, out_dir, recognizer,
                                                 args.nonspeech, progress))
    n = decode_job(data_dir, out_dir, recognizer, args.job, args.num_jobs, progress)
    state = "already done" if n < 0 else f"decoded {n} utterances"
    return (f"recognize: job {args.job}/{args.num_jobs} ({args.asr}): {state} -> "
            f"{out_dir / f'decoded.{args.job}'}")


def _summary_line(args: argparse.Namespace, summary: dict) -> str:
    wer = summary["wer"]
    wer_text = f"{100 * wer:.1f}%" if isinstance(wer, float) else "n/a"
    return (f"recognize: {summary['utterances']} utterances ({args.asr}) -> {args.out_dir}: "
            f"WER {wer_text} (S {summary['sub']}, D {summary['del']}, I {summary['ins']}), "
            f"real-time factor {summary['real_time_factor']}")


def main(argv: Sequence[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    check_job_options(p, args)

    def progress(line: str) -> None:
        print(f"recognize: {line}", file=sys.stderr)

    try:
        line = run(args, None if args.quiet else progress)
    except PunctInputError as err:
        return report_error("recognize", err)
    print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
