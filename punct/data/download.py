"""One download implementation for every recipe's stage 0.

- ``download``: HTTP(S) to ``<dest>.part``, resumed with a ``Range`` request after an
  interrupted transfer (also across runs); a server that ignores ``Range`` (200 instead
  of 206) restarts the file from its first byte. The free disk space is checked against
  the bytes still to come before anything is written. With ``sha256`` the finished file
  is verified; a mismatch deletes the partial file and raises ``ChecksumError``. Only a
  complete, verified file is renamed to ``dest``.
- ``safe_extract``: tar or zip archives; every member is checked before anything is
  written, and absolute paths, ``..`` components, links that point outside the target
  and device files are refused (``UnsafeArchiveError``).
"""

from __future__ import annotations

import hashlib
import http.client
import os
import shutil
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from punct.errors import MissingDataError, PunctInputError

CHUNK = 1 << 16


class DownloadError(MissingDataError):
    """The file could not be fetched (network, HTTP status)."""


class ChecksumError(PunctInputError):
    """A file's sha256 differs from the pinned one."""


class DiskSpaceError(PunctInputError):
    """Not enough free space for the download or the extraction."""


class UnsafeArchiveError(PunctInputError):
    """An archive member would be written outside the target directory."""


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def check_free_space(directory: Path, needed: int, margin: int = 0, what: str = "") -> None:
    """Raise ``DiskSpaceError`` when ``directory`` has less than ``needed + margin`` free."""
    free = shutil.disk_usage(directory).free
    if free < needed + margin:
        raise DiskSpaceError(f"{what or 'download'} needs {needed + margin} bytes "
                             f"({(needed + margin) / 1e9:.2f} GB) but only {free} are free",
                             directory)


def _content_length(resp: object) -> int | None:
    value = getattr(resp, "headers", {}).get("Content-Length")
    return int(value) if value and value.isdigit() else None


def _range_start(resp: object) -> int | None:
    """First byte of a 206 response (``Content-Range: bytes a-b/n``)."""
    value = getattr(resp, "headers", {}).get("Content-Range") or ""
    unit, _, rest = value.partition(" ")
    if unit != "bytes" or "-" not in rest:
        return None
    start = rest.split("-", 1)[0]
    return int(start) if start.isdigit() else None


def _fetch_once(url: str, part: Path, timeout: float, free_margin: int,
                progress: Callable[[int], None] | None) -> bool:
    """One request; appends to ``part``. True when the server said the file is complete."""
    have = part.stat().st_size if part.exists() else 0
    req = urllib.request.Request(url, headers={"User-Agent": "punct-recipes"})
    if have:
        req.add_header("Range", f"bytes={have}-")
    try:
        resp = urllib.request.urlopen(req, timeout=timeout)
    except urllib.error.HTTPError as err:
        if err.code == 416 and have:  # nothing left after ``have``: complete already
            return True
        raise
    with resp:
        # A local file (file://) has no HTTP status and ignores Range: a full answer.
        status = resp.status if resp.status is not None else (
            200 if url.startswith("file:") else None)
        length = _content_length(resp)
        if status == 206:
            if _range_start(resp) != have:
                raise DownloadError(f"server answered range bytes={have}- with "
                                    f"{resp.headers.get('Content-Range')!r}", url)
            mode = "ab"
        elif status == 200:
            if have:
                print(f"download: {url}: the server ignores Range requests; starting again "
                      "from the first byte")
            have, mode = 0, "wb"
        else:
            raise DownloadError(f"unexpected HTTP status {status}", url)
        if length is not None:
            check_free_space(part.parent, length, free_margin, f"downloading {url}")
        received = 0
        with open(part, mode) as fh:
            while True:
                block = resp.read(CHUNK)
                if not block:
                    break
                fh.write(block)
                received += len(block)
                if progress is not None:
                    progress(have + received)
        if length is not None and received < length:
            raise DownloadError(f"transfer interrupted after {have + received} bytes "
                                f"({length - received} missing)", url)
    return True


def download(url: str, dest: str | Path, sha256: str | None = None, *, retries: int = 3,
             timeout: float = 60.0, free_margin: int = 0, backoff: float = 1.0,
             progress: Callable[[int], None] | None = None) -> Path:
    """Fetch ``url`` to ``dest`` (resumable, verified, atomic); returns ``dest``.

    An existing ``dest`` is only verified. ``retries`` more requests follow an
    interrupted transfer, each resuming where the file stops.
    """
    dest = Path(dest)
    if dest.exists():
        if sha256 is not None and (got := sha256_file(dest)) != sha256.lower():
            raise ChecksumError(f"checksum mismatch: expected sha256 {sha256}, found {got} "
                                "(a different or damaged copy; delete it to download again)",
                                dest)
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    attempt = 0
    while True:
        try:
            _fetch_once(url, part, timeout, free_margin, progress)
            break
        except (OSError, http.client.HTTPException, DownloadError) as err:
            if isinstance(err, urllib.error.HTTPError) and 400 <= err.code < 500 and \
                    err.code not in (408, 429):
                raise DownloadError(f"HTTP {err.code} {err.reason}", url) from err
            if attempt >= retries:
                have = part.stat().st_size if part.exists() else 0
                raise DownloadError(f"could not download ({err}); {have} bytes kept in "
                                    f"{part.name}: rerun to resume", url) from err
            attempt += 1
            time.sleep(backoff * attempt)
    if sha256 is not None:
        got = sha256_file(part)
        if got != sha256.lower():
            part.unlink()
            raise ChecksumError(f"checksum mismatch for {url}: expected sha256 {sha256}, "
                                f"found {got}; the damaged file was deleted", dest)
    os.replace(part, dest)
    return dest


def _member_target(target: Path, name: str, archive: Path) -> Path:
    pure = PurePosixPath(name.replace("\\", "/"))
    if pure.is_absolute() or ".." in pure.parts or (pure.parts and ":" in pure.parts[0]):
        raise UnsafeArchiveError(f"member {name!r} would be written outside the target",
                                 archive)
    out = (target / pure).resolve()
    if out != target and target not in out.parents:
        raise UnsafeArchiveError(f"member {name!r} would be written outside the target",
                                 archive)
    return out


def _check_tar(tar: tarfile.TarFile, target: Path, archive: Path) -> int:
    total = 0
    for member in tar.getmembers():
        out = _member_target(target, member.name, archive)
        if member.issym() or member.islnk():
            link = PurePosixPath(member.linkname)
            base = out.parent if member.issym() else target
            dest = (base / link).resolve() if not link.is_absolute() else Path(link)
            if link.is_absolute() or (dest != target and target not in dest.parents):
                raise UnsafeArchiveError(f"link {member.name!r} -> {member.linkname!r} "
                                         "points outside the target", archive)
        elif not (member.isfile() or member.isdir()):
            raise UnsafeArchiveError(f"member {member.name!r} is a device or fifo", archive)
        total += member.size
    return total


def safe_extract(archive: str | Path, target: str | Path, free_margin: int = 0) -> list[str]:
    """Extract a tar (any compression) or zip archive into ``target``; returns the names."""
    archive, target = Path(archive), Path(target)
    target.mkdir(parents=True, exist_ok=True)
    target = target.resolve()
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
            for info in infos:
                _member_target(target, info.filename, archive)
            check_free_space(target, sum(i.file_size for i in infos), free_margin,
                             f"extracting {archive.name}")
            zf.extractall(target)
            return [i.filename for i in infos]
    if not tarfile.is_tarfile(archive):
        raise PunctInputError("not a tar or zip archive", archive)
    with tarfile.open(archive) as tar:
        size = _check_tar(tar, target, archive)
        check_free_space(target, size, free_margin, f"extracting {archive.name}")
        tar.extractall(target, filter="data")
        return tar.getnames()
