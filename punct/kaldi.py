"""Kaldi data directories: key-value files, sorting, validation."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from punct.atomic import atomic_open, atomic_write_text
from punct.errors import MissingDataError, PunctInputError
from punct.wordtable import (
    WordRow,
    read_text_lines,
    read_word_table,
    render_rows,
    write_word_table,
)

REQUIRED_FILES = ("text", "utt2spk", "spk2utt", "words.tsv")


def c_sorted(keys: Iterable[str]) -> list[str]:
    """Sort as ``LC_ALL=C sort`` does (by UTF-8 bytes)."""
    return sorted(keys, key=lambda k: k.encode("utf-8"))


def read_kv(path: str | Path) -> dict[str, str]:
    """Read ``key value...`` lines; the value is the rest of the line after one space."""
    return {key: value for key, (value, _) in read_kv_lines(path).items()}


def read_kv_lines(path: str | Path, what: str = "<key> <value>") -> dict[str, tuple[str, int]]:
    """``key -> (value, line number)`` of a key/value file (value: the rest of the line,
    stripped): the one reader of Kaldi's key/value files. Empty lines, lines without a
    value (``what`` describes a line) and duplicate keys are errors naming the line."""
    path = Path(path)
    out: dict[str, tuple[str, int]] = {}
    for lineno, line in enumerate(read_text_lines(path), start=1):
        if not line.strip():
            raise PunctInputError("empty line", path, lineno)
        key, _, value = line.strip().partition(" ")
        if not value.strip():
            raise PunctInputError(f"expected '{what}'", path, lineno)
        if key in out:
            raise PunctInputError(f"duplicate key {key!r}", path, lineno)
        out[key] = (value.strip(), lineno)
    return out


def read_wav_scp(path: str | Path) -> dict[str, tuple[str, int]]:
    """``wav.scp``: recording -> (wav path or command ending in ``|``, line number)."""
    return read_kv_lines(path, "<recording> <wav path or command |>")


def read_segments(path: str | Path) -> dict[str, tuple[str, float, float, int]]:
    """``segments``: utterance -> (recording, start, end, line number); a negative end
    means "to the end of the recording" (Kaldi)."""
    out: dict[str, tuple[str, float, float, int]] = {}
    for utt, (value, lineno) in read_kv_lines(path, "<utt> <recording> <start> <end>").items():
        fields = value.split()
        if len(fields) != 3:
            raise PunctInputError(f"expected '<utt> <recording> <start> <end>', found "
                                  f"{len(fields) + 1} fields", path, lineno)
        reco, s, e = fields
        try:
            start, end = float(s), float(e)
        except ValueError:
            raise PunctInputError(f"non-numeric times {s!r} {e!r}", path, lineno) from None
        if start < 0 or (0 <= end <= start):
            raise PunctInputError(f"bad segment times {s} {e}", path, lineno)
        out[utt] = (reco, start, end, lineno)
    return out


def read_utt2lang(path: str | Path, missing_ok: bool = False) -> dict[str, str]:
    """``utt2lang`` (``<utt_id> <lang>`` per line); empty when absent and ``missing_ok``."""
    path = Path(path)
    if missing_ok and not path.is_file():
        return {}
    out: dict[str, str] = {}
    for utt, (value, lineno) in read_kv_lines(path, "<utt_id> <lang>").items():
        if len(value.split()) != 1:
            raise PunctInputError(f"expected '<utt_id> <lang>', found {value!r} after the id",
                                  path, lineno)
        out[utt] = value
    return out


def write_kv(path: str | Path, mapping: Mapping[str, str]) -> None:
    """Write ``key value`` lines sorted under LC_ALL=C, atomically."""
    path = Path(path)
    with atomic_open(path, "w", newline="\n") as out:
        for key in c_sorted(mapping):
            value = mapping[key]
            if not key or any(ch.isspace() for ch in key) or "\n" in value:
                raise ValueError(f"bad key/value {key!r} {value!r} for {path}")
            out.write(f"{key} {value}\n")


def spk2utt_from_utt2spk(utt2spk: Mapping[str, str]) -> dict[str, str]:
    """Invert utt2spk, utterances sorted."""
    groups: dict[str, list[str]] = {}
    for utt in c_sorted(utt2spk):
        groups.setdefault(utt2spk[utt], []).append(utt)
    return {spk: " ".join(utts) for spk, utts in groups.items()}


#: A data dir whose utterances are cut out of a longer stream (fixed-size blocks of a
#: talk) holds this file: an utterance's end is not a document's end, so decoding does
#: not require a sentence-final mark there (``punct.engine.constraints``).
MID_STREAM_FILE = "mid_stream"

#: Files that describe how a data dir is scored and decoded; sets derived from it (its
#: ASR condition, a rendered copy) carry them over.
SET_MARKERS = ("score_label_set", MID_STREAM_FILE)


def ends_mid_stream(data_dir: str | Path) -> bool:
    """Whether the utterances of ``data_dir`` end mid-stream (see ``MID_STREAM_FILE``)."""
    return (Path(data_dir) / MID_STREAM_FILE).is_file()


def mark_mid_stream(data_dir: str | Path, why: str) -> None:
    """Mark ``data_dir``'s utterances as cuts of a longer stream (``why``: one line)."""
    atomic_write_text(Path(data_dir) / MID_STREAM_FILE, why.strip() + "\n")


def copy_set_markers(src: str | Path, dst: str | Path) -> None:
    """Carry ``SET_MARKERS`` of the data dir ``src`` over to ``dst`` (where present)."""
    for name in SET_MARKERS:
        if (Path(src) / name).is_file():
            atomic_write_text(Path(dst) / name, (Path(src) / name).read_text(encoding="utf-8"))


def write_word_dir(data_dir: str | Path, words: Mapping[str, Sequence[WordRow]],
                   utt2spk: Mapping[str, str], utt2lang: Mapping[str, str]) -> None:
    """The text side of a data dir from its word rows: ``text`` (the rows rendered),
    ``utt2spk``, ``spk2utt``, ``utt2lang`` and ``words.tsv``."""
    data_dir = Path(data_dir)
    write_kv(data_dir / "text", {u: render_rows(rows) for u, rows in words.items()})
    write_kv(data_dir / "utt2spk", utt2spk)
    write_kv(data_dir / "spk2utt", spk2utt_from_utt2spk(utt2spk))
    write_kv(data_dir / "utt2lang", utt2lang)
    write_word_table(data_dir / "words.tsv", words)


def _check_sorted(path: Path) -> None:
    keys = [line.split(" ", 1)[0] for line in read_text_lines(path)]
    for lineno, (a, b) in enumerate(itertools.pairwise(keys), start=2):
        if a.encode("utf-8") >= b.encode("utf-8"):
            raise PunctInputError(f"not sorted (LC_ALL=C) or duplicate: {a!r} then {b!r}",
                                  path, lineno)


def validate_data_dir(data_dir: str | Path, need_audio: bool = False) -> dict[str, int]:
    """Check a data dir is complete, sorted and consistent; return counts."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise MissingDataError("data directory not found", data_dir)
    needed = list(REQUIRED_FILES) + (["wav.scp"] if need_audio else [])
    for name in needed:
        if not (data_dir / name).is_file():
            raise MissingDataError(f"missing {name} in data directory", data_dir)
    for name in ("text", "utt2spk", "spk2utt", "wav.scp", "segments", "utt2lang"):
        if (data_dir / name).is_file():
            _check_sorted(data_dir / name)
    text = read_kv(data_dir / "text")
    utt2spk = read_kv(data_dir / "utt2spk")
    if set(text) != set(utt2spk):
        raise PunctInputError("text and utt2spk list different utterances", data_dir / "utt2spk")
    spk2utt = read_kv(data_dir / "spk2utt")
    if spk2utt != spk2utt_from_utt2spk(utt2spk):
        raise PunctInputError("spk2utt is not the inverse of utt2spk", data_dir / "spk2utt")
    if (data_dir / "utt2lang").is_file() and set(read_kv(data_dir / "utt2lang")) != set(text):
        raise PunctInputError("utt2lang does not list the same utterances as text",
                              data_dir / "utt2lang")
    words = read_word_table(data_dir / "words.tsv")
    if set(words) != set(text):
        missing = sorted(set(text) ^ set(words))[:3]
        raise PunctInputError(f"words.tsv and text differ in utterances, e.g. {missing}",
                              data_dir / "words.tsv")
    for lineno, utt in enumerate(c_sorted(text), start=1):
        if render_rows(words[utt]) != text[utt]:
            raise PunctInputError(
                f"utterance {utt}: words.tsv does not render to the text line", data_dir / "text",
                lineno,
            )
    if (data_dir / "wav.scp").is_file():
        wavs = read_kv(data_dir / "wav.scp")
        # A mixed-modality set (UniPunc) lists its utterances without audio in withheld.
        withheld = {u.strip() for u in read_text_lines(data_dir / "withheld")} \
            if (data_dir / "withheld").is_file() else set()
        if (data_dir / "segments").is_file():
            segments = read_kv(data_dir / "segments")
            if not set(segments) <= set(text) or set(text) - set(segments) - withheld:
                raise PunctInputError("segments and text list different utterances "
                                      "(utterances without audio belong in withheld)",
                                      data_dir / "segments")
            for lineno, utt in enumerate(c_sorted(segments), start=1):
                reco = segments[utt].split()[0]
                if reco not in wavs:
                    raise PunctInputError(f"recording {reco!r} not in wav.scp",
                                          data_dir / "segments", lineno)
        elif not set(wavs) <= set(text) or set(text) - set(wavs) - withheld:
            raise PunctInputError("wav.scp and text list different utterances",
                                  data_dir / "wav.scp")
    return {"utterances": len(text), "speakers": len(spk2utt),
            "words": sum(len(r) for r in words.values())}
