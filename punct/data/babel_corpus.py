"""Utterances of a BABEL-layout corpus copy, with their reference punctuation and splits.

The punctuation of a read-speech corpus is that of the text the speakers read. It comes
either from the transcripts themselves (their text lines carry punctuation and casing)
or from a second copy of the transcripts, ``punct_dir``: the same ``<recording>.txt``
files with the same time stamps and words, punctuated. Every speech segment (a segment
with at least one word) is an utterance ``<recording>_<start in ms, 8 digits>``.

Splits: ``paper`` (Moró & Szaszák 2017: 10 % of the recordings for validation, another
10 % for testing, the rest for training; a seeded shuffle of the recording ids) or
``pack`` (the pack's own ``training``/``dev``/``eval`` folders).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from punct.data.babel import NONSPEECH_MAP, Recording, Segment, parse_transcript
from punct.data.nonspeech import NonSpeechMap, load_nonspeech_map
from punct.data.sphere import read_sphere_header
from punct.errors import MissingDataError, PunctInputError
from punct.extras import require
from punct.labels import parse_text
from punct.wordtable import WordRow, rows_from_text

SPLITS = ("train", "dev", "test")
PACK_SUBSETS = {"training": "train", "dev": "dev", "eval": "test"}
END_TOLERANCE = 0.05  # s a segment may run past the end of its audio (rounding)


@dataclass(frozen=True)
class Utterance:
    """One speech segment: its words (punctuated rows) and where it comes from."""

    utt_id: str
    reco_id: str
    start: float
    end: float
    rows: tuple[WordRow, ...]
    transcript: str
    """The segment's text as written, markers kept."""


def plain_words(text: str, path: Path, line: int,
                nonspeech: NonSpeechMap | str = NONSPEECH_MAP) -> list[str]:
    """The words of a segment text (non-speech markers left out), lower-cased, marks
    stripped."""
    return [tok.word for tok in parse_text(text, str(path), line, nonspeech)]


def punctuated_segments(plain: Sequence[Segment], plain_path: Path, punct_path: Path,
                        nonspeech: NonSpeechMap | str = NONSPEECH_MAP) -> list[Segment]:
    """The punctuated transcript's segments, checked against the plain transcript: the
    same time stamps and the same words (case and punctuation aside)."""
    punct = parse_transcript(punct_path, nonspeech)
    if len(punct) != len(plain):
        raise PunctInputError(
            f"{len(punct)} segments, but {plain_path} has {len(plain)}", punct_path)
    for p, q in zip(plain, punct, strict=True):
        if (p.start, p.end) != (q.start, q.end):
            raise PunctInputError(
                f"segment [{q.start}]-[{q.end}] differs from [{p.start}]-[{p.end}] of "
                f"{plain_path}:{p.line}", punct_path, q.line)
        if plain_words(p.text, plain_path, p.line, nonspeech) != \
                plain_words(q.text, punct_path, q.line, nonspeech):
            raise PunctInputError(
                f"words differ from {plain_path}:{p.line} (only punctuation and case may)",
                punct_path, q.line)
    return punct


def audio_duration(path: Path) -> float:
    """Length of an audio file in seconds (SPHERE header, else soundfile)."""
    if path.suffix.lower() == ".sph":
        header = read_sphere_header(path)
        if header.sample_count is not None:
            return header.sample_count / header.sample_rate
    soundfile = require("soundfile", "align", "reading audio")  # optional extra: audio I/O
    try:
        info = soundfile.info(str(path))
    except (RuntimeError, soundfile.LibsndfileError) as err:
        raise PunctInputError(f"unreadable audio: {err}", path) from None
    return info.frames / info.samplerate


def recording_utterances(rec: Recording, punct_files: Mapping[str, Path],
                         nonspeech: NonSpeechMap | str = NONSPEECH_MAP) -> list[Utterance]:
    """The speech segments of one recording as utterances (``nonspeech``: the map of the
    transcription markers, default the shipped ``babel`` map)."""
    nonspeech = load_nonspeech_map(nonspeech)
    segments = parse_transcript(rec.transcript, nonspeech)
    source = rec.transcript
    if punct_files:
        if rec.reco_id not in punct_files:
            raise MissingDataError(
                f"no punctuated transcript {rec.reco_id}.txt in the punctuation folder",
                rec.transcript)
        source = punct_files[rec.reco_id]
        segments = punctuated_segments(segments, rec.transcript, source, nonspeech)
    duration = audio_duration(rec.audio)
    out = []
    for seg in segments:
        if seg.end > duration + END_TOLERANCE:
            raise PunctInputError(
                f"segment ends at {seg.end} s, after the end of {rec.audio} ({duration:.3f} s)",
                source, seg.line)
        if not seg.is_speech:
            continue
        utt_id = f"{rec.reco_id}_{round(seg.start * 1000):08d}"
        rows = rows_from_text(utt_id, seg.text, source, seg.line, nonspeech)
        out.append(Utterance(utt_id, rec.reco_id, seg.start, seg.end, tuple(rows), seg.text))
    return out


def punct_file_index(punct_dir: Path | None) -> dict[str, Path]:
    """``<recording>.txt`` files anywhere under ``punct_dir`` by recording id."""
    if punct_dir is None:
        return {}
    if not punct_dir.is_dir():
        raise MissingDataError("punctuated transcript folder not found", punct_dir)
    index: dict[str, Path] = {}
    for path in sorted(punct_dir.rglob("*.txt")):
        if path.stem in index:
            raise PunctInputError(f"punctuated transcript also at {index[path.stem]}", path)
        index[path.stem] = path
    if not index:
        raise MissingDataError("no punctuated transcripts (*.txt)", punct_dir)
    return index


def split_recordings(recordings: Sequence[Recording], how: str,
                     seed: int = 1) -> dict[str, list[Recording]]:
    """Recordings per split: ``paper`` (10 % dev, 10 % test, at least one each) or
    ``pack`` (training/dev/eval folders)."""
    if how == "pack":
        out: dict[str, list[Recording]] = {s: [] for s in SPLITS}
        for rec in recordings:
            if rec.subset not in PACK_SUBSETS:
                raise PunctInputError(
                    f"subset folder {rec.subset!r} is none of {', '.join(PACK_SUBSETS)} "
                    "(--split pack)", rec.transcript)
            out[PACK_SUBSETS[rec.subset]].append(rec)
        for split, recs in out.items():
            if not recs:
                raise MissingDataError(f"no recordings for {split} (--split pack needs "
                                       "training, dev and eval folders)",
                                       recordings[0].transcript.parents[2])
        return out
    if how != "paper":
        raise PunctInputError(f"unknown split {how!r} (paper | pack)")
    if len(recordings) < 3:
        raise MissingDataError(f"{len(recordings)} recordings; the paper split needs 3 or "
                               "more", recordings[0].transcript if recordings else None)
    order = list(recordings)
    random.Random(seed).shuffle(order)
    n_held = max(1, round(len(order) / 10))
    return {"test": sorted(order[:n_held], key=lambda r: r.reco_id.encode()),
            "dev": sorted(order[n_held:2 * n_held], key=lambda r: r.reco_id.encode()),
            "train": sorted(order[2 * n_held:], key=lambda r: r.reco_id.encode())}


def count_marks(utts: Sequence[Utterance]) -> int:
    """Words that carry at least one punctuation mark."""
    return sum(1 for u in utts for r in u.rows if r.punct)
