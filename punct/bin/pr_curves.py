"""Precision-recall operating curves (Moró & Szaszák 2017, Fig. 1).

    python -m punct.bin.pr_curves --data-dir data/test --set test \\
        --system exp/prosodic_pp_dense --system exp/prosodic_pp_sparse \\
        --out results/moro_fig1_pr_test.png

For every system, the per-word mark probabilities of ``<exp>/decode_<set>/probs.npz``
(written by ``punct.bin.decode``) are swept over thresholds; precision and recall of each
mark over word slots (reference from ``<data-dir>/words.tsv`` through the system's label
set) give one curve per mark and system; the points also go to ``<out>.json``. (The PP
slot statistics of the Table 2 layout come from the decoder: ``pp`` in ``decode.json``.)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from punct.config import load_config
from punct.errors import MissingDataError, PunctInputError, report_error
from punct.labels import get_label_set
from punct.score.figure import new_figure, save_png
from punct.wordtable import read_word_table

THRESHOLDS = np.round(np.linspace(0.0, 1.0, 101), 2)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m punct.bin.pr_curves", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", required=True, help="reference data dir (words.tsv)")
    p.add_argument("--set", required=True, help="test set name (decode_<set> in each exp)")
    p.add_argument("--system", action="append", required=True,
                   help="experiment dir (repeatable)")
    p.add_argument("--out", required=True, help="PNG to write (points in <out>.json)")
    return p.parse_args(argv)


def pr_points(probs: np.ndarray, ref: np.ndarray, thresholds: np.ndarray = THRESHOLDS
              ) -> list[dict[str, float]]:
    """Precision/recall of one mark at each threshold (``probs >= t`` is a prediction).

    Points where nothing is predicted are left out (precision undefined)."""
    ref = np.asarray(ref, dtype=bool)
    out = []
    for t in thresholds:
        hyp = probs >= t
        tp = int((hyp & ref).sum())
        predicted = int(hyp.sum())
        if predicted == 0:
            continue
        out.append({"threshold": float(t), "precision": tp / predicted,
                    "recall": tp / ref.sum() if ref.sum() else 0.0})
    return out


def reference_marks(data_dir: Path, utt_ids: np.ndarray, offsets: np.ndarray,
                    labels: list[str], label_set: str, n_words: int) -> np.ndarray:
    """Reference multi-hot marks (N, P) in the decoder's global word order."""
    table_path = data_dir / "words.tsv"
    if not table_path.is_file():
        raise MissingDataError("no reference word table", table_path)
    table = read_word_table(table_path)
    lset = get_label_set(label_set)
    ref = np.zeros((n_words, len(labels)), dtype=bool)
    for utt, off in zip(utt_ids, offsets, strict=True):
        if str(utt) not in table:
            raise PunctInputError(f"utterance {utt} of the decode is not in the reference",
                                  table_path)
        for i, row in enumerate(table[str(utt)]):
            for lab in lset.map(row.punct):
                ref[int(off) + i, labels.index(lab)] = True
    return ref


def system_curves(exp_dir: Path, data_dir: Path, set_name: str) -> dict[str, Any]:
    """Curves of one system from its probs.npz."""
    npz = exp_dir / f"decode_{set_name}" / "probs.npz"
    if not npz.is_file():
        raise MissingDataError(f"no decoder probabilities for {exp_dir.name} on {set_name} "
                               "(run punct.bin.decode first)", npz)
    probs = np.load(npz)
    labels = [str(x) for x in probs["labels"]]
    config = load_config(exp_dir / "config.yaml")
    ref = reference_marks(data_dir, probs["utt_ids"], probs["offsets"], labels,
                          config.label_set, probs["punct"].shape[0])
    return {"system": exp_dir.name, "family": config.family,
            "curves": {lab: pr_points(probs["punct"][:, j], ref[:, j])
                       for j, lab in enumerate(labels)}}


def plot(systems: list[dict[str, Any]], out: Path, title: str) -> None:
    labels = sorted({lab for s in systems for lab in s["curves"]},
                    key=lambda lab: list(systems[0]["curves"]).index(lab)
                    if lab in systems[0]["curves"] else 99)
    fig = new_figure((4.5 * len(labels), 4))
    axes = np.atleast_1d(fig.subplots(1, len(labels), sharey=True))
    for ax, lab in zip(axes, labels, strict=True):
        for s in systems:
            pts = s["curves"].get(lab, [])
            ax.plot([p["recall"] for p in pts], [p["precision"] for p in pts], marker=".",
                    markersize=3, label=s["system"])
        ax.set_title(lab.lower())
        ax.set_xlabel("recall")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("precision")
    axes[0].legend(fontsize=7, loc="lower left")
    fig.suptitle(title)
    fig.tight_layout()
    save_png(fig, out)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    data_dir, out = Path(args.data_dir), Path(args.out)
    try:
        systems = [system_curves(Path(e), data_dir, args.set) for e in args.system]
    except PunctInputError as err:
        return report_error("pr_curves", err)
    plot(systems, out, f"Precision-recall operating curves ({args.set})")
    out.with_name(out.name + ".json").write_text(
        json.dumps({"set": args.set, "systems": systems}, indent=1) + "\n", encoding="utf-8")
    print(f"pr_curves: {len(systems)} systems -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
