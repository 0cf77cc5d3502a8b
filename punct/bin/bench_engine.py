"""Engine-only speed: words/s of the decoding engine with a stub encoder of ~zero cost.

  python -m punct.bin.bench_engine --stub-encoder --iwslt DIR/dev2012 [--iwslt ...]
      [--family autopunct] [--window 128] [--per-token 2] [--batch-size 32] [--reps 5]

The model is a stub (``--stub-encoder``, required: this tool never runs a real encoder):
its ``predict`` returns probabilities (and activations) of the right shape from a fixed
random buffer per batch shape, so what is timed is the engine alone: tokenisation,
windows, batches, aggregation and decisions (``predict_words`` + ``decide``). The
tokenizer is a WordPiece vocabulary built from the input's most frequent words
(``--vocab``; other words split into letters), the featurizer the family's own.
Rows, timed interleaved (best of ``--reps``, one thread unless ``--num-threads``; the
clock is this process's CPU time, steady on a shared machine):
- ``reference``: the engine before issue 20 (``punct.engine.reference_decode``) with the
  document rules searched one document at a time (``punct.engine.reference_constraints``);
- ``engine``: today's engine (``punct.engine.decode.predict_words`` + ``decide``).
The stub's random outputs break the document rules in nearly every document, so the
constrained search runs everywhere (a worst case; ``--no-constraints`` times the per-word
decisions alone, as before the rules existed).
Both rows must take the same decisions (``identical`` in the output). ``--profile``
prints where the engine's time goes (cProfile, top functions by own time).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import BertTokenizerFast

from punct.config import resolve_config
from punct.data.iwslt import blocks, parse_che_tsv, word_rows
from punct.data.sequences import table_to_seqs
from punct.data.windows import stride_for
from punct.engine.constraints import data_dir_edges
from punct.engine.decode import decide, predict_words
from punct.engine.reference_constraints import reference_constrain
from punct.engine.reference_decode import reference_predict_words, reference_rule_caps
from punct.errors import PunctInputError, report_error
from punct.labels import get_label_set
from punct.models.autopunct import AutopunctModel
from punct.models.base import Prediction, PunctModel, Registry
from punct.models.courtland import CourtlandModel
from punct.models.nagy import NagyModel
from punct.train.env import setup_compute
from punct.wordtable import read_word_table

FAMILIES = {"autopunct": "iwslt4", "nagy": "full13", "courtland": "iwslt4"}
AGGREGATION = {"autopunct": "mean", "nagy": "mean", "courtland": "sum"}  # as conf/model/
MODEL_CLASSES: dict[str, type[PunctModel]] = {
    "autopunct": AutopunctModel, "nagy": NagyModel, "courtland": CourtlandModel}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m punct.bin.bench_engine",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--iwslt", action="append", help="IWSLT 2012 Che TSV file (repeatable)")
    src.add_argument("--data-dir", help="a data dir with words.tsv")
    add_stub_arguments(parser)
    parser.add_argument("--reps", type=int, default=5, help="timed runs per engine")
    parser.add_argument("--num-threads", type=int, default=1, help="torch threads")
    parser.add_argument("--profile", action="store_true", help="cProfile of the engine")
    parser.add_argument("--json", help="also write the result here")
    return parser


def add_stub_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a run with the stub encoder (this tool's and ``bench_restore``'s)."""
    parser.add_argument("--stub-encoder", action="store_true", required=True,
                        help="replace the model by outputs of ~zero cost (required)")
    parser.add_argument("--doc-words", type=int, default=200,
                        help="utterance (input line) length for --iwslt (words)")
    parser.add_argument("--family", choices=sorted(FAMILIES), default="autopunct")
    parser.add_argument("--window", type=int, default=128, help="window (pieces)")
    parser.add_argument("--per-token", type=int, default=2, help="predictions per token")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--vocab", type=int, default=5000, help="whole words in the vocabulary")
    parser.add_argument("--no-constraints", action="store_true",
                        help="per-word decisions only (no document rules)")


def read_utterances(args: argparse.Namespace) -> dict[str, list[Any]]:
    """Word-table rows per utterance (IWSLT files cut into --doc-words blocks)."""
    if getattr(args, "data_dir", None):
        return read_word_table(Path(args.data_dir) / "words.tsv")
    utts: dict[str, list[Any]] = {}
    for path in args.iwslt:
        words = parse_che_tsv(path).words
        for k, block in enumerate(blocks(words, args.doc_words)):
            utt = f"{Path(path).name}-{k:05d}"
            utts[utt] = word_rows(utt, block)
    return utts


def make_featurizer(family: str, utts: dict[str, list[Any]], vocab: int, window: int,
                    tmp: Path) -> Any:
    """The family's featurizer over a WordPiece vocabulary of the input's words."""
    counts = Counter(r.word.lower() for rows in utts.values() for r in rows)
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    letters = sorted({ch for w in counts for ch in w})
    for item in [*(w for w, _ in counts.most_common(vocab)), *letters,
                 *("##" + ch for ch in letters)]:
        if item not in pieces:
            pieces.append(item)
    tok = BertTokenizerFast(vocab={p: i for i, p in enumerate(pieces)}, do_lower_case=True)
    tok.model_max_length = max(window, 512)
    tok.save_pretrained(str(tmp))
    config = resolve_config({"family": family, "label_set": FAMILIES[family],
                             "featurizer": {"encoder": str(tmp)},
                             "train": {"window": window, "stride": window}})
    return Registry.get(family).make_featurizer(config)


def stub_model(family: str, n_labels: int, exclusive: bool) -> Any:
    """A ``PunctModel`` whose ``predict`` hands out cached random outputs per batch shape
    (with casing for autopunct), reading the batch inputs the family's model reads."""
    with_cap = family == "autopunct"

    class StubModel(PunctModel):
        predict_inputs = MODEL_CLASSES[family].predict_inputs

        def __init__(self) -> None:
            super().__init__()
            self.cache: dict[tuple[int, int], Prediction] = {}

        def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
            raise NotImplementedError("a stub encoder does not train")

        def predict(self, batch: dict[str, torch.Tensor]) -> Prediction:
            shape = tuple(batch["input_ids"].shape)
            if shape not in self.cache:
                gen = torch.Generator().manual_seed(hash(shape) % 2**31)
                logits = torch.randn(*shape, n_labels, generator=gen) * 2 - 1
                punct = (torch.softmax(torch.nn.functional.pad(logits, (1, 0)), -1)[..., 1:]
                         if exclusive else torch.sigmoid(logits))
                cap_logits = torch.randn(*shape, 3, generator=gen)
                self.cache[shape] = Prediction(
                    punct, torch.softmax(cap_logits, -1) if with_cap else None,
                    {"punct_logits": logits, **({"cap_logits": cap_logits} if with_cap else {})})
            return self.cache[shape]

    return StubModel()


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Time both engines; check their decisions agree."""
    setup_compute(args.num_threads)
    ls = get_label_set(FAMILIES[args.family])
    utts = read_utterances(args)
    seqs = table_to_seqs(utts, ls)
    n_words = sum(len(s) for s in seqs)
    stride = stride_for(args.window, args.per_token)
    aggregate = AGGREGATION[args.family]
    with tempfile.TemporaryDirectory() as tmp:
        feat = make_featurizer(args.family, utts, args.vocab, args.window, Path(tmp))
    model = stub_model(args.family, len(ls.labels), ls.exclusive)
    call = (model, feat, seqs, args.window, stride, args.batch_size, False, aggregate)
    results: dict[str, Any] = {}

    rules = not args.no_constraints

    def engine() -> Any:
        pred = predict_words(*call, exclusive=ls.exclusive)
        return pred, decide(pred, seqs, ls.labels, 0.5, ls.exclusive, constraints=rules)

    def reference() -> Any:
        pred = reference_predict_words(*call, exclusive=ls.exclusive)
        marks = decide(pred, seqs, ls.labels, 0.5, ls.exclusive, constraints=False)[0]
        caps = None if pred.cap is None else pred.cap.argmax(axis=1)
        if rules:
            marks, caps = reference_constrain(marks, caps, pred.punct, pred.cap, seqs,
                                              ls.labels, np.asarray(0.5), ls.exclusive,
                                              None, data_dir_edges(seqs))
        if caps is None:
            caps = reference_rule_caps(marks, seqs, ls.labels)
        return pred, (marks, caps)

    methods = {"reference": reference, "engine": engine}
    for name, fn in methods.items():  # warm-up: tokenizer caches, stub outputs
        results[name] = fn()
    best = {name: float("inf") for name in methods}
    for _ in range(args.reps):
        for name, fn in methods.items():
            start = time.process_time()
            fn()
            best[name] = min(best[name], time.process_time() - start)
    (p_new, (m_new, c_new)), (p_old, (m_old, c_old)) = results["engine"], results["reference"]
    identical = bool(np.array_equal(m_new, m_old) and np.array_equal(c_new, c_old)
                     and np.allclose(p_new.punct, p_old.punct, rtol=0, atol=1e-12))
    report = {"family": args.family, "label_set": ls.name, "words": n_words,
              "utterances": len(seqs), "window": args.window, "stride": stride,
              "batch_size": args.batch_size, "windows": p_new.n_windows,
              "constraints": rules,
              "threads": torch.get_num_threads(), "reps": args.reps, "identical": identical,
              "seconds": {k: round(v, 5) for k, v in best.items()},
              "words_per_s": {k: round(n_words / v) for k, v in best.items()},
              "us_per_word": {k: round(1e6 * v / n_words, 3) for k, v in best.items()},
              "speedup": round(best["reference"] / best["engine"], 2)}
    if args.profile:
        prof = cProfile.Profile()
        prof.runcall(engine)
        pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(15)
    return report


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.reps < 1:
        print("bench_engine: --reps must be >= 1", file=sys.stderr)
        return 2
    try:
        report = run(args)
    except PunctInputError as err:  # a missing or malformed input file, named
        return report_error("bench_engine", err)
    emit(report, args.json)
    return 0


def emit(report: dict[str, Any], path: str | None) -> None:
    """Print ``report`` as JSON, and write it to ``path`` when given."""
    text = json.dumps(report, indent=2)
    print(text)
    if path:
        Path(path).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
