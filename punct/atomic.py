"""The one atomic file writer: readers see the old file or the whole new one, never a part.

:func:`atomic_open` writes to a hidden temporary file in the destination's directory
(``.<name>.<random>.tmp``: unique per writer, so concurrent jobs never share one), and
renames it over the destination with ``os.replace`` when the ``with`` block ends without
an error; on an error the temporary file is removed and the destination is untouched.
``sync=True`` also flushes the data to disk before the rename (checkpoints, whose loss a
crash must not cause). The new file gets the usual permissions (the umask's), not the
0600 of ``tempfile.mkstemp``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


def temporary_name(path: Path) -> Path:
    """A fresh hidden temporary path next to ``path``."""
    return path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")


@contextmanager
def atomic_open(path: str | Path, mode: str = "w", *, sync: bool = False,
                encoding: str | None = "utf-8", newline: str | None = None) -> Iterator[IO[Any]]:
    """Open a temporary file for writing that replaces ``path`` when the block succeeds
    (``mode``: ``"w"`` text or ``"wb"`` bytes; parent directories are created)."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes whole files: mode 'w' or 'wb', not {mode!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_name(path)
    text = mode == "w"
    try:
        with open(tmp, "x" if text else "xb", encoding=encoding if text else None,
                  newline=newline if text else None) as handle:
            yield handle
            if sync:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path for a writer that takes a file name (soundfile, kaldiio), renamed
    over ``path`` when the block succeeds and removed when it fails."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_name(path)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | Path, text: str, *, sync: bool = False) -> None:
    """Replace ``path`` with ``text`` (UTF-8) atomically."""
    with atomic_open(path, "w", sync=sync) as handle:
        handle.write(text)


def atomic_write_bytes(path: str | Path, data: bytes, *, sync: bool = False) -> None:
    """Replace ``path`` with ``data`` atomically."""
    with atomic_open(path, "wb", sync=sync) as handle:
        handle.write(data)
