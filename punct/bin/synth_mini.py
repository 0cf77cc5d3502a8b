"""Stage 0 of egs/mini: synthesise the mini corpus with eSpeak NG.

Writes, per utterance, ``<out>/wav/<utt_id>.wav`` (16 kHz mono PCM-16),
``<out>/ref/<utt_id>.ctm`` (the synthesiser's word timings) and
``<out>/meta/<utt_id>.json``. Utterances already complete are skipped, so an
interrupted run can be resumed; ``--job J --num-jobs N`` takes the utterances
whose index modulo N is J-1.

Example::

    python -m punct.bin.synth_mini --corpus-dir local/mini/corpus --out-dir downloads/mini
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable

from punct.data.mini_corpus import load_corpus
from punct.errors import PunctInputError, report_error
from punct.synth.mini import (
    UttPlan,
    plan_utterances,
    synthesize_utterance,
    utterance_done,
    write_utterance,
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m punct.bin.synth_mini",
        description="Synthesise the mini corpus with eSpeak NG (audio + reference CTM).",
    )
    p.add_argument("--corpus-dir", required=True, help="directory with <lang>.txt files")
    p.add_argument("--out-dir", required=True, help="output directory (wav/, ref/, meta/)")
    p.add_argument("--job", type=int, default=1, help="1-based job index (default 1)")
    p.add_argument("--num-jobs", type=int, default=1, help="number of jobs (default 1)")
    p.add_argument("--langs", default=None, help="comma-separated languages, e.g. en,es")
    p.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    args = p.parse_args(argv)
    if args.num_jobs < 1 or not 1 <= args.job <= args.num_jobs:
        p.error(f"need 1 <= --job <= --num-jobs, got --job {args.job} --num-jobs {args.num_jobs}")
    return args


def select_job(plans: list[UttPlan], job: int, num_jobs: int) -> list[UttPlan]:
    """The plans with index % num_jobs == job - 1 (job is 1-based)."""
    return [p for i, p in enumerate(plans) if i % num_jobs == job - 1]


def _progress(items: list[UttPlan], show_bar: bool) -> Iterable[UttPlan]:
    if show_bar:
        from tqdm import tqdm

        return tqdm(items, desc="synth", unit="utt", file=sys.stderr)
    return items


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    langs = [x for x in args.langs.split(",") if x] if args.langs else None
    try:
        docs = load_corpus(args.corpus_dir, langs)
        plans = select_job(plan_utterances(docs), args.job, args.num_jobs)
        show_bar = sys.stderr.isatty() and not args.no_progress
        t0 = time.perf_counter()
        done = skipped = 0
        audio_s = synth_wall = 0.0
        for plan in _progress(plans, show_bar):
            if utterance_done(args.out_dir, plan):
                skipped += 1
            else:
                t1 = time.perf_counter()
                utt = synthesize_utterance(plan)
                write_utterance(args.out_dir, utt)
                synth_wall += time.perf_counter() - t1
                audio_s += utt.duration
                done += 1
            if not show_bar and (done + skipped) % 10 == 0:
                print(f"synth_mini: {done + skipped}/{len(plans)} utterances", file=sys.stderr)
        wall = time.perf_counter() - t0
    except PunctInputError as err:
        return report_error("synth_mini", err)
    speed = audio_s / synth_wall if synth_wall > 0 else 0.0
    print(
        f"synth_mini: job {args.job}/{args.num_jobs}: synthesised {done} utterances "
        f"({audio_s:.1f} s of audio), skipped {skipped} already done, "
        f"{wall:.1f} s wall, {speed:.0f}x real time"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
