"""Acoustic feature streams of a data dir (Kaldi ark/scp via kaldiio) for UniPunc.

Log-mel filterbanks (80 bands, 10 ms; :mod:`punct.features.fbank`)::

    python -m punct.bin.make_fbank --data-dir data/test

writes ``data/test/fbank.ark`` and ``data/test/fbank.scp``. Parallel jobs (through the
launcher) write ``fbank.J.ark``/``fbank.J.scp`` for the utterances of job J (its split,
``<data-dir>/split<N>/<J>/ids``, see :mod:`punct.jobs_split`), and a merge step lists them all in
``fbank.scp``::

    python -m punct.bin.make_fbank --data-dir data/test --job J --num-jobs N
    python -m punct.bin.make_fbank --data-dir data/test --merge --num-jobs N

A job whose scp exists is done and skipped (the scp is renamed into place last), so an
interrupted run resumes. ``--data-dir`` may be repeated: one process (one model load)
then does the same for each data dir in turn. With ``--wav2vec2 MODEL`` (Hugging Face id or local
directory) the stream is the last hidden layer of that frozen wav2vec 2.0 model on the
audio resampled to 16 kHz (20 ms frames), named ``w2v`` unless ``--stream`` says
otherwise. The scp files hold absolute ark paths.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from punct.atomic import atomic_path
from punct.data.audio import AlignRequest, load_requests
from punct.errors import PunctInputError, report_error
from punct.extras import require
from punct.features.fbank import FbankConfig, log_mel_fbank
from punct.jobs_split import (
    add_job_options,
    check_job_options,
    finished_parts,
    job_items,
    merge_kv_parts,
)
from punct.models.encoders import load_pretrained

W2V_RATE = 16_000


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m punct.bin.make_fbank", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", required=True, action="append",
                   help="Kaldi data dir with wav.scp (repeat for several)")
    p.add_argument("--stream", default=None,
                   help="stream name: <data-dir>/<stream>.scp (default fbank, or w2v)")
    p.add_argument("--n-mels", type=int, default=80, help="mel bands (default: %(default)s)")
    p.add_argument("--wav2vec2", default=None, metavar="MODEL",
                   help="wav2vec 2.0 features from this HF id or local directory instead")
    add_job_options(p)
    return p


def check_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    check_job_options(p, args)
    if args.n_mels < 1:
        p.error("--n-mels must be >= 1")
    if args.stream is None:
        args.stream = "w2v" if args.wav2vec2 else "fbank"


Extractor = Callable[[np.ndarray, int], np.ndarray]


def fbank_extractor(n_mels: int) -> Extractor:
    """Samples, rate -> log-mel frames."""
    config = FbankConfig(n_mels=n_mels)
    return lambda samples, rate: log_mel_fbank(samples, rate, config)


def wav2vec2_extractor(name: str) -> Extractor:
    """Samples, rate -> last hidden states of a frozen wav2vec 2.0 model (20 ms frames)."""
    signal = require("scipy.signal", "align", "resampling audio")  # optional extra: scipy

    model = load_pretrained("Wav2Vec2Model", name, "wav2vec 2.0 weights")
    model.eval()

    def extract(samples: np.ndarray, rate: int) -> np.ndarray:
        x = np.asarray(samples, dtype=np.float64)
        if rate != W2V_RATE:
            g = np.gcd(rate, W2V_RATE)
            x = signal.resample_poly(x, W2V_RATE // g, rate // g)
        x = (x - x.mean()) / np.sqrt(x.var() + 1e-7)  # the feature extractor's normalisation
        if len(x) < 400:  # shorter than the convolutional receptive field
            x = np.pad(x, (0, 400 - len(x)))
        with torch.inference_mode():
            out = model(torch.from_numpy(x.astype(np.float32))[None]).last_hidden_state
        return out[0].float().numpy()

    return extract


def part_names(data_dir: Path, stream: str, job: int | None) -> tuple[Path, Path]:
    """(ark, scp) of one job, or of the whole data dir when ``job`` is None."""
    stem = stream if job is None else f"{stream}.{job}"
    return data_dir / f"{stem}.ark", data_dir / f"{stem}.scp"


def _utt_id(request: AlignRequest) -> str:
    return request.utt_id


def build_extractor(args: argparse.Namespace) -> Extractor:
    """The extractor the command line asks for (wav2vec 2.0 or log-mel filterbanks)."""
    return wav2vec2_extractor(args.wav2vec2) if args.wav2vec2 else fbank_extractor(args.n_mels)


def run_job(args: argparse.Namespace, data_dir: Path, job: int | None,
            extractor: Callable[[], Extractor] | None = None) -> int:
    """Compute the features of one job of ``data_dir`` (all utterances when ``job`` is
    None); returns the number of utterances written, -1 when the job was already done.
    ``extractor`` gives the extractor (called only when there is work to do)."""
    data_dir = data_dir.resolve()
    ark, scp = part_names(data_dir, args.stream, job)
    if scp.is_file():
        return -1
    requests = load_requests(data_dir)
    if job is not None:
        requests = job_items(data_dir, requests, _utt_id, job, args.num_jobs)
    extract = extractor() if extractor is not None else build_extractor(args)
    desc = f"{args.stream} {data_dir.name}" + (f" job {job}" if job else "")
    kaldiio = require("kaldiio", "train", "writing features")  # optional extra: Kaldi ark/scp
    with atomic_path(scp) as tmp_scp, kaldiio.WriteHelper(f"ark,scp:{ark},{tmp_scp}") as writer:
        for req in tqdm(requests, desc=desc, unit="utt", disable=not sys.stderr.isatty()):
            samples, rate = req.load_audio()
            writer(req.utt_id, np.ascontiguousarray(extract(samples, rate), dtype=np.float32))
    return len(requests)


def merge(args: argparse.Namespace, data_dir: Path) -> int:
    """List the utterances of all job scps in ``<stream>.scp`` (sorted); returns the count."""
    data_dir = data_dir.resolve()
    parts = finished_parts(lambda job: part_names(data_dir, args.stream, job)[1], args.num_jobs)
    return merge_kv_parts(parts, part_names(data_dir, args.stream, None)[1])


def main(argv: Sequence[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    check_args(p, args)
    extractor = functools.cache(lambda: build_extractor(args))  # one model for every dir
    for name in args.data_dir:
        data_dir = Path(name)
        try:
            if args.merge:
                n = merge(args, data_dir)
                print(f"make_fbank: {n} utterances in {data_dir / args.stream}.scp")
                continue
            n = run_job(args, data_dir, args.job, extractor)
        except (PunctInputError, OSError) as err:
            return report_error("make_fbank", err)
        _, scp = part_names(data_dir, args.stream, args.job)
        if n < 0:
            print(f"make_fbank: {scp} exists, already done")
        else:
            print(f"make_fbank: {n} utterances -> {scp}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
