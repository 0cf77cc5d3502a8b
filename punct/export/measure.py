"""Backends side by side on one data dir: words/s and micro-F1 per backend, and the check
that records which backends keep F1 (``backends.json``, see ``punct.export.backends``).

Every backend decodes the same ``words.tsv`` with the same engine, windows and decision
rule on the CPU; only ``PunctModel.predict`` differs. Per backend: words/s (model time,
after one warm-up pass), micro-F1 and cap micro-F1 against the reference, and, against
the first backend, the largest absolute difference of the probabilities and the share
of words whose decisions differ.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from punct.data.sequences import load_data_dir
from punct.engine.decode import decide, decode_settings, hypothesis_rows, predict_words
from punct.engine.precision import bf16_supported
from punct.errors import PunctInputError
from punct.export.backends import REFERENCE, backend_model, usable, write_record
from punct.export.system import System, load_system
from punct.score.metrics import score_tables

#: measured name -> (backend, bf16 setting)
MEASURED = {"torch-fp32": ("torch", "off"), "torch-bf16": ("torch", "on"),
            "torch-int8": ("torch-int8", "off"), "onnx-fp32": ("onnx", "off"),
            "onnx-int8": ("onnx-int8", "off")}


def measure_backends(system: System, data_dir: str | Path, names: list[str],
                     repeat: int = 1) -> list[dict[str, Any]]:
    """One record per backend in ``names`` (the first is the reference)."""
    for name in names:
        if name not in MEASURED:
            raise PunctInputError(f"unknown backend {name!r} (known: {', '.join(MEASURED)})")
    utts, seqs = load_data_dir(data_dir, system.label_set, system.streams)
    n_words = sum(len(s) for s in seqs)
    labels = system.label_set.labels
    rows: list[dict[str, Any]] = []
    ref: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    for name in names:
        backend, bf16 = MEASURED[name]
        model = backend_model(system, backend, threads=torch.get_num_threads())
        st = decode_settings(system.config, "cpu", bf16=bf16)
        runs = [predict_words(model, system.featurizer, seqs, st.window, st.stride,
                              st.batch_size, st.bf16, st.aggregate, "cpu",
                              exclusive=st.exclusive)
                for _ in range(1 + max(1, repeat))]  # the first is the warm-up
        pred = min(runs[1:], key=lambda p: p.seconds)
        marks, caps = decide(pred, seqs, labels, st.threshold, st.exclusive, st.combinations,
                             st.constraints)
        metrics = score_tables(utts, hypothesis_rows(utts, seqs, marks, caps, labels),
                               system.label_set)["all"]
        row: dict[str, Any] = {
            "backend": name, "words": n_words, "seconds": round(pred.seconds, 4),
            "words_per_s": round(n_words / pred.seconds, 1),
            "micro_f1": round(100 * metrics["micro_f1"], 2),
            "cap_micro_f1": round(100 * metrics["cap_micro_f1"], 2)
            if pred.cap is not None else None}
        probs = pred.punct if pred.cap is None else np.concatenate([pred.punct, pred.cap], 1)
        if ref is None:
            ref = (probs, marks, caps)
        else:
            differ = (marks != ref[1]).any(axis=1) | (caps != ref[2])
            row["max_abs_diff"] = float(np.abs(probs - ref[0]).max())
            row["decisions_differ"] = round(float(differ.mean()), 6)
        rows.append(row)
    base = rows[0]["words_per_s"]
    for row in rows:
        row["speedup"] = round(row["words_per_s"] / base, 2)
    return rows


def check_names(system: System) -> list[str]:
    """The backends a check measures: torch fp32 (the reference), torch bf16 where this
    CPU computes it natively (what ``auto`` runs there; recorded beside the others),
    torch int8, and the ONNX models the system has where onnxruntime is installed."""
    names = [REFERENCE, *(["torch-bf16"] if bf16_supported("cpu") else []), "torch-int8"]
    names += [name for name in ("onnx-fp32", "onnx-int8") if usable(system, MEASURED[name][0])]
    return names


def check_backends(directory: str | Path, dev_dir: str | Path, checkpoint: str = "best",
                   repeat: int = 1) -> Path:
    """Measure the backends of a system (exported or experiment dir) on ``dev_dir`` and
    write its ``backends.json``; return the record's path."""
    system = load_system(directory, "cpu", checkpoint)
    rows = measure_backends(system, dev_dir, check_names(system), repeat)
    return write_record(system, rows, dev_dir, torch.get_num_threads(), checkpoint)
