"""NIST SPHERE headers (the ``.sph`` audio of BABEL-style corpora).

A SPHERE file starts with ``NIST_1A``, the header size in bytes and ``name -type value``
fields up to ``end_head``. Plain PCM, u-law and a-law files are read by soundfile;
shorten-compressed ones (``sample_coding ...shorten...``) need ``sph2pipe``.
:func:`wav_scp_entry` gives the ``wav.scp`` value for a file: its path, or an
``sph2pipe`` pipe when the file is compressed and ``sph2pipe`` is on PATH.
"""

from __future__ import annotations

import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

from punct.errors import MissingDataError, PunctInputError

MAGIC = b"NIST_1A"
READABLE_CODINGS = ("pcm", "ulaw", "mu-law", "alaw")


@dataclass(frozen=True)
class SphereHeader:
    """The fields of a SPHERE header that say how to read the samples."""

    sample_rate: int
    channel_count: int
    sample_coding: str
    sample_count: int | None

    @property
    def compressed(self) -> bool:
        """Shorten (or other) compression that soundfile cannot decode."""
        return not any(self.sample_coding.startswith(c) for c in READABLE_CODINGS) \
            or "shorten" in self.sample_coding


def read_sphere_header(path: str | Path) -> SphereHeader:
    """Parse the header of the SPHERE file ``path``; a malformed one names the file."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            head = f.read(1024)
            if not head.startswith(MAGIC):
                raise PunctInputError("not a NIST SPHERE file (no NIST_1A magic)", path, 1)
            lines = head.split(b"\n")
            try:
                size = int(lines[1].strip())
            except (IndexError, ValueError):
                raise PunctInputError("bad SPHERE header size", path, 2) from None
            if size > len(head):
                head += f.read(size - len(head))
    except OSError as err:
        raise MissingDataError(f"cannot read audio: {err.strerror}", path) from None
    fields: dict[str, str] = {}
    ended = False
    for lineno, raw in enumerate(head[:size].split(b"\n")[2:], start=3):
        line = raw.decode("ascii", "replace").strip()
        if line == "end_head":
            ended = True
            break
        if not line or line.startswith(";"):
            continue
        parts = line.split(None, 2)
        if len(parts) != 3 or not parts[1].startswith("-"):
            raise PunctInputError(f"bad SPHERE header field {line!r}", path, lineno)
        fields[parts[0]] = parts[2]
    if not ended:
        raise PunctInputError("SPHERE header has no end_head", path)
    try:
        rate = int(fields["sample_rate"])
        channels = int(fields.get("channel_count", "1"))
        count = int(fields["sample_count"]) if "sample_count" in fields else None
    except KeyError as err:
        raise PunctInputError(f"SPHERE header lacks {err.args[0]}", path) from None
    except ValueError as err:
        raise PunctInputError(f"bad SPHERE header number: {err}", path) from None
    return SphereHeader(rate, channels, fields.get("sample_coding", "pcm").lower(), count)


def wav_scp_entry(path: str | Path) -> str:
    """The ``wav.scp`` value of an audio file: the path itself (WAV, PCM/u-law/a-law
    SPHERE), or ``sph2pipe -f wav -p PATH |`` for a compressed SPHERE file."""
    path = Path(path).resolve()
    if path.suffix.lower() != ".sph":
        return str(path)
    header = read_sphere_header(path)
    if not header.compressed:
        return str(path)
    if shutil.which("sph2pipe") is None:
        raise MissingDataError(
            f"SPHERE file with sample_coding {header.sample_coding!r} needs sph2pipe on PATH "
            "(Kaldi's tools/sph2pipe, or convert the audio to WAV first)", path)
    return f"sph2pipe -f wav -p {shlex.quote(str(path))} |"
