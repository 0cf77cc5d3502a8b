"""Decode data dirs with a trained system: ``python -m punct.bin.decode --exp-dir exp/X
--data-dir data/test --out-dir exp/X/decode_test [--num-threads N]``.

``--data-dir``/``--out-dir`` may be repeated (paired in order): the model is loaded once
and decodes each set in turn, as stage 6 does for every set of a system. Each out dir gets
``words.tsv`` (hypothesis word table), ``text`` (utt_id + restored text),
``probs.npz`` (per-word mark probabilities, and cap probabilities when modelled) and
``decode.json`` (words/s, device, batch size, window, stride, ``cap_modelled``,
``constraints``, the ``violations`` of the document rules counted on the output, and the
featurizer's figures of the set: ``pp``, the PP slot statistics of a prosodic_pp system).
``--score`` also scores each set in this process (``scores.json``, as ``punct.bin.score``
with the set's ``ref_words.tsv`` or ``words.tsv``, ``utt2lang`` and ``score_label_set``).
Each finished set gets ``.done`` last: the checkpoint's ``sha256sum`` line, which the stage
driver compares with ``<checkpoint>.pt.sha256`` to skip a set already decoded (and scored)
with the same weights.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import torch

from punct.atomic import atomic_write_text
from punct.bin.score import decoded_set_args, write_scores
from punct.data.nonspeech import add_nonspeech_option
from punct.data.sequences import load_data_dir
from punct.engine.decode import (
    DecodeSettings,
    Experiment,
    decide,
    decode_info,
    decode_settings,
    hypothesis_rows,
    load_experiment,
    pick_device,
    predict_words,
)
from punct.engine.violations import count_violations
from punct.errors import PunctInputError, report_error
from punct.export.backends import backend_model, choose_backend
from punct.export.system import System
from punct.labels import get_label_set
from punct.models.checkpoint import file_sha256, sidecar
from punct.train.env import setup_compute
from punct.wordtable import render_rows, write_word_table


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m punct.bin.decode", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--exp-dir", required=True, help="trained experiment directory")
    parser.add_argument("--data-dir", required=True, action="append",
                        help="data dir with words.tsv (repeat for several sets)")
    parser.add_argument("--out-dir", required=True, action="append",
                        help="where the hypothesis is written (one per --data-dir)")
    parser.add_argument("--checkpoint", default="best", choices=("best", "last"))
    parser.add_argument("--num-threads", type=int, default=None,
                        help="torch threads (default: $OMP_NUM_THREADS, else torch's default)")
    parser.add_argument("--device", default="auto", help="cpu, cuda or auto")
    parser.add_argument("--window", type=int, default=None, help="default: decode.window")
    parser.add_argument("--stride", type=int, default=None, help="default: decode.stride")
    parser.add_argument("--per-token", type=int, default=None, metavar="N",
                        help="N predictions per token: stride = window // N (instead of --stride)")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="default: decode.batch_size (on CUDA at least "
                             "decode.gpu_batch_tokens // window)")
    parser.add_argument("--aggregate", choices=("mean", "sum"), default=None,
                        help="default: decode.aggregate")
    parser.add_argument("--bf16", choices=("auto", "on", "off"), default=None,
                        help="bf16 autocast; auto = where the CPU/GPU supports it "
                             "(default: decode.bf16)")
    parser.add_argument("--threshold", type=float, default=None,
                        help="decision threshold per mark (default: decode.threshold)")
    parser.add_argument("--no-constraints", dest="constraints", action="store_false",
                        default=None, help="decide word by word, without the document rules "
                        "(default: decode.constraints)")
    parser.add_argument("--backend", choices=("torch", "torch-int8", "auto"), default="torch",
                        help="torch-int8: dynamic int8 Linear layers (CPU); auto: bf16 where "
                        "native, else int8 where the exp dir's backends.json allows it")
    parser.add_argument("--score", action="store_true",
                        help="score each set too (scores.json in its out dir)")
    add_nonspeech_option(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


DONE = ".done"


def checkpoint_stamp(path: Path) -> str:
    """The checkpoint's ``sha256sum`` line: its sidecar's text, else computed."""
    check = sidecar(path)
    if check.is_file():
        return check.read_text(encoding="utf-8")
    return f"{file_sha256(path)}  {path.name}\n"


def run(args: argparse.Namespace) -> list[dict]:
    """Decode every ``--data-dir`` into its ``--out-dir``; return their decode records."""
    if len(args.data_dir) != len(args.out_dir):
        raise PunctInputError(f"{len(args.data_dir)} --data-dir but {len(args.out_dir)} "
                              "--out-dir: give one out dir per data dir")
    device = pick_device(args.device)
    ckpt = Path(args.exp_dir) / f"{args.checkpoint}.pt"
    stamp = checkpoint_stamp(ckpt) if ckpt.is_file() else ""  # read before the weights
    exp = load_experiment(args.exp_dir, args.checkpoint, device)
    cfg = exp.config
    st = decode_settings(cfg, device, window=args.window, stride=args.stride,
                         per_token=args.per_token, batch_size=args.batch_size,
                         aggregate=args.aggregate, bf16=args.bf16, threshold=args.threshold,
                         constraints=args.constraints)
    label_set = get_label_set(cfg.label_set)
    model, backend = exp.model, args.backend
    if backend != "torch":
        system = System(cfg, exp.featurizer, exp.model, label_set, None, Path(args.exp_dir),
                        exported=False)
        if backend == "auto":
            backend = choose_backend(system, device, args.bf16 or cfg.decode.bf16,
                args.bf16 not in (None, "auto"), args.checkpoint).backend
        if backend != "torch":
            model, device = backend_model(system, backend), torch.device("cpu")
            st = dataclasses.replace(st, bf16=False)
    records = []
    for data_dir, out_dir in zip(args.data_dir, args.out_dir, strict=True):
        out = Path(out_dir)
        (out / DONE).unlink(missing_ok=True)
        info = decode_set(exp, model, st, device, Path(data_dir), out,
                          progress=not args.quiet and sys.stderr.isatty())
        info.update({"exp_dir": str(args.exp_dir), "checkpoint": args.checkpoint,
                     "backend": backend})
        atomic_write_text(out / "decode.json", json.dumps(info, indent=2) + "\n")
        if args.score:
            info["score_line"] = write_scores(decoded_set_args(
                Path(data_dir), out, Path(args.exp_dir).name, args.nonspeech))
        atomic_write_text(out / DONE, stamp)
        records.append(info)
    return records


def decode_set(exp: Experiment, model: torch.nn.Module, st: DecodeSettings,
               device: torch.device, data_dir: Path, out_dir: Path,
               progress: bool) -> dict:
    """Decode one data dir into ``out_dir``; return its decode record (without the
    experiment's fields, which the caller adds)."""
    cfg = exp.config
    label_set = get_label_set(cfg.label_set)
    utts, seqs = load_data_dir(data_dir, label_set, cfg.streams)
    pred = predict_words(model, exp.featurizer, seqs, st.window, st.stride, st.batch_size,
                         st.bf16, st.aggregate, device, progress=progress,
                         exclusive=st.exclusive)
    # utterances cut out of a stream do not end a document: no final mark required there
    mid_stream = not all(s.ends_document for s in seqs)
    marks, caps = decide(pred, seqs, label_set.labels, st.threshold, st.exclusive,
                         st.combinations, st.constraints)
    hyp = hypothesis_rows(utts, seqs, marks, caps, label_set.labels)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_word_table(out_dir / "words.tsv", hyp)
    atomic_write_text(out_dir / "text",
                      "".join(f"{utt_id} {render_rows(rows)}\n" for utt_id, rows in hyp.items()))
    arrays = {"punct": pred.punct.astype(np.float32), "labels": np.array(label_set.labels),
              "utt_ids": np.array([s.utt_id for s in seqs]),
              "offsets": np.array([s.offset for s in seqs], dtype=np.int64)}
    if pred.cap is not None:
        arrays["cap"] = pred.cap.astype(np.float32)
    np.savez_compressed(out_dir / "probs.npz", **arrays)
    n_words = sum(len(s) for s in seqs)
    info = decode_info(pred, n_words, len(seqs), device, st.batch_size, st.window, st.stride,
                       st.bf16, st.aggregate, st.threshold, st.exclusive)
    info.update({"family": cfg.family, "label_set": cfg.label_set,
                 "data_dir": str(data_dir), "constraints": st.constraints,
                 "violations": count_violations(hyp.values(), ends=not mid_stream),
                 "mid_stream": mid_stream, **exp.featurizer.decode_statistics(seqs)})
    return info


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        setup_compute(args.num_threads)
        records = run(args)
    except PunctInputError as err:
        return report_error("decode", err)
    for info, out_dir in zip(records, args.out_dir, strict=True):
        print(f"decoded {info['words']} words ({info['utterances']} utts) with "
              f"{info['family']} in {info['seconds']:.2f}s ({info['words_per_s']} words/s, "
              f"{info['device']}, batch {info['batch_size']}) -> {out_dir}/words.tsv")
        if "score_line" in info:
            print(info["score_line"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
