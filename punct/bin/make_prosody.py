"""Prosodic features (F0, voicing, intensity, deltas; z-normalised per utterance).

    python -m punct.bin.make_prosody --data-dir data/test [--data-dir data/dev ...]
        [--job J --num-jobs N]

Without ``--job``: every utterance with audio into ``<data-dir>/prosody.ark`` and
``<data-dir>/prosody.scp`` (kaldiio). With ``--job J``: the utterances of job J (its
split, ``<data-dir>/split<N>/<J>/ids``, see :mod:`punct.jobs_split`) into
``<data-dir>/prosody_split/prosody.J.{ark,scp}``; then
``--merge --num-jobs N`` concatenates the parts' scp into ``<data-dir>/prosody.scp``.
Resumable: a part whose scp is complete is not recomputed. The column names are written
to ``<data-dir>/prosody.names``. Missing or empty audio is an error naming the
utterance and the wav.scp line. ``--data-dir`` may be repeated: one process then does the
same for each data dir in turn (the recipe's stage 3 runs each job over every set).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from punct.atomic import atomic_path
from punct.data.audio import AlignRequest, load_requests
from punct.errors import MissingDataError, PunctInputError, report_error
from punct.extras import require
from punct.features.prosody import ProsodyConfig, feature_names, prosody_features
from punct.jobs_split import (
    add_job_options,
    check_job_options,
    finished_parts,
    job_items,
    merge_kv_parts,
)

STREAM = "prosody"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m punct.bin.make_prosody", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", required=True, action="append",
                   help="Kaldi data dir with wav.scp (repeat for several)")
    add_job_options(p, merge_help="merge the job parts")
    p.add_argument("--pitch-floor", type=float, default=ProsodyConfig.pitch_floor)
    p.add_argument("--pitch-ceiling", type=float, default=ProsodyConfig.pitch_ceiling)
    args = p.parse_args(argv)
    check_job_options(p, args)
    return args


def _scp_keys(path: Path) -> list[str]:
    if not path.is_file():
        return []
    return [line.split(maxsplit=1)[0] for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def _utt_id(request: AlignRequest) -> str:
    return request.utt_id


def write_features(data_dir: Path, ark: Path, scp: Path, job: int, num_jobs: int,
                   config: ProsodyConfig) -> int:
    """Compute the features of one job's utterances into ``ark``/``scp`` (atomic scp)."""
    requests = job_items(data_dir, load_requests(data_dir), _utt_id, job, num_jobs)
    if scp.is_file() and _scp_keys(scp) == [r.utt_id for r in requests]:
        return 0  # done already (a job without utterances still writes its empty part)
    ark.parent.mkdir(parents=True, exist_ok=True)
    kaldiio = require("kaldiio", "train", "writing features")  # optional extra: Kaldi ark/scp
    with (atomic_path(scp) as tmp_scp,
          kaldiio.WriteHelper(f"ark,scp:{ark.resolve()},{tmp_scp.resolve()}") as writer):
        for req in requests:
            samples, rate = req.load_audio()
            if len(samples) == 0:
                raise MissingDataError(f"utterance {req.utt_id}: empty audio {req.wav!r}",
                                       req.wav_scp, req.wav_line)
            feats = prosody_features(samples, rate, config)
            if not np.isfinite(feats).all():
                raise PunctInputError(f"utterance {req.utt_id}: non-finite prosody features "
                                      f"from {req.wav!r}", req.wav_scp, req.wav_line)
            writer(req.utt_id, feats)
    return len(requests)


def merge(data_dir: Path, num_jobs: int) -> int:
    """Concatenate the parts' scp files into ``<data-dir>/prosody.scp``."""
    parts = finished_parts(lambda job: data_dir / f"{STREAM}_split" / f"{STREAM}.{job}.scp",
                           num_jobs)
    return merge_kv_parts(parts, data_dir / f"{STREAM}.scp")


def run_dir(data_dir: Path, args: argparse.Namespace, config: ProsodyConfig) -> str:
    """Do what the command line asks for one data dir; returns what was done."""
    if not data_dir.is_dir():
        raise MissingDataError("data directory not found", data_dir)
    (data_dir / f"{STREAM}.names").write_text(" ".join(feature_names(config)) + "\n",
                                              encoding="utf-8")
    if args.merge:
        return f"merged {merge(data_dir, args.num_jobs)} utterances"
    if args.job is not None:
        split = data_dir / f"{STREAM}_split"
        n = write_features(data_dir, split / f"{STREAM}.{args.job}.ark",
                           split / f"{STREAM}.{args.job}.scp", args.job, args.num_jobs, config)
        return f"job {args.job}/{args.num_jobs}: {n} utterances computed"
    n = write_features(data_dir, data_dir / f"{STREAM}.ark", data_dir / f"{STREAM}.scp",
                       1, 1, config)
    return f"{n} utterances computed"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    config = ProsodyConfig(pitch_floor=args.pitch_floor, pitch_ceiling=args.pitch_ceiling)
    for name in args.data_dir:
        data_dir = Path(name)
        t0 = time.perf_counter()
        try:
            what = run_dir(data_dir, args, config)
        except PunctInputError as err:
            return report_error("make_prosody", err)
        print(f"make_prosody {data_dir}: {what} in {time.perf_counter() - t0:.1f}s",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
