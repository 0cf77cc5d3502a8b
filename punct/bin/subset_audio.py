"""A mixed-modality copy of a data dir: a fixed share of its utterances loses its audio.

Example (UniPunc Table 2, "mixed" test set)::

    python -m punct.bin.subset_audio --src data/test --dst data/test_mixed --share 0.5 --seed 1

copies the files of ``--src`` into ``--dst``; the feature streams (every ``<name>.scp``
but ``wav.scp``, or those of ``--streams``) lose the withheld utterances, and so do the
timings of ``words.tsv`` (start, end and pause_after become empty: without audio there is
no alignment; ``--keep-timings`` keeps them). The withheld utterance ids are listed in
``<dst>/withheld``. The choice (``punct.data.withhold``) is a seeded hash
ranking of the utterance ids: the same on every run and machine.
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from punct.data.withhold import select_withheld
from punct.errors import MissingDataError, PunctInputError, report_error
from punct.kaldi import c_sorted
from punct.wordtable import read_text_lines, read_word_table, write_word_table


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m punct.bin.subset_audio", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--src", required=True, help="source data dir (words.tsv, <stream>.scp)")
    p.add_argument("--dst", required=True, help="data dir to write")
    p.add_argument("--share", type=float, required=True,
                   help="share of utterances whose audio is withheld, in [0, 1]")
    p.add_argument("--seed", type=int, default=1, help="seed of the choice (default: 1)")
    p.add_argument("--streams", default=None,
                   help="comma-separated streams to filter (default: every <name>.scp "
                        "except wav.scp)")
    p.add_argument("--keep-timings", action="store_true",
                   help="keep the word timings of withheld utterances in words.tsv")
    return p


def filter_scp(src: Path, dst: Path, withheld: set[str]) -> tuple[int, int]:
    """Copy ``src`` to ``dst`` without the withheld keys; returns (kept, dropped)."""
    kept, dropped = [], 0
    for lineno, line in enumerate(read_text_lines(src), 1):
        key = line.split(maxsplit=1)[0] if line.strip() else ""
        if not key:
            raise PunctInputError("empty line", src, lineno)
        if key in withheld:
            dropped += 1
        else:
            kept.append(line.rstrip("\n") + "\n")
    dst.write_text("".join(kept), encoding="utf-8")
    return len(kept), dropped


def subset_audio(src: Path, dst: Path, share: float, seed: int,
                 streams: Sequence[str] | None = None, keep_timings: bool = False
                 ) -> list[str]:
    """Write the mixed copy; returns the sorted withheld utterance ids."""
    if not src.is_dir():
        raise MissingDataError("source data dir not found", src)
    if src.resolve() == dst.resolve():
        raise PunctInputError("--dst must differ from --src", dst)
    table_path = src / "words.tsv"
    if not table_path.is_file():
        raise MissingDataError("no word table (run stage 1 first)", table_path)
    utts = read_word_table(table_path)
    withheld = select_withheld(utts, share, seed)
    if streams is None:
        streams = [p.stem for p in sorted(src.glob("*.scp")) if p.name != "wav.scp"]
    for stream in streams:
        if not (src / f"{stream}.scp").is_file():
            raise MissingDataError(f"no {stream} stream in the source data dir",
                                   src / f"{stream}.scp")
    filtered = {f"{stream}.scp" for stream in streams}
    dst.mkdir(parents=True, exist_ok=True)
    for path in sorted(src.iterdir()):
        if not path.is_file() or path.name in filtered or path.name in ("words.tsv",
                                                                         "withheld"):
            continue
        shutil.copyfile(path, dst / path.name)
    for name in sorted(filtered):
        filter_scp(src / name, dst / name, withheld)
    if not keep_timings:
        utts = {u: [replace(r, start=None, end=None, pause_after=None) for r in rows]
                if u in withheld else rows for u, rows in utts.items()}
    write_word_table(dst / "words.tsv", utts)
    ids = c_sorted(withheld)
    (dst / "withheld").write_text("".join(u + "\n" for u in ids), encoding="utf-8")
    return ids


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    streams = None if args.streams is None else [s for s in args.streams.split(",") if s]
    try:
        ids = subset_audio(Path(args.src), Path(args.dst), args.share, args.seed, streams,
                           args.keep_timings)
    except PunctInputError as err:
        return report_error("subset_audio", err)
    n = len(read_word_table(Path(args.dst) / "words.tsv"))
    print(f"subset_audio: audio withheld for {len(ids)} of {n} utterances -> {args.dst}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
