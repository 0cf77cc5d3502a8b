"""Stage 1 of the mini recipe: Kaldi data dirs and word tables from the synthesised corpus.

Reads ``<synth-dir>/meta/<utt>.json`` (written by ``punct.bin.synth_mini``) and writes
``<data-dir>/{train,dev,test}/`` with text, wav.scp, segments, utt2spk, spk2utt,
utt2lang and words.tsv (timings are filled in by stage 2).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from punct.data.nonspeech import add_nonspeech_option
from punct.errors import MissingDataError, PunctInputError, report_error
from punct.kaldi import spk2utt_from_utt2spk, validate_data_dir, write_kv
from punct.wordtable import WordRow, render_rows, rows_from_text, write_word_table

SPLITS = ("train", "dev", "test")
META_KEYS = ("utt_id", "spk", "lang", "split", "text", "duration")


def load_meta(synth_dir: Path) -> list[dict]:
    """All utterance metadata, sorted by utt_id; every file is checked."""
    meta_dir = synth_dir / "meta"
    files = sorted(meta_dir.glob("*.json")) if meta_dir.is_dir() else []
    if not files:
        raise MissingDataError("no synthesised utterances (run stage 0 first)", meta_dir)
    metas = []
    for path in files:
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise PunctInputError(f"unreadable metadata: {err}", path) from None
        missing = [k for k in META_KEYS if k not in meta]
        if missing:
            raise PunctInputError(f"metadata lacks {', '.join(missing)}", path)
        if meta["split"] not in SPLITS:
            raise PunctInputError(f"unknown split {meta['split']!r}", path)
        wav = synth_dir / "wav" / f"{meta['utt_id']}.wav"
        if not wav.is_file():
            raise MissingDataError(f"missing audio {wav} for utterance {meta['utt_id']}", path)
        meta["wav"] = str(wav.resolve())
        meta["meta_path"] = str(path)
        metas.append(meta)
    return metas


def write_set(data_dir: Path, metas: list[dict], nonspeech: str | None = None
              ) -> dict[str, int]:
    """Write one data dir from the utterances' metadata and validate it (``nonspeech``:
    the map of non-speech tokens, left out of the word table)."""
    words: dict[str, list[WordRow]] = {}
    for meta in sorted(metas, key=lambda m: m["utt_id"].encode("utf-8")):
        words[meta["utt_id"]] = rows_from_text(meta["utt_id"], meta["text"], meta["meta_path"],
                                               nonspeech=nonspeech)
    write_kv(data_dir / "text", {u: render_rows(r) for u, r in words.items()})
    write_kv(data_dir / "wav.scp", {m["utt_id"]: m["wav"] for m in metas})
    write_kv(data_dir / "segments",
             {m["utt_id"]: f"{m['utt_id']} 0.000 {float(m['duration']):.3f}" for m in metas})
    utt2spk = {m["utt_id"]: m["spk"] for m in metas}
    write_kv(data_dir / "utt2spk", utt2spk)
    write_kv(data_dir / "spk2utt", spk2utt_from_utt2spk(utt2spk))
    write_kv(data_dir / "utt2lang", {m["utt_id"]: m["lang"] for m in metas})
    write_word_table(data_dir / "words.tsv", words)
    return validate_data_dir(data_dir, need_audio=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--synth-dir", type=Path, required=True, help="stage-0 output dir")
    parser.add_argument("--data-dir", type=Path, required=True, help="where data/<set> go")
    add_nonspeech_option(parser)
    args = parser.parse_args(argv)
    start = time.time()
    try:
        metas = load_meta(args.synth_dir)
        summary = []
        for split in SPLITS:
            chosen = [m for m in metas if m["split"] == split]
            if not chosen:
                raise MissingDataError(f"no utterances in split {split}", args.synth_dir / "meta")
            counts = write_set(args.data_dir / split, chosen, args.nonspeech)
            summary.append(f"{split}: {counts['utterances']} utts, {counts['words']} words")
    except PunctInputError as err:
        return report_error("prepare_mini", err)
    print(f"prepare_mini: {'; '.join(summary)} -> {args.data_dir} ({time.time() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
