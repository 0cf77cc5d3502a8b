"""Stage 1 of the mTEDx / MuST-C recipe (UniPunc): Kaldi data dirs and word tables.

Examples:
  python -m punct.bin.prepare_mtedx --data-dir data --mtedx-dir downloads/mtedx --lang es
  python -m punct.bin.prepare_mtedx --data-dir data --mustc-dir /corpora/MUSTC_v1.0/en-de
  python -m punct.bin.prepare_mtedx --data-dir data \
      --jsonl unipunc_audio=mustc_unipunc/test-audio.jsonl \
      --jsonl unipunc_mixed=mustc_unipunc/test-mixed.jsonl \
      --audio-root MUSTC1_PATH=/corpora/MUSTC_v1.0/en-de/data --missing-audio text

Sets (``text``, ``utt2spk``, ``spk2utt``, ``utt2lang``, ``words.tsv``, ``prep.json``, and
``wav.scp`` + ``segments`` where there is audio):

- ``--mtedx-dir``: ``train``, ``dev`` (mTEDx ``valid``) and ``test`` of ``--lang``;
  segments are offsets into the talk-level flac files (read with soundfile).
- ``--mustc-dir``: ``mustc_train``, ``mustc_dev`` and ``mustc_tst_common``.
- ``--jsonl NAME=FILE``: a UniPunc JSONL file as the set NAME. A record with
  ``audio: null`` is an utterance without audio; a set mixing both lists those in
  ``withheld`` (text-only utterances of a mixed set, as ``punct.bin.subset_audio``
  writes). ``<MUSTC1_PATH>`` (or any ``<NAME>``) in an audio path is replaced by the
  directory of ``--audio-root NAME=DIR``. A record whose audio file is absent stops the
  preparation (``--missing-audio error``, the default) or is kept without audio
  (``--missing-audio text``: counted in ``prep.json`` as ``audio_missing`` and named in
  the summary); the shared copy of UniPunc's test files carries no audio, so without
  MuST-C they are text-only test sets.

Transcripts lose sound events such as ``(Aplausos)`` and symbols the labels do not model
(``punct.data.mtedx.clean_transcript``); segments left without words are dropped and
counted (``prep.json``).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from punct.data.mtedx import (
    Segment,
    clean_transcript,
    read_mtedx_split,
    read_mustc_split,
)
from punct.data.szeged import CleanStats
from punct.data.unipunc_jsonl import (
    read_unipunc_jsonl,
    resolve_audio_path,
    utterance_id,
)
from punct.errors import MissingDataError, PunctInputError, report_error
from punct.extras import require
from punct.kaldi import spk2utt_from_utt2spk, validate_data_dir, write_kv
from punct.wordtable import WordRow, render_rows, rows_from_text, write_word_table

MTEDX_SETS = (("train", "train"), ("valid", "dev"), ("test", "test"))
MUSTC_SETS = (("train", "mustc_train"), ("dev", "mustc_dev"),
              ("tst-COMMON", "mustc_tst_common"))


@dataclass
class DataSet:
    """The content of one data dir being built."""

    rows: dict[str, list[WordRow]] = field(default_factory=dict)
    segments: dict[str, str] = field(default_factory=dict)  # utt -> "reco start end"
    wavs: dict[str, str] = field(default_factory=dict)      # reco -> audio path
    utt2spk: dict[str, str] = field(default_factory=dict)
    utt2lang: dict[str, str] = field(default_factory=dict)
    stats: CleanStats = field(default_factory=CleanStats)
    info: dict[str, Any] = field(default_factory=dict)

    def add(self, utt: str, text: str, spk: str, lang: str, path: Path, line: int) -> bool:
        """Add a cleaned utterance (False, counted, when no word is left)."""
        if utt in self.rows:
            raise PunctInputError(f"duplicate utterance id {utt!r}", path, line)
        cleaned = clean_transcript(text, self.stats)
        if not cleaned:
            self.info["dropped_empty"] = self.info.get("dropped_empty", 0) + 1
            return False
        rows = rows_from_text(utt, cleaned, str(path), line)
        self.rows[utt] = rows
        self.utt2spk[utt] = spk
        self.utt2lang[utt] = lang
        return True

    def add_audio(self, utt: str, reco: str, audio: Path, start: float, end: float,
                  path: Path, line: int) -> None:
        """Attach the segment ``start``-``end`` (s) of recording ``reco`` to ``utt``."""
        where = str(audio.resolve())
        if self.wavs.setdefault(reco, where) != where:
            raise PunctInputError(f"recording {reco!r} names two files: {self.wavs[reco]} "
                                  f"and {where}", path, line)
        self.segments[utt] = f"{reco} {start:.6f} {end:.6f}"


def write_set(data_dir: Path, name: str, ds: DataSet) -> str:
    """Write, validate and summarise one data dir."""
    out = data_dir / name
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("wav.scp", "segments", "withheld"):
        (out / stale).unlink(missing_ok=True)
    if not ds.rows:
        raise PunctInputError(f"set {name}: no utterance with words")
    write_kv(out / "text", {u: render_rows(rows) for u, rows in ds.rows.items()})
    write_word_table(out / "words.tsv", ds.rows)
    write_kv(out / "utt2spk", ds.utt2spk)
    write_kv(out / "spk2utt", spk2utt_from_utt2spk(ds.utt2spk))
    write_kv(out / "utt2lang", ds.utt2lang)
    text_only = sorted(set(ds.rows) - set(ds.segments))
    if ds.segments:
        write_kv(out / "wav.scp", ds.wavs)
        write_kv(out / "segments", ds.segments)
        if text_only:
            (out / "withheld").write_text("".join(u + "\n" for u in text_only),
                                          encoding="utf-8")
    marks = Counter(p for rows in ds.rows.values() for r in rows for p in r.punct)
    info = {**ds.info, "utterances": len(ds.rows), "with_audio": len(ds.segments),
            "without_audio": len(text_only), "recordings": len(ds.wavs),
            "words": sum(len(r) for r in ds.rows.values()),
            "label_counts": dict(sorted(marks.items())),
            "removed_chars": dict(ds.stats.dropped.most_common()),
            "removed_tokens": ds.stats.tokens_dropped}
    (out / "prep.json").write_text(json.dumps(info, indent=2, ensure_ascii=False) + "\n",
                                   encoding="utf-8")
    counts = validate_data_dir(out)
    audio = f"{len(ds.segments)} with audio" if ds.segments else "text only"
    missing = f", {ds.info['audio_missing']} audio files missing" \
        if ds.info.get("audio_missing") else ""
    return f"{name}: {counts['utterances']} utts ({audio}{missing}), {counts['words']} words"


def segments_set(segments: Sequence[Segment], lang: str) -> DataSet:
    """A data set of corpus segments with their talk audio."""
    ds = DataSet()
    for seg in segments:
        if not seg.audio.is_file():
            raise MissingDataError(f"segment {seg.utt_id}: audio file {seg.audio} not found",
                                   seg.path, seg.line)
        if ds.add(seg.utt_id, seg.text, seg.speaker, lang, seg.path, seg.line):
            ds.add_audio(seg.utt_id, seg.talk, seg.audio, seg.start, seg.end, seg.path,
                         seg.line)
    return ds


def sample_rate(audio: Path, path: Path, line: int) -> int:
    """The sample rate in ``audio``'s header (an unreadable file names the JSONL line)."""
    soundfile = require("soundfile", "align", "reading audio headers")  # optional extra: audio I/O
    try:
        return int(soundfile.info(str(audio)).samplerate)
    except Exception as err:  # soundfile raises several types for bad audio
        raise PunctInputError(f"unreadable audio {audio}: {err}", path, line) from err


def jsonl_set(path: Path, roots: dict[str, str], missing_audio: str, lang: str) -> DataSet:
    """A data set from a UniPunc JSONL file (see the module docstring)."""
    ds = DataSet()
    ds.info.update({"source": str(path), "audio_missing": 0, "audio_null": 0})
    for rec in read_unipunc_jsonl(path):
        utt = utterance_id(rec)
        spk = rec.speaker or utt
        if not ds.add(utt, rec.text, spk, rec.lang or lang, path, rec.line):
            continue
        if rec.audio is None:
            ds.info["audio_null"] += 1
            continue
        try:
            audio = resolve_audio_path(rec.audio, roots, path, rec.line)
            if not audio.is_file():
                raise MissingDataError(f"record {rec.id!r}: audio file {audio} not found "
                                       "(MUSTC in conf/db.sh; --missing-audio text keeps "
                                       "such records without audio)", path, rec.line)
        except MissingDataError:
            if missing_audio == "error":
                raise
            ds.info["audio_missing"] += 1
            continue
        rate = sample_rate(audio, path, rec.line)
        start = rec.audio.offset / rate
        ds.add_audio(utt, audio.stem, audio, start, start + rec.audio.frames / rate, path,
                     rec.line)
    return ds


def parse_pairs(values: Sequence[str], what: str) -> dict[str, str]:
    """``NAME=VALUE`` arguments as a dict (a malformed one is an error naming it)."""
    out = {}
    for value in values:
        name, sep, rest = value.partition("=")
        if not sep or not name or not rest:
            raise PunctInputError(f"{what}: expected NAME=VALUE, found {value!r}")
        out[name] = rest
    return out


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m punct.bin.prepare_mtedx", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", type=Path, required=True, help="where the sets go")
    p.add_argument("--mtedx-dir", type=Path, help="mTEDx root (holding <lang>-<lang>/)")
    p.add_argument("--lang", default="es", help="mTEDx language (default: es)")
    p.add_argument("--mustc-dir", type=Path, help="a MuST-C en-xx folder (licence-gated)")
    p.add_argument("--jsonl", action="append", default=[], metavar="NAME=FILE",
                   help="a UniPunc JSONL file prepared as the set NAME (repeatable)")
    p.add_argument("--audio-root", action="append", default=[], metavar="NAME=DIR",
                   help="directory standing for <NAME> in JSONL audio paths (repeatable)")
    p.add_argument("--missing-audio", choices=("error", "text"), default="error",
                   help="a JSONL record whose audio file is absent: stop (error) or keep "
                        "it without audio (text)")
    p.add_argument("--jsonl-lang", default="en",
                   help="language of JSONL records without tgt_lang (default: en)")
    return p


def prepare(args: argparse.Namespace) -> list[str]:
    """Write every requested set; returns the summary lines."""
    if args.mtedx_dir is None and args.mustc_dir is None and not args.jsonl:
        raise PunctInputError("nothing to prepare: give --mtedx-dir, --mustc-dir or --jsonl")
    summary = []
    if args.mtedx_dir is not None:
        for split, name in MTEDX_SETS:
            ds = segments_set(read_mtedx_split(args.mtedx_dir, args.lang, split), args.lang)
            summary.append(write_set(args.data_dir, name, ds))
    if args.mustc_dir is not None:
        for split, name in MUSTC_SETS:
            ds = segments_set(read_mustc_split(args.mustc_dir, split), "en")
            summary.append(write_set(args.data_dir, name, ds))
    roots = parse_pairs(args.audio_root, "--audio-root")
    for name, file in parse_pairs(args.jsonl, "--jsonl").items():
        ds = jsonl_set(Path(file), roots, args.missing_audio, args.jsonl_lang)
        summary.append(write_set(args.data_dir, name, ds))
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    t0 = time.time()
    try:
        summary = prepare(args)
    except PunctInputError as err:
        return report_error("prepare_mtedx", err)
    for line in summary:
        print(f"prepare_mtedx: {line}")
    print(f"prepare_mtedx: {len(summary)} sets in {args.data_dir} ({time.time() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
