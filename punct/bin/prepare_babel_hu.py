"""Stage 1 of the Hungarian BABEL recipe: Kaldi data dirs and word tables.

Example:
  python -m punct.bin.prepare_babel_hu --corpus-dir downloads/babel_hu/corpus \
      [--punct-dir downloads/babel_hu/punct] --data-dir data [--split paper|pack]

Reads a corpus copy in the BABEL layout (``punct.data.babel``: ``<subset>/audio/*.sph|wav``
and ``<subset>/transcription/*.txt``) and writes ``data/{train,dev,test}`` with ``text``,
``wav.scp`` (one entry per recording), ``segments`` (one utterance per speech segment),
``utt2spk`` (the recording), ``spk2utt``, ``utt2lang`` and ``words.tsv`` (all marks; the
systems map them to their label set; non-speech markers left out by the shared map,
``--nonspeech``, default ``babel``), ``text.orig`` (each segment as transcribed, markers
kept), plus ``data/prep.json`` with the counts. The reference punctuation is that of the
transcripts, or of the punctuated copy in ``--punct-dir``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path

from punct.data.babel import NONSPEECH_MAP, find_recordings
from punct.data.babel_corpus import (
    SPLITS,
    Utterance,
    count_marks,
    punct_file_index,
    recording_utterances,
    split_recordings,
)
from punct.data.nonspeech import add_nonspeech_option
from punct.data.sphere import wav_scp_entry
from punct.errors import MissingDataError, PunctInputError, report_error
from punct.kaldi import spk2utt_from_utt2spk, validate_data_dir, write_kv
from punct.wordtable import render_rows, write_word_table

NO_PUNCT_HELP = (
    "no punctuation in the training transcripts. BABEL transcripts are unpunctuated; "
    "Moró & Szaszák's reference marks are those of the read texts. Give the punctuated "
    "transcripts: the same <recording>.txt files (same time stamps and words) with the "
    "read text's punctuation, in BABEL_HU_PUNCT (conf/db.sh) or --punct-dir")


def write_set(data_dir: Path, utts: Sequence[Utterance], wavs: dict[str, str],
              lang: str) -> dict[str, int]:
    """One Kaldi data dir from its utterances, validated."""
    if not utts:
        raise MissingDataError("no speech segments for this set", data_dir)
    utts = sorted(utts, key=lambda u: u.utt_id.encode("utf-8"))
    words = {u.utt_id: list(u.rows) for u in utts}
    write_kv(data_dir / "text", {u: render_rows(r) for u, r in words.items()})
    write_kv(data_dir / "text.orig", {u.utt_id: u.transcript for u in utts})
    write_kv(data_dir / "wav.scp", {u.reco_id: wavs[u.reco_id] for u in utts})
    write_kv(data_dir / "segments",
             {u.utt_id: f"{u.reco_id} {u.start:.3f} {u.end:.3f}" for u in utts})
    utt2spk = {u.utt_id: u.reco_id for u in utts}
    write_kv(data_dir / "utt2spk", utt2spk)
    write_kv(data_dir / "spk2utt", spk2utt_from_utt2spk(utt2spk))
    write_kv(data_dir / "utt2lang", {u.utt_id: lang for u in utts})
    write_word_table(data_dir / "words.tsv", words)
    counts = validate_data_dir(data_dir, need_audio=True)
    counts["marked_words"] = count_marks(utts)
    return counts


def prepare(corpus_dir: Path, data_dir: Path, punct_dir: Path | None, split: str,
            lang: str, seed: int, nonspeech: str = NONSPEECH_MAP) -> dict[str, dict[str, int]]:
    """Read the corpus copy and write the three sets; returns their counts."""
    recordings = find_recordings(corpus_dir)
    punct_files = punct_file_index(punct_dir)
    by_split = split_recordings(recordings, split, seed)
    summary: dict[str, dict[str, int]] = {}
    for name in SPLITS:
        recs = by_split[name]
        utts = [u for rec in recs
                for u in recording_utterances(rec, punct_files, nonspeech)]
        if name == "train" and count_marks(utts) == 0:
            raise MissingDataError(NO_PUNCT_HELP, punct_dir or corpus_dir)
        wavs = {rec.reco_id: wav_scp_entry(rec.audio) for rec in recs}
        counts = write_set(data_dir / name, utts, wavs, lang)
        counts["recordings"] = len(recs)
        summary[name] = counts
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus-dir", type=Path, required=True,
                        help="the corpus copy in the BABEL layout")
    parser.add_argument("--punct-dir", type=Path, default=None,
                        help="punctuated copies of the transcripts (<recording>.txt)")
    parser.add_argument("--data-dir", type=Path, required=True, help="where data/<set> go")
    parser.add_argument("--split", choices=("paper", "pack"), default="paper",
                        help="paper: 10%% of the recordings dev, 10%% test; pack: the "
                             "training/dev/eval folders")
    parser.add_argument("--seed", type=int, default=1, help="seed of the paper split")
    parser.add_argument("--lang", default="hu", help="utt2lang code")
    add_nonspeech_option(parser)
    parser.set_defaults(nonspeech=NONSPEECH_MAP)
    args = parser.parse_args(argv)
    start = time.time()
    try:
        summary = prepare(args.corpus_dir, args.data_dir, args.punct_dir, args.split,
                          args.lang, args.seed, args.nonspeech)
    except PunctInputError as err:
        return report_error("prepare_babel_hu", err)
    (args.data_dir / "prep.json").write_text(
        json.dumps({"split": args.split, "seed": args.seed, "sets": summary}, indent=1) + "\n",
        encoding="utf-8")
    parts = [f"{k}: {v['recordings']} recordings, {v['utterances']} utts, {v['words']} words, "
             f"{v['marked_words']} marked" for k, v in summary.items()]
    print(f"prepare_babel_hu: {'; '.join(parts)} -> {args.data_dir} "
          f"({time.time() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
