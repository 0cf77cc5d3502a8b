"""The ASR condition of a test set: recognise its audio, project its labels, keep its reference.

:func:`build_asr_set` turns a data dir with audio (``data/<set>``) into ``data/<set>_asr``:

- ``hyp.ctm``: the recogniser's words and times, one recording per utterance;
- ``words.tsv``: those words with the pauses of the one pause formula and the labels
  projected from the reference (:mod:`punct.data.projection`), so that the set can be
  decoded (and scored on its own words) like any other;
- ``ref_words.tsv``: the reference rows of the same utterances; stage 6 scores a system's
  output on the ASR words against it, with the alignment and WER of
  :mod:`punct.score.metrics`;
- ``wav.scp``/``segments``/``utt2spk``/``spk2utt``/``utt2lang``/``text``: the utterances
  the recogniser serves (its language), so that stage 3 computes features for them;
- ``asr.json``: recogniser, WER with S/D/I, marks moved and dropped by the projection,
  seconds of audio and of decoding.

Decoding resumes: each utterance's words are appended to ``hyp.ctm.partial`` (flushed)
as soon as they are known, and a rerun skips the utterances already there.

Jobs: :func:`decode_job` decodes the utterances of job J of the data dir's split
(:mod:`punct.jobs_split`) into ``decoded.J`` and :func:`merge_asr_set` writes the set from
all of them. A recogniser whose output depends on the audio it has seen before
(PocketSphinx's live cepstral mean) has a ``replay`` method: the utterances before one
that is decoded but not decoded here (other jobs', or already done by an interrupted
run) are replayed, so every utterance is decoded as in one uninterrupted pass.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from operator import attrgetter
from pathlib import Path
from typing import Protocol

import numpy as np

from punct.atomic import atomic_write_text
from punct.data.audio import AlignRequest, load_requests
from punct.data.ctm import write_ctm
from punct.data.nonspeech import load_nonspeech_map
from punct.data.projection import hyp_rows, project_utterance
from punct.data.timed import TimedWord
from punct.data.word_align import EditCounts
from punct.errors import MissingDataError, PunctInputError
from punct.jobs_split import finished_parts, job_items
from punct.kaldi import (
    c_sorted,
    copy_set_markers,
    read_kv,
    read_segments,
    read_wav_scp,
    spk2utt_from_utt2spk,
    write_kv,
)
from punct.wordtable import WordRow, read_word_table, render_rows, write_word_table


class Recognizer(Protocol):
    """Audio -> timed words (:class:`punct.asr.pocketsphinx_asr.PocketsphinxRecognizer`)."""

    name: str
    language: str | None  # the utt2lang code of the utterances it decodes (None: all)

    def transcribe(self, samples: np.ndarray, rate: int, name: str = "audio"
                   ) -> list[TimedWord]: ...


def _read_partial(path: Path) -> dict[str, tuple[list[TimedWord], float, float]]:
    """Utterances already decoded, with their seconds of audio and of decoding, from
    ``utt<TAB>json`` lines; the torn line of an interrupted run and anything after it
    are cut off the file, so that new lines follow the last good one."""
    done: dict[str, tuple[list[TimedWord], float, float]] = {}
    if not path.is_file():
        return done
    good = 0
    with open(path, "rb") as handle:
        for raw in handle:
            utt, _, payload = raw.decode("utf-8", errors="replace").partition("\t")
            try:
                record = json.loads(payload) if raw.endswith(b"\n") else None
                words = [TimedWord(w, s, e) for w, s, e in record["words"]]
                done[utt] = (words, float(record["audio_s"]), float(record["decode_s"]))
            except (ValueError, TypeError, KeyError):
                break
            good += len(raw)
    if good < path.stat().st_size:
        with open(path, "r+b") as handle:
            handle.truncate(good)
    return done


Decoded = tuple[list[TimedWord], float, float]
"""An utterance's words, seconds of audio and seconds spent decoding it."""


def language_requests(data_dir: Path, name: str, language: str | None,
                      loaded: Sequence[AlignRequest] | None = None) -> list[AlignRequest]:
    """The utterances of ``data_dir`` (``loaded``: its requests, already read) that
    recogniser ``name`` of ``language`` decodes."""
    everything = load_requests(data_dir) if loaded is None else loaded
    requests = [r for r in everything if language is None or r.lang in (None, language)]
    if not requests:
        raise MissingDataError(f"no utterance in language {language!r} "
                               f"for the {name} recogniser", data_dir / "utt2lang")
    return requests


def _decode(requests: Sequence[AlignRequest], todo: set[str], recognizer: Recognizer,
            partial: Path, done: dict[str, Decoded],
            progress: Callable[[str], None] | None) -> None:
    """Decode the ``todo`` utterances into ``done`` and ``partial``; the others before the
    last of them are replayed when the recogniser keeps state across utterances."""
    last = max((i for i, r in enumerate(requests) if r.utt_id in todo), default=-1)
    replay = getattr(recognizer, "replay", None)
    partial.parent.mkdir(parents=True, exist_ok=True)
    with open(partial, "a", encoding="utf-8") as out:
        for i, request in enumerate(requests[: last + 1]):
            if request.utt_id not in todo:
                if replay is not None:
                    replay(*request.load_audio(), f"utterance {request.utt_id}")
                continue
            samples, rate = request.load_audio()
            start = time.perf_counter()
            words = recognizer.transcribe(samples, rate, f"utterance {request.utt_id}")
            done[request.utt_id] = (words, len(samples) / rate, time.perf_counter() - start)
            record = {"words": [[w.word, w.start, w.end] for w in words],
                      "audio_s": done[request.utt_id][1], "decode_s": done[request.utt_id][2]}
            out.write(request.utt_id + "\t" + json.dumps(record) + "\n")
            out.flush()
            if progress:
                progress(f"{i + 1}/{len(requests)} {request.utt_id}: {len(words)} words")


def _totals(decoded: dict[str, Decoded], requests: Sequence[AlignRequest]
            ) -> tuple[dict[str, list[TimedWord]], float, float]:
    kept = [decoded[r.utt_id] for r in requests]
    return ({r.utt_id: decoded[r.utt_id][0] for r in requests},
            sum(k[1] for k in kept), sum(k[2] for k in kept))


def recognize_set(data_dir: Path, recognizer: Recognizer, partial: Path,
                  progress: Callable[[str], None] | None = None
                  ) -> tuple[dict[str, list[TimedWord]], float, float]:
    """The timed words of every utterance of ``data_dir`` in the recogniser's language
    (resuming from ``partial``), the seconds of audio and the seconds spent decoding."""
    done = _read_partial(partial)
    requests = language_requests(data_dir, recognizer.name, recognizer.language)
    todo = {r.utt_id for r in requests} - set(done)
    _decode(requests, todo, recognizer, partial, done, progress)
    return _totals(done, requests)


def decode_job(data_dir: Path, out_dir: Path, recognizer: Recognizer, job: int,
               num_jobs: int, progress: Callable[[str], None] | None = None) -> int:
    """Decode job ``job``'s utterances (``<data-dir>/split<N>/<J>/ids``) in the recogniser's
    language into ``<out-dir>/decoded.J`` (resuming from ``hyp.ctm.partial.J``); returns
    the number decoded, -1 when the job was done already."""
    final = out_dir / f"decoded.{job}"
    if final.is_file():
        return -1
    everything = load_requests(data_dir)  # the split lists every utterance
    requests = language_requests(data_dir, recognizer.name, recognizer.language, everything)
    mine = {r.utt_id for r in job_items(data_dir, everything, attrgetter("utt_id"), job,
                                        num_jobs)}
    partial = out_dir / f"hyp.ctm.partial.{job}"
    done = _read_partial(partial)
    todo = {r.utt_id for r in requests if r.utt_id in mine} - set(done)
    _decode(requests, todo, recognizer, partial, done, progress)
    os.replace(partial, final)
    return len(todo)


def _subset_kv(path: Path, keep: Sequence[str]) -> dict[str, str]:
    table = read_kv(path)
    return {k: table[k] for k in keep if k in table}


def build_asr_set(data_dir: Path, out_dir: Path, recognizer: Recognizer,
                  nonspeech: str | None = None,
                  progress: Callable[[str], None] | None = None) -> dict[str, object]:
    """Write ``out_dir`` as the ASR condition of ``data_dir`` (module docstring); the
    summary written to ``asr.json`` is returned."""
    data_dir, out_dir = Path(data_dir), Path(out_dir)
    ref = read_word_table(data_dir / "words.tsv")
    decoded = recognize_set(data_dir, recognizer, out_dir / "hyp.ctm.partial", progress)
    return write_asr_set(data_dir, out_dir, ref, decoded,
                         (recognizer.name, recognizer.language), nonspeech)


def merge_asr_set(data_dir: Path, out_dir: Path, name: str, language: str | None,
                  num_jobs: int, nonspeech: str | None = None) -> dict[str, object]:
    """:func:`build_asr_set` from the ``decoded.J`` of jobs 1..``num_jobs``
    (:func:`decode_job`) of recogniser ``name`` serving ``language``."""
    data_dir, out_dir = Path(data_dir), Path(out_dir)
    ref = read_word_table(data_dir / "words.tsv")
    requests = language_requests(data_dir, name, language)
    decoded: dict[str, Decoded] = {}
    for path in finished_parts(lambda job: out_dir / f"decoded.{job}", num_jobs):
        for utt, record in _read_partial(path).items():
            if utt in decoded:
                raise PunctInputError(f"utterance {utt!r} decoded by two jobs", path)
            decoded[utt] = record
    missing = [r.utt_id for r in requests if r.utt_id not in decoded]
    if missing:
        raise MissingDataError(f"utterance {missing[0]!r} is in no job's output (the split "
                               f"changed? rerun the jobs)", out_dir / "decoded.1")
    return write_asr_set(data_dir, out_dir, ref, _totals(decoded, requests), (name, language),
                         nonspeech)


def write_asr_set(data_dir: Path, out_dir: Path, ref: dict[str, list[WordRow]],
                  decoded: tuple[dict[str, list[TimedWord]], float, float],
                  recognizer: tuple[str, str | None],
                  nonspeech: str | None = None) -> dict[str, object]:
    """Write the files of the ASR set (module docstring) from the decoded words, seconds of
    audio and of decoding, for recogniser (name, language); returns the summary."""
    hyp_words, audio_s, decode_s = decoded
    utts = c_sorted(hyp_words)
    ns_map = load_nonspeech_map(nonspeech)
    projected: dict[str, list[WordRow]] = {}
    refs: dict[str, list[WordRow]] = {}
    counts, moved, dropped = EditCounts(), 0, 0
    for utt in utts:
        if utt not in ref:
            raise PunctInputError(f"utterance {utt} has audio but no words", data_dir / "words.tsv")
        ref_rows = [r for r in ref[utt] if not ns_map.is_nonspeech(r.word)]
        hyp = hyp_rows(utt, hyp_words[utt], ns_map, out_dir / "hyp.ctm")
        result = project_utterance(ref_rows, hyp, what=f"utterance {utt}", path=out_dir)
        projected[utt], refs[utt] = result.rows, ref[utt]
        counts = counts + result.counts
        moved, dropped = moved + result.moved, dropped + result.dropped
    write_ctm(out_dir / "hyp.ctm", {utt: hyp_words[utt] for utt in utts})
    write_word_table(out_dir / "words.tsv", projected)
    write_word_table(out_dir / "ref_words.tsv", refs)
    write_kv(out_dir / "text", {u: render_rows(rows) for u, rows in projected.items()})
    utt2spk = _subset_kv(data_dir / "utt2spk", utts)
    write_kv(out_dir / "utt2spk", utt2spk)
    write_kv(out_dir / "spk2utt", spk2utt_from_utt2spk(utt2spk))
    if (data_dir / "utt2lang").is_file():
        write_kv(out_dir / "utt2lang", _subset_kv(data_dir / "utt2lang", utts))
    copy_set_markers(data_dir, out_dir)
    segments = data_dir / "segments"
    if segments.is_file():
        segs = read_segments(segments)
        write_kv(out_dir / "segments", {u: f"{segs[u][0]} {segs[u][1]:.3f} {segs[u][2]:.3f}"
                                        for u in utts})
        recos = {segs[u][0] for u in utts}
    else:
        recos = set(utts)
    wavs = read_wav_scp(data_dir / "wav.scp")
    write_kv(out_dir / "wav.scp", {r: wavs[r][0] for r in recos})
    summary: dict[str, object] = {
        "recognizer": recognizer[0], "language": recognizer[1],
        "utterances": len(utts), **counts.as_dict(),
        "marks_moved": moved, "marks_dropped": dropped,
        "audio_seconds": round(audio_s, 3), "decode_seconds": round(decode_s, 3),
        "real_time_factor": round(decode_s / audio_s, 4) if audio_s else None,
    }
    atomic_write_text(out_dir / "asr.json", json.dumps(summary, indent=1) + "\n")
    return summary
