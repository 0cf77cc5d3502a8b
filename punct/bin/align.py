"""Stage 2: align a data dir's utterances to their audio and write pauses into words.tsv.

Jobs (parallel through the launcher, resumable)::

    python -m punct.bin.align --data-dir data/test --aligner vad \\
        --out-dir data/test/align/vad --job 1 --num-jobs 4

aligns the utterances of job J (listed in ``<data-dir>/split<N>/<J>/ids``, written on
first use by :mod:`punct.jobs_split`) into ``<out>/ctm.J`` and ``<out>/utt2dur.J``. Then::

    python -m punct.bin.align --data-dir data/test --out-dir data/test/align/vad \\
        --merge --num-jobs 4 [--reference-dir downloads/mini/ref]

merges the parts into ``<out>/ctm`` and ``<out>/utt2dur``, writes start/end/pause_after
of THIS aligner into ``<data-dir>/words.tsv`` (other columns untouched; utterances with
audio that were not aligned get empty timings) and, with a reference, writes
``<out>/eval.json`` (boundary error and pause P/R/F1 per language and overall). Without
``--job`` and ``--merge`` it does both in one process. Aligners: vad (offline, any
language), dtw (offline, eSpeak NG languages), pocketsphinx (offline, English), ctc
(``--ctc-model``: a wav2vec2/MMS CTC model by Hugging Face id or local dir), espnet_ctc
(``--ctc-model``: an ESPnet ASR model dir; the optional extra), auto (per
language from ``--align-table``, default conf/align.yaml), reference
(``--reference-dir`` or ``--source``: <utt>.ctm files), ctm (``--source`` one CTM
file), textgrid (``--source`` a directory of <reco>.TextGrid). Audio aligners fail with
the utterance named when the transcript does not fit the audio. ``--nonspeech NAME|PATH``
(default ``default``) names the map of non-speech tokens (docs/NONSPEECH.md): they are
taken out of what the aligner matches, and CTM/TextGrid intervals holding them count
into the pause between their neighbouring words.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from tqdm import tqdm

from punct.align.base import (
    AlignRequest,
    available_aligners,
    check_plausible,
    get_aligner,
    speech_request,
    speech_words,
)
from punct.align.ctm import ReferenceAligner, words_for_request
from punct.align.evaluate import PAUSE_THRESHOLD, evaluate
from punct.align.pauses import attach_timings, compute_pauses
from punct.atomic import atomic_write_text
from punct.data.audio import load_requests
from punct.data.ctm import ctm_lines, read_ctm
from punct.data.nonspeech import add_nonspeech_option
from punct.data.timed import TimedWord
from punct.errors import PunctInputError, report_error
from punct.jobs_split import add_job_options, check_job_options, finished_parts, job_items
from punct.kaldi import c_sorted, read_kv
from punct.wordtable import read_word_table, write_word_table

#: Aligners that read timings from files (no audio, no plausibility check).
FILE_ALIGNERS = ("reference", "ctm", "textgrid")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m punct.bin.align",
        description="Align utterances to audio (word timings -> pauses in words.tsv).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--data-dir", required=True, help="Kaldi data dir (wav.scp, words.tsv, ...)")
    p.add_argument("--out-dir", required=True, help="output dir, e.g. data/test/align/vad")
    p.add_argument("--aligner", choices=available_aligners(), default=None,
                   help="aligner (required unless --merge)")
    p.add_argument("--source", default=None,
                   help="CTM file (ctm), TextGrid dir (textgrid) or CTM dir (reference)")
    p.add_argument("--tier", default="words", help="TextGrid tier holding the words")
    p.add_argument("--ctc-model", default=None,
                   help="ctc aligner: wav2vec2/MMS CTC model (Hugging Face id or local dir); "
                        "espnet_ctc aligner: ESPnet ASR model (dir with config.yaml and a .pth)")
    p.add_argument("--ctc-device", default="cpu", help="ctc, espnet_ctc aligners: torch device")
    p.add_argument("--align-table", default=None,
                   help="auto aligner: YAML table language -> aligner (default conf/align.yaml)")
    p.add_argument("--reference-dir", default=None,
                   help="reference <utt>.ctm files: alignment source for 'reference', "
                        "evaluation reference for --merge")
    add_nonspeech_option(p)
    add_job_options(p)
    p.add_argument("--pause-threshold", type=float, default=PAUSE_THRESHOLD,
                   help="pause length (s) for the pause P/R/F1 of eval.json")
    args = p.parse_args(argv)
    check_job_options(p, args)
    if not args.merge and args.aligner is None:
        p.error("--aligner is required (unless --merge)")
    return args


# ----------------------------------------------------------------------------- job


def _progress(items: Sequence[AlignRequest], desc: str):
    return tqdm(items, desc=desc, unit="utt", disable=not sys.stderr.isatty())


def _utt_id(request: AlignRequest) -> str:
    return request.utt_id


def run_job(args: argparse.Namespace, job: int) -> tuple[int, int]:
    """Align job ``job``'s utterances; returns (aligned, skipped as already done)."""
    data_dir, out = Path(args.data_dir), Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    final_ctm, final_dur = out / f"ctm.{job}", out / f"utt2dur.{job}"
    if final_ctm.is_file() and final_dur.is_file():
        return 0, -1
    requests = [speech_request(r, args.nonspeech)
                for r in job_items(data_dir, load_requests(data_dir), _utt_id, job, args.num_jobs)]
    requests = [r for r in requests if r.words]
    source = args.source
    if args.aligner == "reference" and source is None:
        source = args.reference_dir
    aligner = get_aligner(args.aligner, **aligner_options(args, source))
    part_ctm, part_dur, done_path = (out / f".ctm.{job}.part", out / f".utt2dur.{job}.part",
                                     out / f".done.{job}")
    done = _resume(part_ctm, part_dur, done_path)
    n_aligned = 0
    with open(part_ctm, "a", encoding="utf-8") as fc, \
            open(part_dur, "a", encoding="utf-8") as fd, \
            open(done_path, "a", encoding="utf-8") as fdone:
        for req in _progress(requests, f"align job {job}"):
            if req.utt_id in done:
                continue
            result = aligner.align(req)
            if result is not None and args.aligner not in FILE_ALIGNERS:
                check_plausible(req, result.words, result.duration)
            if result is not None:
                fc.write("".join(ctm_lines(req.utt_id, result.words)))
                fd.write(f"{req.utt_id} {result.duration:.4f}\n")
                n_aligned += 1
            fc.flush()
            fd.flush()
            os.fsync(fc.fileno())
            os.fsync(fd.fileno())
            fdone.write(req.utt_id + "\n")
            fdone.flush()
    os.replace(part_dur, final_dur)
    os.replace(part_ctm, final_ctm)
    done_path.unlink()
    return n_aligned, len(done)


def aligner_options(args: argparse.Namespace, source: str | None) -> dict:
    """Keyword options for :func:`get_aligner` from the command line."""
    options: dict = {"source": source, "tier": args.tier, "ctc_device": args.ctc_device,
                     "nonspeech": args.nonspeech}
    if args.ctc_model:
        options["ctc_model"] = args.ctc_model
    if args.align_table:
        options["align_table"] = args.align_table
    return options


def _resume(part_ctm: Path, part_dur: Path, done_path: Path) -> set[str]:
    """Keep what earlier runs of this job finished; drop lines of unfinished utterances."""
    if not done_path.is_file():
        for p in (part_ctm, part_dur):
            if p.exists():
                p.unlink()
        return set()
    done = set(done_path.read_text(encoding="utf-8").split())
    for p in (part_ctm, part_dur):
        if p.is_file():
            keep = [line for line in p.read_text(encoding="utf-8").splitlines(keepends=True)
                    if line.endswith("\n") and line.split(" ", 1)[0] in done]
            p.write_text("".join(keep), encoding="utf-8")
    return done


# ----------------------------------------------------------------------------- merge


def merge(args: argparse.Namespace) -> str:
    """Merge job outputs, update words.tsv, evaluate; returns the summary line."""
    data_dir, out = Path(args.data_dir), Path(args.out_dir)
    hyp: dict[str, list[TimedWord]] = {}
    where: dict[str, Path] = {}
    durs: dict[str, float] = {}
    ctms = finished_parts(lambda job: out / f"ctm.{job}", args.num_jobs)
    durs_paths = finished_parts(lambda job: out / f"utt2dur.{job}", args.num_jobs)
    for ctm_path, dur_path in zip(ctms, durs_paths, strict=True):
        for utt, words in read_ctm(ctm_path).items():
            if utt in hyp:
                raise PunctInputError(f"utterance {utt!r} aligned by two jobs", ctm_path,
                                      words[0].line if words else None)
            hyp[utt], where[utt] = words, ctm_path
        for utt, value in read_kv(dur_path).items():
            try:
                durs[utt] = float(value)
            except ValueError:
                raise PunctInputError(f"bad duration {value!r} for {utt}", dur_path) from None
    requests = {r.utt_id: r for r in load_requests(data_dir)}
    table_path = data_dir / "words.tsv"
    table = read_word_table(table_path)
    for utt in hyp:
        if utt not in table or utt not in requests:
            raise PunctInputError(f"utterance {utt!r} is not in {table_path} / wav.scp",
                                  where[utt], hyp[utt][0].line if hyp[utt] else None)
    n_words = n_aligned = 0
    for utt, rows in table.items():
        if utt not in requests:
            continue  # text-only utterance: untouched
        n_words += len(rows)
        if utt in hyp:
            if utt not in durs:
                raise PunctInputError(f"no duration for utterance {utt!r}",
                                      where[utt].with_name(where[utt].name.replace("ctm",
                                                                                   "utt2dur")))
            timed = attach_timings(rows, hyp[utt], where[utt])
            table[utt] = compute_pauses(timed, durs[utt], where[utt])
            n_aligned += len(rows)
        else:
            table[utt] = [r.with_timing(None, None, None) for r in rows]
    ordered = c_sorted(hyp)
    lines = [line for utt in ordered for line in ctm_lines(utt, hyp[utt])]
    atomic_write_text(out / "ctm", "".join(lines))
    atomic_write_text(out / "utt2dur", "".join(f"{u} {durs[u]:.4f}\n" for u in c_sorted(durs)))
    write_word_table(table_path, table)
    share = n_aligned / n_words if n_words else 0.0
    summary = (f"align: {len(hyp)}/{len(requests)} utterances, {n_aligned}/{n_words} words "
               f"aligned ({100 * share:.1f}%) -> {out / 'ctm'}, {table_path}")
    if args.reference_dir:
        report = evaluate_against(requests, hyp, Path(args.reference_dir), data_dir,
                                  args.pause_threshold, args.nonspeech)
        report["aligner"] = args.aligner or out.name
        report["share_aligned"] = round(share, 4)
        atomic_write_text(out / "eval.json", json.dumps(report, indent=2) + "\n")
        overall = report["overall"]
        summary += (f"; vs reference: median boundary error "
                    f"{overall['boundary_error_ms']['median']} ms, "
                    f"pause F1 {overall['pauses']['f1']} -> {out / 'eval.json'}")
    return summary


def evaluate_against(
    requests: dict[str, AlignRequest],
    hyp: dict[str, list[TimedWord]],
    ref_dir: Path,
    data_dir: Path,
    pause_threshold: float = PAUSE_THRESHOLD,
    nonspeech: str | None = None,
) -> dict:
    """eval.json content: ``overall`` and ``per_lang`` (utt2lang) evaluation dicts
    (non-speech tokens of the reference are left out)."""
    ReferenceAligner(ref_dir)  # checks that the directory exists
    ref: dict[str, list[TimedWord]] = {}
    for utt, req in requests.items():
        if not req.words:
            continue
        for key in dict.fromkeys((utt, req.recording)):
            path = ref_dir / f"{key}.ctm"
            if path.is_file():
                words = words_for_request(read_ctm(path), req)
                if words is not None:
                    ref[utt] = speech_words(words, nonspeech)
                break
    langs = {u: (r.lang or "unk") for u, r in requests.items()}
    per_lang = {}
    for lang in sorted(set(langs[u] for u in ref)):
        sub = {u: w for u, w in ref.items() if langs[u] == lang}
        per_lang[lang] = evaluate(hyp, sub, pause_threshold, ref_dir)
    return {
        "reference": str(ref_dir),
        "utterances_with_reference": len(ref),
        "overall": evaluate(hyp, ref, pause_threshold, ref_dir),
        "per_lang": per_lang,
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    t0 = time.time()
    try:
        if args.merge:
            summary = merge(args)
        elif args.job is not None:
            n, skipped = run_job(args, args.job)
            state = "already done" if skipped < 0 else f"aligned {n} utterances"
            summary = (f"align: job {args.job}/{args.num_jobs} ({args.aligner}): {state} -> "
                       f"{Path(args.out_dir) / f'ctm.{args.job}'}")
        else:
            for job in range(1, args.num_jobs + 1):
                run_job(args, job)
            summary = merge(args)
    except PunctInputError as err:
        return report_error("align", err)
    print(f"{summary} ({time.time() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
