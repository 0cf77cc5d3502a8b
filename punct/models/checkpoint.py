"""Reading checkpoint files (``best.pt``, ``last.pt``) of trained models, checked.

The trainer (:mod:`punct.train.checkpoint`) writes each checkpoint with a sidecar
``<name>.sha256`` (``sha256sum`` format). :func:`verify` compares a file with its sidecar;
:func:`load_verified` insists on the sidecar (resuming training); :func:`load_checkpoint`
(decoding, export, fine-tuning) checks the sum where there is one and turns a truncated
or altered file into one :class:`CorruptCheckpointError` that says which file is damaged
and how to recover, instead of a torch traceback.
"""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path
from typing import Any

import torch

from punct.errors import PunctInputError

RECOVERY = {"best.pt": "decode last.pt instead (--checkpoint last) or train the system again",
            "last.pt": "use best.pt (--checkpoint best) or train the system again"}


class CorruptCheckpointError(PunctInputError):
    """A checkpoint file is missing its checksum, truncated or altered."""


def sidecar(path: Path) -> Path:
    """The checksum file of ``path``."""
    return path.with_name(path.name + ".sha256")


def file_sha256(path: Path, chunk: int = 1 << 22) -> str:
    """Hex sha256 digest of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def verify(path: str | Path) -> None:
    """Raise CorruptCheckpointError unless ``path`` exists and matches its sidecar."""
    path = Path(path)
    if not path.is_file():
        raise CorruptCheckpointError(f"{path} does not exist")
    check = sidecar(path)
    if not check.is_file():
        raise CorruptCheckpointError(f"{path} has no checksum file {check.name}")
    fields = check.read_text(encoding="utf-8").split()
    expected = fields[0] if fields else ""
    actual = file_sha256(path)
    if actual != expected:
        raise CorruptCheckpointError(
            f"{path} is corrupt or partial: sha256 {actual[:12]}... does not match "
            f"{check.name} ({expected[:12] or 'empty'}...)"
        )


def load_verified(path: str | Path) -> dict[str, Any]:
    """Load a checkpoint after checking its digest (tensors on CPU, weights only)."""
    verify(path)
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except (RuntimeError, EOFError, OSError, pickle.UnpicklingError) as err:  # sum fine
        raise CorruptCheckpointError(f"{path}: cannot be loaded ({err})") from err


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Load a trained model's checkpoint (tensors on CPU, weights only), checked against its
    ``.sha256`` sidecar where there is one; a damaged file is a CorruptCheckpointError
    naming it and the way out (the other checkpoint, or training again)."""
    path = Path(path)
    recovery = RECOVERY.get(path.name, "train the system again")
    try:
        return load_verified(path) if sidecar(path).is_file() else torch.load(
            path, map_location="cpu", weights_only=True)
    except CorruptCheckpointError as err:
        raise CorruptCheckpointError(f"damaged checkpoint: {err}; {recovery}") from err
    except (RuntimeError, EOFError, OSError, pickle.UnpicklingError) as err:
        raise CorruptCheckpointError(f"damaged checkpoint: {path} cannot be loaded "
                                     f"({type(err).__name__}: {_first_line(err)}); "
                                     f"{recovery}") from err


def _first_line(err: Exception) -> str:
    lines = str(err).strip().splitlines()
    return lines[0] if lines else ""
