"""Compare the aligners: boundary error, pause P/R/F1, speed and long-recording memory.

Run from a recipe dir whose stages 0-1 are done (e.g. ``egs/mini/punct1``)::

    python -m punct.bin.compare_aligners --sets test dev \\
        --mfa-dir /work/shared/data/mfa_english_word_alignments [--ctc-model ID_OR_DIR]

Datasets: (a) each ``data/<set>`` against the reference timings in
``--reference-dir`` (``downloads/mini/ref``: the synthesiser's word timings), per
utt2lang language; (b) ``--mfa-dir``: every ``<name>.TextGrid`` with a ``words`` tier and
its ``<name>.wav``/``.flac`` (English, real speech), the TextGrid's words being the
transcript. Each aligner aligns every utterance (a PunctInputError counts as a failed
utterance); the table gives median / 90th-percentile word boundary error (ms), pause
precision/recall/F1 at >= ``--pause-threshold`` and audio seconds per compute second
(wall clock). Memory: the English utterances of the first set are concatenated into
one recording of at least ``--long-seconds`` and each aligner aligns it in a fresh
process that reports its peak RSS.

The best aligner per language (pause F1, then median boundary error; real speech
decides where a language has it) is the ``choice``; ``--write-table conf/align.yaml``
writes it as the ``auto`` aligner's table. Output: ``<out-dir>/aligners.{md,csv,json}``.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from punct.align.base import AlignRequest, get_aligner
from punct.align.ctm import words_for_request
from punct.align.evaluate import PAUSE_THRESHOLD, evaluate
from punct.atomic import atomic_write_text
from punct.data.audio import load_requests
from punct.data.ctm import read_ctm
from punct.data.textgrid import read_textgrid, textgrid_words
from punct.data.timed import TimedWord
from punct.errors import MissingDataError, PunctInputError, report_error
from punct.extras import require

DEFAULT_ALIGNERS = ("vad", "dtw", "pocketsphinx")
#: Languages each aligner serves (others: every language).
ALIGNER_LANGS = {"pocketsphinx": ("en",)}


@dataclass
class Dataset:
    """Utterances with reference timings; ``real``: real speech (not synthesised)."""

    name: str
    requests: list[AlignRequest]
    ref: dict[str, list[TimedWord]]
    real: bool = False


@dataclass
class Run:
    """One aligner on one dataset."""

    hyp: dict[str, list[TimedWord]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    audio_s: float = 0.0
    compute_s: float = 0.0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m punct.bin.compare_aligners",
        description="Compare aligners on reference word timings (table in results/).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--aligners", nargs="+", default=list(DEFAULT_ALIGNERS),
                   help="aligners to compare (ctc is added when --ctc-model is given)")
    p.add_argument("--sets", nargs="*", default=["test", "dev"], help="data/<set> dirs")
    p.add_argument("--data-root", default="data", help="where the sets are")
    p.add_argument("--reference-dir", default="downloads/mini/ref",
                   help="reference <utt>.ctm timings of the sets")
    p.add_argument("--mfa-dir", default=None,
                   help="dir of <name>.TextGrid + <name>.wav/.flac (real English speech)")
    p.add_argument("--ctc-model", default=None, help="CTC model (HF id or local dir)")
    p.add_argument("--pause-threshold", type=float, default=PAUSE_THRESHOLD)
    p.add_argument("--long-seconds", type=float, default=60.0,
                   help="length of the long recording for the memory check (0: skip)")
    p.add_argument("--out-dir", default="results", help="where aligners.{md,csv,json} go")
    p.add_argument("--write-table", default=None,
                   help="write the per-language choice as an auto-aligner table (YAML)")
    p.add_argument("--probe", default=None, help=argparse.SUPPRESS)
    p.add_argument("--probe-wav", default=None, help=argparse.SUPPRESS)
    p.add_argument("--probe-words", default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


# ----------------------------------------------------------------------------- datasets


def load_set(data_dir: Path, ref_dir: Path) -> Dataset:
    """A Kaldi data dir's utterances with reference CTMs ``<ref_dir>/<utt>.ctm``."""
    if not ref_dir.is_dir():
        raise MissingDataError("reference timings directory not found", ref_dir)
    requests, ref = [], {}
    for req in load_requests(data_dir):
        path = ref_dir / f"{req.utt_id}.ctm"
        if not req.words or not path.is_file():
            continue
        words = words_for_request(read_ctm(path), req)
        if words is not None:
            requests.append(req)
            ref[req.utt_id] = words
    return Dataset(f"mini-{data_dir.name}", requests, ref)


def load_mfa(mfa_dir: Path) -> Dataset:
    """TextGrids with a ``words`` tier and their audio; transcript = the TextGrid words."""
    if not mfa_dir.is_dir():
        raise MissingDataError("MFA recordings directory not found", mfa_dir)
    requests, ref = [], {}
    for tg_path in sorted(mfa_dir.glob("*.TextGrid")):
        grid = read_textgrid(tg_path)
        if "words" not in [t.name for t in grid.tiers]:
            continue
        words = [replace(w, word=w.word.lower()) for w in textgrid_words(grid)]
        audio = next((p for p in (tg_path.with_suffix(".wav"), tg_path.with_suffix(".flac"))
                      if p.is_file()), None)
        if audio is None or len(words) < 2:
            continue
        requests.append(AlignRequest(tg_path.stem, tuple(w.word for w in words), str(audio),
                                     lang="en"))
        ref[tg_path.stem] = words
    return Dataset("mfa", requests, ref, real=True)


# ----------------------------------------------------------------------------- running


def aligner_options(args: argparse.Namespace) -> dict:
    """Options for every aligner (``reference`` reads ``--reference-dir``)."""
    options = {"source": args.reference_dir}
    if args.ctc_model:
        options["ctc_model"] = args.ctc_model
    return options


def serves(aligner: str, lang: str | None) -> bool:
    langs = ALIGNER_LANGS.get(aligner)
    return langs is None or (lang or "") in langs


def run_aligner(name: str, requests: Sequence[AlignRequest], options: dict) -> Run:
    """Align every request it serves; a PunctInputError is a failed utterance."""
    aligner = get_aligner(name, **options)
    run = Run()
    for req in requests:
        if not serves(name, req.lang):
            continue
        t0 = time.perf_counter()
        try:
            result = aligner.align(req)
        except PunctInputError as err:
            run.failures[req.utt_id] = err.message
            result = None
        run.compute_s += time.perf_counter() - t0
        if result is not None:
            run.hyp[req.utt_id] = result.words
            run.audio_s += result.duration
        elif req.utt_id not in run.failures:
            run.failures[req.utt_id] = "no timings"
    return run


def rows_for(dataset: Dataset, name: str, run: Run, threshold: float) -> list[dict]:
    """One row per language of the dataset plus an "all" row when it has several."""
    langs: dict[str, list[str]] = {}
    for req in dataset.requests:
        if serves(name, req.lang):
            langs.setdefault(req.lang or "unk", []).append(req.utt_id)
    groups = dict(langs)
    if len(langs) > 1:
        groups["all"] = [u for utts in langs.values() for u in utts]
    rows = []
    speed = round(run.audio_s / run.compute_s, 2) if run.compute_s else None
    for lang, utts in groups.items():
        report = evaluate(run.hyp, {u: dataset.ref[u] for u in utts}, threshold)
        err, pauses = report["boundary_error_ms"], report["pauses"]
        rows.append({
            "dataset": dataset.name, "lang": lang, "aligner": name,
            "real_speech": dataset.real,
            "utterances": len(utts), "aligned": report["utterances_aligned"],
            "failed": sum(1 for u in utts if u in run.failures),
            "median_ms": err["median"], "p90_ms": err["p90"], "mean_ms": err["mean"],
            "pause_precision": pauses["precision"], "pause_recall": pauses["recall"],
            "pause_f1": pauses["f1"], "pause_ref": pauses["tp"] + pauses["fn"],
            "audio_s_per_s": speed,
        })
    return rows


# ----------------------------------------------------------------------------- memory


def long_recording(requests: Sequence[AlignRequest], seconds: float, out: Path,
                   gap: float = 0.5) -> tuple[Path, list[str]]:
    """Concatenate utterances (``gap`` s of silence between) until >= ``seconds``."""
    parts, words, total, rate = [], [], 0.0, None
    while total < seconds:
        for req in requests:
            samples, r = req.load_audio()
            if rate is None:
                rate = r
            if r != rate:
                continue
            parts.extend([samples, np.zeros(round(gap * rate), dtype=np.float32)])
            words.extend(req.words)
            total += len(samples) / r + gap
            if total >= seconds:
                break
        if rate is None:
            raise MissingDataError("no utterances to build the long recording from", None)
    wav = out / "long.wav"
    soundfile = require("soundfile", "align", "writing wav files")  # optional extra: audio I/O
    soundfile.write(wav, np.concatenate(parts), rate, subtype="PCM_16")
    return wav, words


def probe_memory(args: argparse.Namespace, name: str, wav: Path, words_file: Path) -> dict:
    """Run one aligner on the long recording in a fresh process; its report."""
    cmd = [sys.executable, "-m", "punct.bin.compare_aligners", "--probe", name,
           "--probe-wav", str(wav), "--probe-words", str(words_file),
           "--reference-dir", args.reference_dir]
    if args.ctc_model:
        cmd += ["--ctc-model", args.ctc_model]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"aligner": name, "error": proc.stderr.strip().splitlines()[-1:] or ["failed"]}
    return json.loads(lines[-1])


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def probe(args: argparse.Namespace) -> int:
    """The child side of :func:`probe_memory`: align, print peak RSS as JSON."""
    words = tuple(Path(args.probe_words).read_text(encoding="utf-8").split())
    aligner = get_aligner(args.probe, **aligner_options(args))
    before = _rss_mb()
    req = AlignRequest("long", words, args.probe_wav, lang="en")
    t0 = time.perf_counter()
    result = aligner.align(req)
    seconds = time.perf_counter() - t0
    print(json.dumps({
        "aligner": args.probe, "audio_s": round(result.duration, 1) if result else None,
        "words": len(words), "aligned": result is not None,
        "seconds": round(seconds, 1), "rss_before_mb": round(before, 1),
        "peak_rss_mb": round(_rss_mb(), 1),
    }))
    return 0


# ----------------------------------------------------------------------------- choice


def choose(rows: Sequence[dict]) -> dict[str, dict]:
    """Best aligner per language: real-speech rows where a language has them, else all;
    no failures; highest pause F1, then lowest median boundary error."""
    out: dict[str, dict] = {}
    langs = sorted({r["lang"] for r in rows if r["lang"] not in ("all", "unk")})
    for lang in langs:
        cands = [r for r in rows if r["lang"] == lang]
        real = [r for r in cands if r["real_speech"]]
        pool = real or cands
        by_aligner: dict[str, list[dict]] = {}
        for r in pool:
            if r["aligner"] != "auto":  # auto follows a table, it is not a candidate
                by_aligner.setdefault(r["aligner"], []).append(r)
        scored = []
        for name, rs in by_aligner.items():
            if any(r["failed"] for r in rs) or any(r["pause_f1"] is None for r in rs):
                continue
            f1 = float(np.mean([r["pause_f1"] for r in rs]))
            med = float(np.mean([r["median_ms"] for r in rs]))
            scored.append((-round(f1, 3), med, name))
        if scored:
            f1, med, name = min(scored)
            out[lang] = {"aligner": name, "pause_f1": -f1, "median_ms": round(med, 1),
                         "basis": "real speech" if real else "mini (eSpeak NG speech)"}
    return out


# ----------------------------------------------------------------------------- output

COLUMNS = ("dataset", "lang", "aligner", "utterances", "aligned", "failed", "median_ms",
           "p90_ms", "pause_precision", "pause_recall", "pause_f1", "pause_ref",
           "audio_s_per_s")


def _cell(value: object) -> str:
    return "-" if value is None else str(value)


def markdown(rows: Sequence[dict], memory: Sequence[dict], choice: dict, command: str,
             threshold: float) -> str:
    lines = [f"Command: `{command}`", "",
             f"Boundary error over word starts and ends (ms); pauses >= "
             f"{threshold * 1000:.0f} ms; speed = audio seconds per wall-clock second.", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_cell(r[c]) for c in COLUMNS) + " |" for r in rows]
    if memory:
        lines += ["", "Long recording (one process per aligner):", "",
                  "| aligner | audio s | words | aligned | seconds | peak RSS MB | RSS before MB |",
                  "|---|---|---|---|---|---|---|"]
        for m in memory:
            if "error" in m:
                lines.append(f"| {m['aligner']} | failed: {' '.join(m['error'])} | | | | | |")
                continue
            lines.append(f"| {m['aligner']} | {m['audio_s']} | {m['words']} | {m['aligned']} | "
                         f"{m['seconds']} | {m['peak_rss_mb']} | {m['rss_before_mb']} |")
    lines += ["", "Choice per language (pause F1, then median error):", "",
              "| lang | aligner | pause F1 | median ms | basis |", "|---|---|---|---|---|"]
    lines += [f"| {lang} | {c['aligner']} | {c['pause_f1']} | {c['median_ms']} | {c['basis']} |"
              for lang, c in choice.items()]
    return "\n".join(lines) + "\n"


def write_outputs(out_dir: Path, rows: list[dict], memory: list[dict], choice: dict,
                  command: str, threshold: float) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=[*COLUMNS, "mean_ms", "real_speech"],
                            lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(out_dir / "aligners.csv", buf.getvalue())
    atomic_write_text(out_dir / "aligners.json", json.dumps(
        {"command": command, "pause_threshold": threshold, "rows": rows, "memory": memory,
         "choice": choice}, indent=2) + "\n")
    atomic_write_text(out_dir / "aligners.md", markdown(rows, memory, choice, command,
                                                        threshold))


def table_yaml(choice: dict, default: str = "dtw") -> str:
    """The auto-aligner table for ``choice`` (``default`` is every chain's fallback)."""
    lines = ["# Aligner per utt2lang code for `--aligner auto` (punct/align/auto.py).",
             "# Written by python -m punct.bin.compare_aligners --write-table; the figures",
             "# are in docs/ALIGNERS.md.", f"default: {default}", "languages:"]
    # a chosen aligner other than the default falls back to it (e.g. pocketsphinx on a
    # recording too long for its search)
    lines += [f"  {lang}: {c['aligner']}" if c["aligner"] == default
              else f"  {lang}: [{c['aligner']}, {default}]" for lang, c in sorted(choice.items())]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if args.probe:
            return probe(args)
        return compare(args, argv)
    except PunctInputError as err:
        return report_error("compare_aligners", err)


def compare(args: argparse.Namespace, argv: list[str] | None) -> int:
    t_start = time.time()
    names = list(dict.fromkeys(args.aligners + (["ctc"] if args.ctc_model else [])))
    datasets = [load_set(Path(args.data_root) / s, Path(args.reference_dir))
                for s in args.sets]
    if args.mfa_dir:
        datasets.append(load_mfa(Path(args.mfa_dir)))
    if not any(d.requests for d in datasets):
        raise MissingDataError("no utterances with reference timings (run stages 0-1, or "
                               "give --mfa-dir)", args.data_root)
    rows: list[dict] = []
    for dataset in datasets:
        for name in names:
            run = run_aligner(name, dataset.requests, aligner_options(args))
            rows.extend(rows_for(dataset, name, run, args.pause_threshold))
            for utt, why in run.failures.items():
                print(f"compare_aligners: {name} failed on {dataset.name}/{utt}: {why}",
                      file=sys.stderr)
    memory: list[dict] = []
    english = [r for d in datasets for r in d.requests if r.lang == "en" and not d.real]
    if args.long_seconds > 0 and english:
        with tempfile.TemporaryDirectory() as tmp:
            wav, words = long_recording(english, args.long_seconds, Path(tmp))
            words_file = Path(tmp) / "words.txt"
            words_file.write_text(" ".join(words) + "\n", encoding="utf-8")
            memory = [probe_memory(args, name, wav, words_file) for name in names]
    choice = choose(rows)
    command = "python -m punct.bin.compare_aligners " + " ".join(
        argv if argv is not None else sys.argv[1:])
    write_outputs(Path(args.out_dir), rows, memory, choice, command, args.pause_threshold)
    if args.write_table:
        atomic_write_text(args.write_table, table_yaml(choice))
    print(f"compare_aligners: {len(names)} aligners x {len(datasets)} datasets, choice "
          + ", ".join(f"{k}={v['aligner']}" for k, v in choice.items())
          + f" -> {Path(args.out_dir) / 'aligners.md'} ({time.time() - t_start:.1f} s)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
