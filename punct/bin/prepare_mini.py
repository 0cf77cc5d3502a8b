"""Stage 1 of the mini recipe: Kaldi data dirs and word tables from the synthesised corpus.

Reads ``<synth-dir>/meta/<utt>.json`` (written by ``punct.bin.synth_mini``) and writes
``<data-dir>/{train,dev,test}/`` with text, wav.scp, segments, utt2spk, spk2utt,
utt2lang and words.tsv (timings are filled in by stage 2).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from punct.bin.prepare_common import run_preparation
from punct.data.nonspeech import add_nonspeech_option
from punct.errors import MissingDataError, PunctInputError
from punct.kaldi import validate_data_dir, write_kv, write_word_dir
from punct.wordtable import WordRow, rows_from_text

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
    write_word_dir(data_dir, words, {m["utt_id"]: m["spk"] for m in metas},
                   {m["utt_id"]: m["lang"] for m in metas})
    write_kv(data_dir / "wav.scp", {m["utt_id"]: m["wav"] for m in metas})
    write_kv(data_dir / "segments",
             {m["utt_id"]: f"{m['utt_id']} 0.000 {float(m['duration']):.3f}" for m in metas})
    return validate_data_dir(data_dir, need_audio=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--synth-dir", type=Path, required=True, help="stage-0 output dir")
    parser.add_argument("--data-dir", type=Path, required=True, help="where data/<set> go")
    add_nonspeech_option(parser)
    args = parser.parse_args(argv)
    return run_preparation(
        "prepare_mini", lambda: prepare(args.synth_dir, args.data_dir, args.nonspeech),
        args.data_dir)


def prepare(synth_dir: Path, data_dir: Path, nonspeech: str | None = None) -> list[str]:
    """One data dir per split; the summary item of each."""
    metas = load_meta(synth_dir)
    summary = []
    for split in SPLITS:
        chosen = [m for m in metas if m["split"] == split]
        if not chosen:
            raise MissingDataError(f"no utterances in split {split}", synth_dir / "meta")
        counts = write_set(data_dir / split, chosen, nonspeech)
        summary.append(f"{split}: {counts['utterances']} utts, {counts['words']} words")
    return summary


if __name__ == "__main__":
    raise SystemExit(main())
