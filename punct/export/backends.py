"""Inference backends, the record of their check on a dev set, and what ``auto`` picks.

Backends: ``torch`` (fp32, or bf16 autocast where the decode settings say so),
``torch-int8`` (``punct.engine.int8``: dynamic int8 Linear layers, no extra dependency),
``onnx`` / ``onnx-int8`` (onnxruntime on an exported dir's ``model.onnx`` /
``model.int8.onnx``) and ``auto``:

- on a GPU, or on a CPU with native bf16 (``punct.engine.precision``), or with an explicit
  precision: ``torch`` (bf16 where the precision setting resolves to it, as before). On
  a CPU with native bf16 the record is not read: bf16 keeps fp32's F1, and on the CPUs
  measured int8 was not clearly faster in ``punct-restore`` (docs/RESTORE.md);
- on a CPU without native bf16: the fastest backend that the system's *backend record*
  (``backends.json`` beside the weights, written by ``punct-export --check-backends`` or
  stage 7) found within ``F1_TOLERANCE`` micro-F1 points of torch fp32 on a dev set, and
  that is usable here (onnxruntime installed, the ONNX file present); without a record
  (or one for other weights), ``torch`` fp32, said once on stderr.

The record also names the kind of CPU it was measured on (:func:`cpu_kind`) and, where
that CPU has native bf16, torch bf16's speed beside the others.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch

from punct.engine.int8 import quantize_int8
from punct.engine.precision import bf16_supported, cpu_flags, cpu_model, resolve_bf16
from punct.errors import PunctInputError
from punct.export.onnx_backend import OnnxModel
from punct.export.onnx_export import INT8_FILE, ONNX_FILE
from punct.export.system import WEIGHTS_FILE, System
from punct.models.base import PunctModel

BACKENDS = ("auto", "torch", "torch-int8", "onnx", "onnx-int8")
RECORD_FILE = "backends.json"
RECORD_FORMAT = "punct-backends/1"
F1_TOLERANCE = 0.5  # micro-F1 points below torch fp32 that a faster backend may lose
REFERENCE = "torch-fp32"
#: measured name (``punct.export.measure``) -> backend, for the candidates of ``auto``
CANDIDATES = {"torch-int8": "torch-int8", "onnx-fp32": "onnx", "onnx-int8": "onnx-int8"}
ONNX_FILES = {"onnx": ONNX_FILE, "onnx-int8": INT8_FILE}
#: the CPU flags that decide between bf16, int8 and fp32
SPEED_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16",
               "amx_int8")
#: environment variables that hold kernels to an older instruction set (or bf16 off)
KERNEL_LIMITS = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS",
                 "FBGEMM_ENABLE_INSTRUCTIONS", "PUNCT_NATIVE_BF16")


def cpu_kind() -> dict[str, Any]:
    """What makes one backend faster than another on this CPU: its model name, the flags
    of ``SPEED_FLAGS`` it has, and the ``KERNEL_LIMITS`` set in the environment."""
    flags = cpu_flags()
    return {"cpu": cpu_model(), "cpu_flags": [f for f in SPEED_FLAGS if f in flags],
            "kernel_limits": {k: os.environ[k] for k in KERNEL_LIMITS if k in os.environ}}


@dataclass(frozen=True)
class Choice:
    """The backend to run, and why (for ``auto``)."""

    backend: str
    reason: str


def check_backend(name: str) -> str:
    """``name`` if it is a backend, else a ValueError that lists them."""
    if name not in BACKENDS:
        raise PunctInputError(f"unknown backend {name!r} (known: {', '.join(BACKENDS)})")
    return name


def weights_file(system: System, checkpoint: str = "best") -> Path:
    """The weights a backend record belongs to (``model.safetensors`` or ``<checkpoint>.pt``)."""
    return system.source / (WEIGHTS_FILE if system.exported else f"{checkpoint}.pt")


def fingerprint(path: Path) -> str:
    """The sha256 of a file, hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_record(system: System, rows: list[dict[str, Any]], dev_dir: str | Path,
                 threads: int, checkpoint: str = "best") -> Path:
    """Write ``backends.json`` beside the weights: the dev-set measurements ``rows`` (the
    first is torch fp32), which backends stay within ``F1_TOLERANCE`` of it, and the kind
    of CPU they ran on (:func:`cpu_kind`)."""
    if not rows or rows[0]["backend"] != REFERENCE:
        raise ValueError(f"a backend record needs {REFERENCE} measured first")
    weights = weights_file(system, checkpoint)
    record = {
        "format": RECORD_FORMAT,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "weights": {"file": weights.name, "sha256": fingerprint(weights)},
        "dev_dir": str(dev_dir), "words": rows[0]["words"], **cpu_kind(),
        "threads": threads,
        "tolerance": F1_TOLERANCE, "reference": REFERENCE,
        "within_tolerance": [r["backend"] for r in rows[1:] if within(rows[0], r)],
        "backends": rows,
    }
    path = system.source / RECORD_FILE
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return path


def within(reference: dict[str, Any], row: dict[str, Any]) -> bool:
    """Whether ``row``'s micro-F1 is at most ``F1_TOLERANCE`` points below the reference's."""
    return float(reference["micro_f1"]) - float(row["micro_f1"]) <= F1_TOLERANCE


def read_record(system: System, checkpoint: str = "best") -> dict[str, Any] | None:
    """The system's backend record, or None (none, unreadable, or for other weights)."""
    path = system.source / RECORD_FILE
    weights = weights_file(system, checkpoint)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        if record.get("format") != RECORD_FORMAT or not weights.is_file():
            return None
        if record["weights"]["sha256"] != fingerprint(weights):
            return None
        return record
    except (OSError, ValueError, KeyError, TypeError):
        return None


def usable(system: System, backend: str) -> bool:
    """Whether ``backend`` can run here (onnx: onnxruntime installed, the ONNX file there)."""
    if backend in ONNX_FILES:
        return (importlib.util.find_spec("onnxruntime") is not None
                and (system.source / ONNX_FILES[backend]).is_file())
    return backend in BACKENDS


def fastest_checked(system: System, record: dict[str, Any]) -> str | None:
    """The recorded backend faster than torch fp32 and within the F1 tolerance that ran
    fastest, among those usable here (None: none)."""
    rows = {r["backend"]: r for r in record.get("backends", [])}
    reference = rows.get(REFERENCE)
    if reference is None:
        return None
    best, best_speed = None, float(reference["words_per_s"])
    for name, backend in CANDIDATES.items():
        row = rows.get(name)
        if row is None or not within(reference, row) or not usable(system, backend):
            continue
        if float(row["words_per_s"]) > best_speed:
            best, best_speed = backend, float(row["words_per_s"])
    return best


def choose_backend(system: System, device: torch.device | str, bf16: bool | str | None,
                   explicit_precision: bool = False, checkpoint: str = "best") -> Choice:
    """What ``auto`` runs (see the module docstring). ``bf16``: the effective bf16 setting
    (``auto``/``on``/``off``); ``explicit_precision``: the caller asked for fp32 or bf16."""
    device = torch.device(device)
    if device.type != "cpu":
        return Choice("torch", f"{device.type} device")
    if explicit_precision:
        return Choice("torch", "explicit precision")
    if bf16_supported(device):  # int8 is for CPUs without native bf16 only
        return Choice("torch", "native bf16")
    if resolve_bf16(bf16, device):
        return Choice("torch", "bf16 asked for")
    record = read_record(system, checkpoint)
    if record is None:
        say_once(f"punct: backend auto: fp32 (safe): this CPU has no native bf16 and "
                 f"{system.source} has no {RECORD_FILE} for its weights that shows int8 "
                 f"keeps micro-F1 within {F1_TOLERANCE} (punct-export --check-backends "
                 f"--dev-dir DEV records it)")
        return Choice("torch", "no backend record")
    picked = fastest_checked(system, record)
    if picked is None:
        return Choice("torch", f"{RECORD_FILE}: nothing faster within F1 tolerance")
    return Choice(picked, f"{RECORD_FILE}: fastest within {F1_TOLERANCE} micro-F1 of fp32")


@functools.cache
def say_once(message: str) -> None:
    """Print ``message`` on stderr the first time only (per process)."""
    print(message, file=sys.stderr)


def backend_model(system: System, backend: str, threads: int | None = None) -> PunctModel:
    """The model that runs ``backend`` (a concrete one, not ``auto``)."""
    if check_backend(backend) == "auto":
        raise ValueError("resolve backend 'auto' with choose_backend first")
    if backend == "torch":
        return system.model
    if backend == "torch-int8":
        return quantize_int8(system.model)
    return OnnxModel.from_system(system, int8=backend == "onnx-int8", threads=threads)
