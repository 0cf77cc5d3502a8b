"""Write a data dir as UniPunc JSON Lines (the format of UniPunc's data files).

Example:
  python -m punct.bin.write_unipunc_jsonl --data-dir data/test --out test.jsonl \
      --audio-root MUSTC1_PATH=/corpora/MUSTC_v1.0/en-de/data

One record per utterance (C-sorted ids): ``id`` = the utterance id with ``+`` turned
back into ``,`` plus a trailing comma (UniPunc's merged-segment ids); ``audio`` =
``<file>:<offset>:<frames>`` in samples of the file (from ``wav.scp`` and ``segments``)
or null for an utterance without audio (no ``wav.scp`` entry, or listed in
``withheld``); ``tgt_text`` = the ``text`` line; ``speaker_id`` from ``utt2spk``;
``tgt_lang`` from ``utt2lang``. With ``--audio-root NAME=DIR`` files under DIR are
written as ``<NAME>/...``, so that ``prepare_mtedx --jsonl`` reads the file back with
the same option.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from punct.data.unipunc_jsonl import AudioRef, UnipuncRecord, write_unipunc_jsonl
from punct.errors import MissingDataError, PunctInputError, report_error
from punct.extras import require
from punct.kaldi import (
    c_sorted,
    read_kv,
    read_segments,
    read_utt2lang,
    read_wav_scp,
    validate_data_dir,
)
from punct.wordtable import read_text_lines


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m punct.bin.write_unipunc_jsonl",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", type=Path, required=True, help="the data dir to write")
    p.add_argument("--out", type=Path, required=True, help="the JSONL file")
    p.add_argument("--audio-root", default=None, metavar="NAME=DIR",
                   help="write audio paths under DIR as <NAME>/... (UniPunc's <MUSTC1_PATH>)")
    return p


def audio_path(path: Path, root: tuple[str, Path] | None) -> str:
    """``path`` as written in the JSONL (relative to the root placeholder when under it)."""
    if root is not None:
        name, base = root
        try:
            return f"<{name}>/{path.resolve().relative_to(base.resolve()).as_posix()}"
        except ValueError:
            pass
    return str(path)


def data_dir_records(data_dir: Path, root: tuple[str, Path] | None = None
                     ) -> list[UnipuncRecord]:
    """The records of a data dir (see the module docstring)."""
    validate_data_dir(data_dir)
    soundfile = require("soundfile", "align", "reading audio headers")  # optional extra
    text = read_kv(data_dir / "text")
    utt2spk = read_kv(data_dir / "utt2spk")
    langs = read_utt2lang(data_dir / "utt2lang", missing_ok=True)
    withheld_path = data_dir / "withheld"
    withheld = {u.strip() for u in read_text_lines(withheld_path)} \
        if withheld_path.is_file() else set()
    wavs = read_wav_scp(data_dir / "wav.scp") if (data_dir / "wav.scp").is_file() else {}
    segs = read_segments(data_dir / "segments") if (data_dir / "segments").is_file() else {}
    rates: dict[str, int] = {}
    records = []
    for utt in c_sorted(text):
        ref = None
        if utt not in withheld and (utt in segs or (not segs and utt in wavs)):
            reco, start, end, _ = segs[utt] if segs else (utt, 0.0, -1.0, 0)
            wav, line = wavs[reco]
            if wav.endswith("|"):
                raise PunctInputError(f"recording {reco}: a command, not a file (UniPunc "
                                      "JSONL names wav files)", data_dir / "wav.scp", line)
            if not Path(wav).is_file():
                raise MissingDataError(f"recording {reco}: audio file {wav} not found",
                                       data_dir / "wav.scp", line)
            if wav not in rates:
                rates[wav] = int(soundfile.info(wav).samplerate)
            rate = rates[wav]
            end = end if end >= 0 else soundfile.info(wav).frames / rate
            offset = round(start * rate)
            ref = AudioRef(audio_path(Path(wav), root), offset, round(end * rate) - offset)
        records.append(UnipuncRecord(",".join(utt.split("+")) + ",", ref, text[utt],
                                     utt2spk[utt], langs.get(utt)))
    return records


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        root = None
        if args.audio_root is not None:
            name, sep, base = args.audio_root.partition("=")
            if not sep or not name or not base:
                raise PunctInputError(f"--audio-root: expected NAME=DIR, found "
                                      f"{args.audio_root!r}")
            root = (name, Path(base))
        records = data_dir_records(args.data_dir, root)
        n = write_unipunc_jsonl(args.out, records)
    except PunctInputError as err:
        return report_error("write_unipunc_jsonl", err)
    with_audio = sum(r.audio is not None for r in records)
    print(f"write_unipunc_jsonl: {n} records ({with_audio} with audio) -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
