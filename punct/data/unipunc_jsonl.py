"""UniPunc's JSON Lines format (Zhu et al. 2022, github.com/Yaoming95/UniPunc data files).

One JSON object per line::

    {"id": "ted_779_16,", "audio": "<MUSTC1_PATH>/dev/wav/ted_779.wav:1887840:354880",
     "n_frames": 354880, "tgt_text": "Now, I'd like ...", "speaker_id": "spk.779",
     "tgt_lang": "en"}

``audio`` is ``<wav path>:<offset>:<frames>`` in samples of the file (16 kHz in MuST-C),
or ``null`` for a sentence without audio (then ``n_frames`` is 0). The path may begin
with a placeholder such as ``<MUSTC1_PATH>`` that stands for the user's corpus root
(:func:`resolve_audio_path`). ``tgt_text`` is cased and punctuated. Every malformed
line is a :class:`~punct.errors.PunctInputError` naming the file and line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from punct.atomic import atomic_write_text
from punct.errors import MissingDataError, PunctInputError
from punct.wordtable import read_text_lines

PLACEHOLDER = re.compile(r"^<([A-Za-z0-9_]+)>")
REQUIRED_KEYS = ("id", "audio", "tgt_text")


@dataclass(frozen=True)
class AudioRef:
    """A stretch of a wav file: ``offset`` and ``frames`` in samples."""

    path: str
    offset: int
    frames: int

    def __str__(self) -> str:
        return f"{self.path}:{self.offset}:{self.frames}"


@dataclass(frozen=True)
class UnipuncRecord:
    """One line of a UniPunc JSONL file (``line``: its 1-based line number, 0 if made)."""

    id: str
    audio: AudioRef | None
    text: str
    speaker: str | None = None
    lang: str | None = None
    line: int = 0


def parse_audio_ref(value: str, path: str | Path | None = None,
                    line: int | None = None) -> AudioRef:
    """``path.wav:offset:frames`` -> :class:`AudioRef` (the path may contain ``:``)."""
    parts = value.rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        raise PunctInputError(f"audio {value!r}: expected '<path.wav>:<offset>:<frames>'",
                              path, line)
    wav, offset, frames = parts
    if not (offset.isdigit() and frames.isdigit()):
        raise PunctInputError(f"audio {value!r}: offset and frames must be non-negative "
                              "integers (samples)", path, line)
    if int(frames) == 0:
        raise PunctInputError(f"audio {value!r}: zero frames", path, line)
    return AudioRef(wav, int(offset), int(frames))


def record_from_json(obj: Any, path: str | Path | None = None,
                     line: int | None = None) -> UnipuncRecord:
    """Check one decoded JSON object and make it a record."""
    if not isinstance(obj, dict):
        raise PunctInputError(f"expected a JSON object, found {type(obj).__name__}", path, line)
    missing = [k for k in REQUIRED_KEYS if k not in obj]
    if missing:
        raise PunctInputError(f"missing key(s) {', '.join(missing)} (UniPunc JSONL needs "
                              f"{', '.join(REQUIRED_KEYS)})", path, line)
    rid, audio, text = obj["id"], obj["audio"], obj["tgt_text"]
    if not isinstance(rid, str) or not rid.strip(",").strip():
        raise PunctInputError(f"bad id {rid!r}", path, line)
    if not isinstance(text, str) or not text.strip():
        raise PunctInputError(f"record {rid!r}: empty or non-string tgt_text", path, line)
    ref = None
    if audio is not None:
        if not isinstance(audio, str):
            raise PunctInputError(f"record {rid!r}: audio must be a string or null", path, line)
        ref = parse_audio_ref(audio, path, line)
        n_frames = obj.get("n_frames")
        if n_frames is not None and n_frames != ref.frames:
            raise PunctInputError(f"record {rid!r}: n_frames {n_frames} differs from the "
                                  f"audio's {ref.frames} frames", path, line)
    speaker, lang = obj.get("speaker_id"), obj.get("tgt_lang")
    for key, value in (("speaker_id", speaker), ("tgt_lang", lang)):
        if value is not None and not isinstance(value, str):
            raise PunctInputError(f"record {rid!r}: {key} must be a string or null", path, line)
    return UnipuncRecord(rid, ref, text, speaker, lang, line or 0)


def read_unipunc_jsonl(path: str | Path) -> list[UnipuncRecord]:
    """All records of a UniPunc JSONL file (blank lines are errors, as are bad records)."""
    path = Path(path)
    if not path.is_file():
        raise MissingDataError("UniPunc JSONL file not found", path)
    records = []
    for lineno, text in enumerate(read_text_lines(path), start=1):
        if not text.strip():
            raise PunctInputError("empty line", path, lineno)
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as err:
            raise PunctInputError(f"invalid JSON: {err.msg} (column {err.colno})",
                                  path, lineno) from None
        records.append(record_from_json(obj, path, lineno))
    if not records:
        raise PunctInputError("no records", path)
    return records


def record_to_json(record: UnipuncRecord) -> dict[str, Any]:
    """The JSON object of a record, with the keys in UniPunc's order."""
    return {"id": record.id, "audio": None if record.audio is None else str(record.audio),
            "n_frames": 0 if record.audio is None else record.audio.frames,
            "tgt_text": record.text, "speaker_id": record.speaker, "tgt_lang": record.lang}


def write_unipunc_jsonl(path: str | Path, records: Iterable[UnipuncRecord]) -> int:
    """Write records as UniPunc JSONL (UTF-8, non-ASCII kept); returns the count."""
    lines = [json.dumps(record_to_json(r), ensure_ascii=False) + "\n" for r in records]
    atomic_write_text(path, "".join(lines))
    return len(lines)


def resolve_audio_path(ref: AudioRef, roots: dict[str, str | Path],
                       path: str | Path | None = None, line: int | None = None) -> Path:
    """The file of ``ref`` with a leading ``<NAME>`` placeholder replaced by ``roots[NAME]``.

    A placeholder without a root is a :class:`MissingDataError` naming it (the caller
    decides whether that line is kept without audio)."""
    match = PLACEHOLDER.match(ref.path)
    if match is None:
        return Path(ref.path)
    name = match.group(1)
    if name not in roots or not str(roots[name]):
        raise MissingDataError(f"audio {ref.path!r}: no directory given for <{name}>", path, line)
    return Path(roots[name]) / ref.path[match.end():].lstrip("/")


def utterance_id(record: UnipuncRecord) -> str:
    """A Kaldi utterance id for a record: its merged segment ids without spaces and the
    trailing comma (``"ted_799_24,ted_799_25,"`` -> ``ted_799_24+ted_799_25``)."""
    parts = [p.strip() for p in record.id.split(",") if p.strip()]
    return "+".join(parts)
