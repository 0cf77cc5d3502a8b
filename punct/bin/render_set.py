"""Read a text data dir aloud with eSpeak NG: a data dir with audio for a real recogniser.

Example (stage 1 of the IWSLT recipe with ``iwslt_tts_asr_dev=true``)::

    python -m punct.bin.render_set --data-dir data/dev --out-dir data/dev_tts --max-words 6000
    python -m punct.bin.recognize --data-dir data/dev_tts --out-dir data/dev_tts_asr

writes ``data/dev_tts`` (``wav/<utt>.wav`` at 16 kHz, ``wav.scp``, ``utt2spk``,
``spk2utt``, ``utt2lang``, ``text``, ``words.tsv``, ``style.json`` with each utterance's
voice and rate): whole utterances in order until ``--max-words`` words, each read by one
of the voices at a rate drawn from the range, seeded by (``--seed``, utterance id); see
:mod:`punct.synth.render_set`. A rerun renders only what is missing.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from punct.errors import PunctInputError, report_error
from punct.synth.render_set import (
    DEFAULT_MAX_WORDS,
    DEFAULT_RATES,
    DEFAULT_VOICES,
    PIECE_WORDS,
    parse_voices,
    render_set,
)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m punct.bin.render_set", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", required=True, help="text data dir with words.tsv")
    p.add_argument("--out-dir", required=True, help="data dir to write, e.g. data/dev_tts")
    p.add_argument("--max-words", type=int, default=DEFAULT_MAX_WORDS,
                   help="whole utterances until at least this many words; 0: all "
                        f"(default {DEFAULT_MAX_WORDS})")
    p.add_argument("--seed", type=int, default=1, help="seed of the voice and rate draws")
    p.add_argument("--voices", default=",".join(DEFAULT_VOICES),
                   help=f"comma-separated eSpeak voices (default {','.join(DEFAULT_VOICES)})")
    p.add_argument("--rate-min", type=int, default=DEFAULT_RATES[0],
                   help=f"lowest rate, words per minute (default {DEFAULT_RATES[0]})")
    p.add_argument("--rate-max", type=int, default=DEFAULT_RATES[1],
                   help=f"highest rate, words per minute (default {DEFAULT_RATES[1]})")
    p.add_argument("--piece-words", type=int, default=PIECE_WORDS,
                   help=f"cut sentences longer than twice this (default {PIECE_WORDS})")
    p.add_argument("--quiet", action="store_true", help="no per-utterance progress lines")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.max_words < 0 or args.piece_words < 1:
        p.error("need --max-words >= 0 and --piece-words >= 1")
    if not 80 <= args.rate_min <= args.rate_max <= 450:
        p.error("need 80 <= --rate-min <= --rate-max <= 450 (eSpeak's rates)")
    try:
        voices = parse_voices(args.voices)
    except PunctInputError as err:
        p.error(str(err))

    def progress(line: str) -> None:
        print(f"render_set: {line}", file=sys.stderr)

    try:
        summary = render_set(Path(args.data_dir), Path(args.out_dir), args.seed, voices,
                             (args.rate_min, args.rate_max), args.max_words or None,
                             args.piece_words, None if args.quiet else progress)
    except PunctInputError as err:
        return report_error("render_set", err)
    speed = (summary["rendered_words"] / summary["render_seconds"]
             if summary["render_seconds"] else 0.0)
    print(f"render_set: {summary['utterances']} utterances, {summary['words']} words -> "
          f"{args.out_dir} ({summary['rendered']} rendered, {summary['skipped']} already "
          f"there; {summary['audio_seconds']:.0f} s of audio at {speed:.0f} words/s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
