"""Final-mark accuracy at document ends: is the last word's sentence-final mark right?

  python -m punct.bin.doc_end_accuracy --ref data/test/words.tsv \\
      --hyp exp/autopunct_dg/decode_test/words.tsv [--label-set full13] [--json out.json]

Prints ``<system>: final mark correct K/N documents (...)`` with the other counts of
``punct.score.doc_end`` (end detected, the most probable sentence-final mark right when
the decoder's ``probs.npz`` lies beside the hypothesis, the last word's whole mark set
right) and one line per document. Several ``--hyp`` give one summary line each.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from punct.errors import PunctInputError, report_error
from punct.labels import LABEL_SETS
from punct.score.doc_end import doc_end_accuracy
from punct.wordtable import read_word_table


def system_name(hyp: Path) -> str:
    """``exp/X/decode_test/words.tsv`` -> ``X``."""
    parent = hyp.resolve().parent
    return parent.parent.name if parent.name.startswith("decode") else str(hyp)


def last_word_probs(path: Path, hyp: dict[str, list]) -> dict[str, dict[str, float]]:
    """utt_id -> mark -> probability of its last word, from a decoder's ``probs.npz``."""
    try:
        with np.load(path) as z:
            punct, labels = z["punct"], [str(x) for x in z["labels"]]
            utts, offsets = [str(u) for u in z["utt_ids"]], z["offsets"]
    except (OSError, KeyError, ValueError) as err:
        raise PunctInputError(f"not a decoder probs.npz: {err}", path) from None
    out = {}
    for utt, off in zip(utts, offsets, strict=True):
        if hyp.get(utt):
            out[utt] = dict(zip(labels, map(float, punct[int(off) + len(hyp[utt]) - 1]),
                                strict=True))
    missing = [u for u in hyp if u not in out]
    if missing:
        raise PunctInputError(f"no probabilities for utterance {missing[0]}", path)
    return out


def label_set_for(choice: str, hyp_path: Path) -> str:
    """``choice``, or for ``auto`` the label set of the decode.json beside the hypothesis."""
    if choice != "auto":
        return choice
    info = hyp_path.parent / "decode.json"
    if info.is_file():
        try:
            name = json.loads(info.read_text(encoding="utf-8")).get("label_set")
        except (ValueError, AttributeError):
            raise PunctInputError("not a decoder's JSON", info) from None
        if name in LABEL_SETS:
            return str(name)
    return "full13"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m punct.bin.doc_end_accuracy",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ref", required=True, type=Path, help="reference words.tsv")
    p.add_argument("--hyp", required=True, type=Path, action="append",
                   help="hypothesis words.tsv (repeatable)")
    p.add_argument("--label-set", default="auto", choices=["auto", *sorted(LABEL_SETS)],
                   help="map both sides through this label set (auto: the system's, from "
                        "decode.json beside the hypothesis, else full13)")
    p.add_argument("--probs", choices=("auto", "none"), default="auto",
                   help="auto: use probs.npz beside each hypothesis when it is there")
    p.add_argument("--json", type=Path, default=None,
                   help="write the counts per system here (JSON)")
    p.add_argument("--quiet", action="store_true", help="summary lines only")
    args = p.parse_args(argv)
    results = {}
    try:
        ref = read_word_table(args.ref)
        for hyp_path in args.hyp:
            hyp = read_word_table(hyp_path)
            probs_path = hyp_path.parent / "probs.npz"
            probs = (last_word_probs(probs_path, hyp)
                     if args.probs == "auto" and probs_path.is_file() else None)
            res = doc_end_accuracy(ref, hyp, label_set_for(args.label_set, hyp_path),
                                   args.ref, hyp_path, probs)
            name = system_name(hyp_path)
            results[name] = {k: v for k, v in res.items() if k != "per_document"}
            n = res["documents"]
            top = (f", most probable final mark right {res['top_final_mark_correct']}/{n}"
                   if probs is not None else "")
            print(f"{name}: final mark correct {res['final_mark_correct']}/{n} documents "
                  f"(end detected {res['end_detected']}/{n}{top}, last word's marks "
                  f"correct {res['last_word_correct']}/{n})")
            if not args.quiet:
                for d in res["per_document"]:
                    flag = "ok " if d["final_mark_correct"] else "BAD"
                    extra = f" (most probable: {d['hyp_top_final']})" if probs else ""
                    print(f"  {flag} {d['utt_id']} {d['word']!r}: ref {d['ref_marks']}, "
                          f"hyp {d['hyp_marks']}{extra}")
    except PunctInputError as err:
        return report_error("doc_end_accuracy", err)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
