"""punct.data.download against a local HTTP server on 127.0.0.1 (no network)."""

from __future__ import annotations

import hashlib
import io
import shutil
import socket
import tarfile
import threading
import zipfile
from collections import namedtuple
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from punct.bin import download as download_cli
from punct.data import download as dl

PAYLOAD = bytes(range(256)) * 1024  # 256 KiB
SHA = hashlib.sha256(PAYLOAD).hexdigest()


class Server:
    """A loopback server for one file, with switchable Range support and failures."""

    def __init__(self) -> None:
        self.ranges = True
        self.cut_after: list[int] = []  # per request: stop after N body bytes (then drop)
        self.requests: list[str | None] = []  # the Range header of each GET
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                rng = self.headers.get("Range")
                server.requests.append(rng)
                if self.path != "/file.bin":
                    self.send_error(404)
                    return
                start = 0
                if rng and server.ranges:
                    start = int(rng.split("=")[1].split("-")[0])
                    if start >= len(PAYLOAD):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(PAYLOAD)}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    self.send_response(206)
                    self.send_header("Content-Range",
                                     f"bytes {start}-{len(PAYLOAD) - 1}/{len(PAYLOAD)}")
                else:
                    self.send_response(200)
                body = PAYLOAD[start:]
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if server.cut_after:
                    body = body[:server.cut_after.pop(0)]
                    self.wfile.write(body)
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.timeout = 5
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/file.bin"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server()
    yield srv
    srv.close()


def fetch(url: str, dest: Path, **kw: object) -> Path:
    opts = {"timeout": 5.0, "backoff": 0.0, **kw}
    return dl.download(url, dest, **opts)  # type: ignore[arg-type]


def test_download_verified_and_atomic(server: Server, tmp_path: Path) -> None:
    out = fetch(server.url, tmp_path / "f.bin", sha256=SHA)
    assert out.read_bytes() == PAYLOAD
    assert not (tmp_path / "f.bin.part").exists()
    assert server.requests == [None]
    # A second call only verifies the existing file: no request.
    fetch(server.url, tmp_path / "f.bin", sha256=SHA)
    assert len(server.requests) == 1


def test_interrupted_transfer_resumes_with_range(server: Server, tmp_path: Path) -> None:
    server.cut_after = [100_000]
    with pytest.raises(dl.DownloadError, match="rerun to resume"):
        fetch(server.url, tmp_path / "f.bin", sha256=SHA, retries=0)
    part = tmp_path / "f.bin.part"
    assert part.stat().st_size == 100_000
    assert not (tmp_path / "f.bin").exists()
    # The rerun asks for the rest only and completes the file.
    fetch(server.url, tmp_path / "f.bin", sha256=SHA)
    assert server.requests == [None, "bytes=100000-"]
    assert (tmp_path / "f.bin").read_bytes() == PAYLOAD
    assert not part.exists()


def test_retries_resume_within_one_call(server: Server, tmp_path: Path) -> None:
    server.cut_after = [50_000, 70_000]
    fetch(server.url, tmp_path / "f.bin", sha256=SHA, retries=3)
    assert server.requests == [None, "bytes=50000-", "bytes=120000-"]
    assert (tmp_path / "f.bin").read_bytes() == PAYLOAD


def test_server_without_range_support_restarts(server: Server, tmp_path: Path) -> None:
    server.ranges = False
    part = tmp_path / "f.bin.part"
    part.write_bytes(PAYLOAD[:1000])
    fetch(server.url, tmp_path / "f.bin", sha256=SHA)
    assert server.requests == ["bytes=1000-"]  # asked, got 200 and the whole file
    assert (tmp_path / "f.bin").read_bytes() == PAYLOAD


def test_complete_part_file_answered_416(server: Server, tmp_path: Path) -> None:
    (tmp_path / "f.bin.part").write_bytes(PAYLOAD)
    fetch(server.url, tmp_path / "f.bin", sha256=SHA)
    assert (tmp_path / "f.bin").read_bytes() == PAYLOAD


def test_checksum_mismatch_leaves_no_file(server: Server, tmp_path: Path) -> None:
    with pytest.raises(dl.ChecksumError, match=r"checksum mismatch.*deleted"):
        fetch(server.url, tmp_path / "f.bin", sha256="0" * 64)
    assert list(tmp_path.iterdir()) == []


def test_existing_file_with_wrong_checksum_is_reported(tmp_path: Path) -> None:
    (tmp_path / "f.bin").write_bytes(b"other")
    with pytest.raises(dl.ChecksumError, match="delete it"):
        dl.download("http://127.0.0.1:9/none", tmp_path / "f.bin", sha256=SHA)


def test_http_404_is_a_clear_error(server: Server, tmp_path: Path) -> None:
    with pytest.raises(dl.DownloadError, match="HTTP 404"):
        fetch(server.url.replace("file.bin", "missing"), tmp_path / "m.bin")
    assert len(server.requests) == 1  # not retried
    assert not (tmp_path / "m.bin").exists()


def test_free_disk_space_checked_before_writing(server: Server, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(10**6, 10**6 - 1000, 1000))
    with pytest.raises(dl.DiskSpaceError, match=f"needs {len(PAYLOAD)} bytes"):
        fetch(server.url, tmp_path / "f.bin")
    assert not (tmp_path / "f.bin").exists()
    assert not (tmp_path / "f.bin.part").exists()


def _tar(path: Path, members: list[tarfile.TarInfo], data: bytes = b"x") -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info in members:
            if info.isfile():
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
    return path


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info


@pytest.mark.parametrize("member", ["../evil.txt", "/tmp/evil.txt", "a/../../evil.txt"])
def test_tar_path_traversal_refused(tmp_path: Path, member: str) -> None:
    archive = _tar(tmp_path / "a.tgz", [tarfile.TarInfo("ok.txt"), tarfile.TarInfo(member)])
    with pytest.raises(dl.UnsafeArchiveError, match="outside the target"):
        dl.safe_extract(archive, tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []  # checked before anything is written
    assert not (tmp_path / "evil.txt").exists()


def test_tar_links_out_of_target_refused(tmp_path: Path) -> None:
    for link in (_link("l", "../../etc/passwd"), _link("h", "/etc/passwd", tarfile.LNKTYPE)):
        archive = _tar(tmp_path / "a.tgz", [link])
        with pytest.raises(dl.UnsafeArchiveError, match="points outside"):
            dl.safe_extract(archive, tmp_path / "out")


def test_zip_path_traversal_refused(tmp_path: Path) -> None:
    archive = tmp_path / "a.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("ok.txt", "ok")
        zf.writestr("../evil.txt", "evil")
    with pytest.raises(dl.UnsafeArchiveError):
        dl.safe_extract(archive, tmp_path / "out")
    assert not (tmp_path / "evil.txt").exists()
    assert not (tmp_path / "out" / "ok.txt").exists()


def test_safe_archives_extract(tmp_path: Path) -> None:
    sub = tarfile.TarInfo("d")
    sub.type = tarfile.DIRTYPE
    archive = _tar(tmp_path / "a.tgz", [sub, tarfile.TarInfo("d/f.txt"), _link("d/l", "f.txt")],
                   b"hello")
    names = dl.safe_extract(archive, tmp_path / "out")
    assert names == ["d", "d/f.txt", "d/l"]
    assert (tmp_path / "out" / "d" / "l").read_bytes() == b"hello"
    zpath = tmp_path / "b.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        zf.writestr("z/a.txt", "za")
    assert dl.safe_extract(zpath, tmp_path / "zout") == ["z/a.txt"]
    assert (tmp_path / "zout" / "z" / "a.txt").read_text() == "za"


def test_cli_downloads_and_extracts(server: Server, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert download_cli.main(["--url", server.url, "--out", str(tmp_path / "f.bin"),
                              "--sha256", SHA, "--timeout", "5"]) == 0
    assert (tmp_path / "f.bin").read_bytes() == PAYLOAD
    assert download_cli.main(["--url", server.url, "--out", str(tmp_path / "g.bin"),
                              "--sha256", "1" * 64, "--timeout", "5"]) == 1
    assert "checksum mismatch" in capsys.readouterr().err
    archive = _tar(tmp_path / "a.tgz", [tarfile.TarInfo("../x")])
    assert download_cli.main(["--extract", str(archive), "--to", str(tmp_path / "o")]) == 1
