"""Stage 0 of egs/mini: synthesise the mini corpus with eSpeak NG.

Writes, per utterance, ``<out>/wav/<utt_id>.wav`` (16 kHz mono PCM-16),
``<out>/ref/<utt_id>.ctm`` (the synthesiser's word timings) and
``<out>/meta/<utt_id>.json``. Utterances already complete are skipped, so an
interrupted run can be resumed; ``--job J --num-jobs N`` takes the utterances of job J
(its split, ``<out>/split<N>/<J>/ids``, see :mod:`punct.jobs_split`).

The speech is made more like real speech by a seeded speech style (some commas and
sentence ends without their pause, hesitation pauses, rate jitter; see
:mod:`punct.synth.style` and local/mini/README.md): ``--style FILE`` and the per-key
flags set it, ``--as-read`` turns it off. A changed style re-synthesises every utterance.

Example::

    python -m punct.bin.synth_mini --corpus-dir local/mini/corpus --out-dir downloads/mini
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import yaml
from tqdm import tqdm

from punct.atomic import atomic_write_text
from punct.data.mini_corpus import load_corpus
from punct.errors import MissingDataError, PunctInputError, report_error
from punct.jobs_split import job_items
from punct.synth.mini import (
    UttPlan,
    plan_utterances,
    synthesize_utterance,
    utterance_done,
    write_utterance,
)
from punct.synth.style import SpeechStyle


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
    g = p.add_argument_group(
        "speech style (punct.synth.style; default: SpeechStyle's defaults)",
        "--style FILE reads a YAML mapping of the keys below; the flags override it.")
    g.add_argument("--style", default=None, metavar="FILE", help="speech style YAML file")
    g.add_argument("--as-read", action="store_true",
                   help="eSpeak's reading untouched: a pause at every mark it reads, none "
                        "elsewhere, the voices' rates (the corpus before the speech style)")
    for f in dataclasses.fields(SpeechStyle):
        g.add_argument("--" + f.name.replace("_", "-"), dest=f"style_{f.name}",
                       type=int if f.name == "seed" else float, default=None,
                       help=f"(default {f.default})")
    args = p.parse_args(argv)
    if args.num_jobs < 1 or not 1 <= args.job <= args.num_jobs:
        p.error(f"need 1 <= --job <= --num-jobs, got --job {args.job} --num-jobs {args.num_jobs}")
    return args


def speech_style(args: argparse.Namespace) -> SpeechStyle | None:
    """The style of the command line (None with ``--as-read``)."""
    if args.as_read:
        return None
    data: dict[str, object] = {}
    if args.style:
        path = Path(args.style)
        if not path.is_file():
            raise MissingDataError("speech style file not found", path)
        loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if not isinstance(loaded, dict):
            raise PunctInputError("a speech style file must be a YAML mapping", path)
        data.update(loaded)
    for f in dataclasses.fields(SpeechStyle):
        value = getattr(args, f"style_{f.name}")
        if value is not None:
            data[f.name] = value
    return SpeechStyle.from_mapping(data, args.style)


def write_style(out_dir: str | Path, style: SpeechStyle | None) -> None:
    """``<out>/style.json``: the speech style of the corpus (``{"as_read": true}`` without
    one), for the recipe's RESULTS.md. Every job writes the same content, atomically."""
    record = {"as_read": True} if style is None else dataclasses.asdict(style)
    atomic_write_text(Path(out_dir) / "style.json", json.dumps(record, indent=1) + "\n")


def _utt_id(plan: UttPlan) -> str:
    return plan.utt_id


def _progress(items: list[UttPlan], show_bar: bool) -> Iterable[UttPlan]:
    if show_bar:
        return tqdm(items, desc="synth", unit="utt", file=sys.stderr)
    return items


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    langs = [x for x in args.langs.split(",") if x] if args.langs else None
    try:
        docs = load_corpus(args.corpus_dir, langs)
        style = speech_style(args)
        write_style(args.out_dir, style)
        plans = job_items(args.out_dir, plan_utterances(docs, style), _utt_id,
                          args.job, args.num_jobs)
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
