"""Stage 1 of the mintzai-ST recipe: Kaldi data dirs and word tables, ES, EU and ES+EU.

  python -m punct.bin.prepare_mintzai --db-dir downloads/mintzai_st/corpus --data-dir data

Reads ``v1.0/{es-eu,eu-es}/{train,dev,test}/{audio,transcriptions}`` (see
``punct.data.mintzai``) and keeps the corpus' own partitions: ``<split>_es`` (Spanish
speech, es-eu), ``<split>_eu`` (Basque speech, eu-es) and ``<split>_es_eu`` (both), for
split in train, dev, test. Each set has text, wav.scp (the segment files themselves:
m4a is decoded by ``punct.data.audio_decode``), utt2spk (the corpus names no speakers:
one speaker per segment), spk2utt, utt2lang and words.tsv. Segments without a
transcription, transcriptions without audio and empty transcriptions are left out,
counted on stdout and listed in ``<data-dir>/mintzai_prepare.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path

from punct.data.mintzai import SPLITS, Segment, SplitScan, scan_corpus
from punct.errors import PunctInputError, report_error
from punct.kaldi import spk2utt_from_utt2spk, validate_data_dir, write_kv
from punct.wordtable import WordRow, render_rows, rows_from_text, write_word_table

LANG_SETS = {"es": ("es",), "eu": ("eu",), "es_eu": ("es", "eu")}
"""Set suffix -> languages it holds (ES+EU = the concatenation, as in AutoPunct)."""


def write_set(data_dir: Path, segments: Sequence[Segment]) -> dict[str, int]:
    """One Kaldi data dir (validated) from segments; returns its counts."""
    words: dict[str, list[WordRow]] = {}
    for seg in sorted(segments, key=lambda s: s.utt_id.encode("utf-8")):
        words[seg.utt_id] = rows_from_text(seg.utt_id, seg.text, seg.text_path, 1)
    write_kv(data_dir / "text", {u: render_rows(r) for u, r in words.items()})
    write_kv(data_dir / "wav.scp", {s.utt_id: str(s.audio) for s in segments})
    utt2spk = {s.utt_id: s.utt_id for s in segments}
    write_kv(data_dir / "utt2spk", utt2spk)
    write_kv(data_dir / "spk2utt", spk2utt_from_utt2spk(utt2spk))
    write_kv(data_dir / "utt2lang", {s.utt_id: s.lang for s in segments})
    write_word_table(data_dir / "words.tsv", words)
    counts = validate_data_dir(data_dir, need_audio=True)
    rows = [r for rs in words.values() for r in rs]
    counts["marked_words"] = sum(1 for r in rows if r.punct)
    counts["cased_words"] = sum(1 for r in rows if r.cap != "O")
    return counts


def check_labels(set_name: str, counts: dict[str, int], data_dir: Path) -> None:
    """A training set without any mark or capital cannot train punctuation: the
    transcriptions are then not what the recipe assumes (it is unverified)."""
    if counts["marked_words"] == 0:
        raise PunctInputError(f"{set_name}: no word carries a punctuation mark in "
                              f"{counts['words']} words; the transcriptions are not "
                              "punctuated, so this recipe cannot train on them",
                              data_dir / "words.tsv")
    if counts["cased_words"] == 0:
        print(f"prepare_mintzai: warning: {set_name} has no capital letters (all lower "
              "case); capitalisation scores will be meaningless")


def prepare(db_dir: Path, data_dir: Path, max_utts: int | None = None,
            langs: tuple[str, ...] = ("es", "eu")) -> dict[str, dict[str, int]]:
    """Scan the corpus and write every set; returns set name -> counts."""
    scans = scan_corpus(db_dir, langs)
    by_key: dict[tuple[str, str], SplitScan] = {(s.lang, s.split): s for s in scans}
    report: dict[str, object] = {"db_dir": str(db_dir), "splits": {}}
    for scan in scans:
        if max_utts is not None:
            scan.segments = sorted(scan.segments, key=lambda s: s.utt_id)[:max_utts]
        report["splits"][f"{scan.split}_{scan.lang}"] = {  # type: ignore[index]
            "folder": str(scan.folder), "segments": len(scan.segments),
            "audio_without_transcription": scan.audio_only,
            "transcription_without_audio": scan.text_only,
            "empty_transcription": scan.empty_text,
        }
        left_out = len(scan.audio_only) + len(scan.text_only) + len(scan.empty_text)
        if left_out:
            print(f"prepare_mintzai: {scan.folder}: {left_out} segments left out "
                  f"({len(scan.audio_only)} audio without transcription, "
                  f"{len(scan.text_only)} transcriptions without audio, "
                  f"{len(scan.empty_text)} empty), listed in mintzai_prepare.json")
    summary: dict[str, dict[str, int]] = {}
    for split in SPLITS:
        for suffix, set_langs in LANG_SETS.items():
            if not set(set_langs) <= set(langs):
                continue
            segments = [seg for lang in set_langs for seg in by_key[(lang, split)].segments]
            name = f"{split}_{suffix}"
            summary[name] = write_set(data_dir / name, segments)
            if split == "train":
                check_labels(name, summary[name], data_dir / name)
    report["sets"] = summary
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "mintzai_prepare.json").write_text(json.dumps(report, indent=1) + "\n",
                                                   encoding="utf-8")
    return summary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m punct.bin.prepare_mintzai",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--db-dir", type=Path, required=True,
                   help="the corpus copy (the folder holding v1.0/, or its parent)")
    p.add_argument("--data-dir", type=Path, help="where data/<set> go")
    p.add_argument("--check-layout", action="store_true",
                   help="only scan the copy's layout and print what it holds (stage 0)")
    p.add_argument("--max-utts", type=int, default=None,
                   help="keep the first N segments (by id) of each language and split "
                        "(a quick trial run; default: all)")
    p.add_argument("--langs", default="es,eu",
                   help="languages to prepare, comma-separated (default es,eu)")
    args = p.parse_args(argv)
    langs = tuple(x for x in args.langs.split(",") if x)
    if not langs or set(langs) - {"es", "eu"}:
        p.error(f"--langs {args.langs!r}: choose from es, eu")
    if args.max_utts is not None and args.max_utts < 1:
        p.error("--max-utts must be at least 1")
    start = time.time()
    if args.check_layout:
        try:
            scans = scan_corpus(args.db_dir, langs)
        except PunctInputError as err:
            return report_error("prepare_mintzai", err)
        for scan in scans:
            print(f"prepare_mintzai: {scan.direction}/{scan.folder.name}: "
                  f"{len(scan.segments)} segments ({scan.lang})")
        return 0
    if args.data_dir is None:
        p.error("--data-dir is required (unless --check-layout)")
    try:
        summary = prepare(args.db_dir, args.data_dir, args.max_utts, langs)
    except PunctInputError as err:
        return report_error("prepare_mintzai", err)
    for name, counts in summary.items():
        print(f"prepare_mintzai: {name}: {counts['utterances']} utts, {counts['words']} words,"
              f" {counts['marked_words']} with marks")
    print(f"prepare_mintzai: {len(summary)} sets -> {args.data_dir} "
          f"({time.time() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
