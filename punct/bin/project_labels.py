"""Project a reference's marks and capitals onto ASR words: writes a word table (a test set).

The hypothesis is aligned to the reference word table utterance by utterance (same utt
ids on both sides) by edit distance, and its words take the reference's labels: matched
and substituted words the reference word's marks and capitalisation, inserted words none;
a deleted reference word's closing marks move to the hypothesis word before it, its
opening marks (OPEN_*) to the word after it. Conventions: docs/ASR.md.

Hypothesis formats (--hyp-format, default auto):
  ctm    Kaldi CTM keyed by utterance id ('<utt> <chan> <start> <dur> <word> [<conf>]');
         start, end and pause_after (the one pause formula) are kept
  text   one utterance per line, '<utt> word word ...' (a Kaldi text file); no timings
  words  a word table (words.tsv); its words and timings are kept, its labels replaced
  auto   words when the file starts with the words.tsv header, ctm when its name ends in
         .ctm, text otherwise
Non-speech tokens (--nonspeech) are no words: they are left out (their time is pause).

Example:
  punct project-labels --ref data/tst2011/words.tsv --hyp asr/tst2011.ctm \\
      --out data/tst2011_asr/words.tsv
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from punct.align.ctm import read_ctm
from punct.data.nonspeech import add_nonspeech_option
from punct.data.projection import hyp_rows, project_table
from punct.data.timed import TimedWord
from punct.errors import PunctInputError, report_error
from punct.kaldi import read_kv_lines
from punct.wordtable import COLUMNS, WordRow, read_text_lines, read_word_table, write_word_table

FORMATS = ("auto", "ctm", "text", "words")

HypWords = dict[str, list[str] | list[TimedWord]]


def detect_format(path: Path) -> str:
    """``words`` (words.tsv header), ``ctm`` (name ends in .ctm) or ``text``."""
    lines = read_text_lines(path)
    if lines and tuple(lines[0].split("\t")) == COLUMNS:
        return "words"
    return "ctm" if path.suffix.lower() == ".ctm" else "text"


def read_hyp(path: Path, fmt: str) -> tuple[HypWords, dict[str, int | None]]:
    """Words per utterance (timed for CTM and timed word tables) and each utterance's
    first line in the file."""
    if fmt == "ctm":
        table = read_ctm(path)
        return dict(table), {u: (w[0].line if w else None) for u, w in table.items()}
    if fmt == "text":
        lines = read_kv_lines(path, "<utt> <word> [<word> ...]")
        return {u: v.split() for u, (v, _) in lines.items()}, {u: n for u, (_, n) in
                                                                 lines.items()}
    table = read_word_table(path)
    words: HypWords = {}
    first: dict[str, int | None] = {}
    line = 2
    for utt, rows in table.items():
        words[utt] = timed_or_plain(rows)
        first[utt] = line
        line += len(rows)
    return words, first


def timed_or_plain(rows: list[WordRow]) -> list[str] | list[TimedWord]:
    """Timed words when every row has start and end, else the bare words."""
    if rows and all(r.start is not None and r.end is not None for r in rows):
        return [TimedWord(r.form, r.start, r.end) for r in rows]
    return [r.form for r in rows]


def run(args: argparse.Namespace) -> str:
    """Project, write the table and return the summary line."""
    ref_path, hyp_path = Path(args.ref), Path(args.hyp)
    ref = read_word_table(ref_path)
    fmt = detect_format(hyp_path) if args.hyp_format == "auto" else args.hyp_format
    words, first_line = read_hyp(hyp_path, fmt)
    hyp = {u: hyp_rows(u, w, args.nonspeech, hyp_path) for u, w in words.items()}
    line_of: Callable[[str], int | None] = first_line.get
    projected, total = project_table(ref, hyp, ref_path, hyp_path, args.nonspeech, line_of)
    out = {u: projected[u] for u in ref if projected[u]}
    write_word_table(args.out, out)
    c = total.counts
    wer = "n/a" if c.wer is None else f"{100 * c.wer:.1f}%"
    empty = len(ref) - len(out)
    return (f"{len(out)} utterances ({fmt} hypothesis), {c.hyp_words} words from "
            f"{c.ref_words} reference words: WER {wer} ({c.sub} sub, {c.dels} del, "
            f"{c.ins} ins); {total.moved} marks of deleted words moved, {total.dropped} "
            f"dropped" + (f"; {empty} utterances without hypothesis words left out"
                          if empty else "") + f" -> {args.out}")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="punct project-labels", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ref", required=True, help="reference word table (words.tsv)")
    p.add_argument("--hyp", required=True, help="hypothesis: CTM, text file or words.tsv")
    p.add_argument("--hyp-format", default="auto", choices=FORMATS,
                   help="format of --hyp (default: auto)")
    p.add_argument("--out", required=True, help="word table to write (words.tsv)")
    add_nonspeech_option(p)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        print(run(args))
    except PunctInputError as err:
        return report_error("project-labels", err)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
