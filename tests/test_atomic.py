"""The one atomic writer: all or nothing, no temporary left, the umask's permissions."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from punct.atomic import atomic_open, atomic_path, atomic_write_bytes, atomic_write_text


def test_replaces_whole_files_and_leaves_nothing_behind(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "f.txt"
    atomic_write_text(path, "one\n")
    atomic_write_text(path, "two\n", sync=True)
    assert path.read_text() == "two\n"
    atomic_write_bytes(tmp_path / "b.bin", b"\x00\x01")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["b.bin", "f.txt", "sub"]


def test_a_failed_write_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    atomic_write_text(path, "old\n")
    with pytest.raises(RuntimeError), atomic_open(path) as handle:
        handle.write("half of the new")
        raise RuntimeError("interrupted")
    assert path.read_text() == "old\n"
    with pytest.raises(RuntimeError), atomic_path(tmp_path / "g.wav") as tmp:
        tmp.write_bytes(b"RIFF")
        raise RuntimeError("interrupted")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]
    with pytest.raises(ValueError, match="mode 'w' or 'wb'"), atomic_open(path, "a"):
        pass


def test_permissions_follow_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "f.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "f.txt").stat().st_mode) == 0o644
