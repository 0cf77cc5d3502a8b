"""The mintzai-ST corpus (Basque Parliament, Etchegoyhen et al. 2021): its layout, read
defensively.

Source: https://datasets.vicomtech.org/v2-mintzai-st/mintzai-st-corpus_v1.0.tar.gz
(about 25 GB; CC BY-NC-ND 4.0, Fundación Vicomtech). The expected layout, known only
indirectly (no public sample exists)::

    [MintzAI-ST/]v1.0/<src>-<tgt>/<split>/audio/<segment>.m4a
    [MintzAI-ST/]v1.0/<src>-<tgt>/<split>/transcriptions/<segment>.<src>
    [MintzAI-ST/]v1.0/<src>-<tgt>/<split>/translations/<segment>.<tgt>   (not used)

``es-eu`` holds Spanish speech, ``eu-es`` Basque speech. ``.wav`` and ``.flac`` segments
are read as well as ``.m4a`` (the test fixture uses them where no AAC encoder exists).
Anything else stops with a :class:`LayoutError` that lists what was found, so that the
reader can be adapted to the real tarball without guessing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from punct.errors import MissingDataError, PunctInputError

VERSION_DIR = "v1.0"
CONTAINERS = ("MintzAI-ST", "mintzai-ST", "mintzai-st", "mintzai-st-corpus_v1.0")
"""Folders that may wrap ``v1.0`` in the tarball."""
DIRECTIONS = {"es-eu": "es", "eu-es": "eu"}
"""Direction folder -> language of its speech and transcriptions."""
SPLITS = ("train", "dev", "test")
SPLIT_ALIASES = {"train": "train", "training": "train", "dev": "dev", "devel": "dev",
                 "development": "dev", "valid": "dev", "validation": "dev", "test": "test",
                 "tst": "test", "eval": "test"}
AUDIO_DIRS = ("audio", "audios", "wav")
TEXT_DIRS = ("transcriptions", "transcription", "transcripts")
OTHER_DIRS = ("translations", "translation")
AUDIO_SUFFIXES = (".m4a", ".wav", ".flac")


class LayoutError(PunctInputError):
    """The corpus copy is not laid out as expected; the message lists what was found."""


@dataclass(frozen=True)
class Segment:
    """One transcribed audio segment."""

    utt_id: str
    lang: str
    split: str
    audio: Path
    text: str
    text_path: Path


@dataclass
class SplitScan:
    """What one ``v1.0/<direction>/<split>`` folder holds."""

    direction: str
    lang: str
    split: str
    folder: Path
    segments: list[Segment] = field(default_factory=list)
    audio_only: list[str] = field(default_factory=list)
    text_only: list[str] = field(default_factory=list)
    empty_text: list[str] = field(default_factory=list)


def describe(path: Path, depth: int = 4, max_dirs: int = 8) -> str:
    """A short listing of a folder tree: sub-folders to ``depth`` levels and, per folder,
    its file count by suffix (``12 x .m4a``)."""
    lines: list[str] = []

    def walk(folder: Path, level: int) -> None:
        try:
            entries = sorted(folder.iterdir())
        except OSError as err:
            lines.append(f"{'  ' * level}{folder.name}/ (unreadable: {err.strerror})")
            return
        dirs = [e for e in entries if e.is_dir()]
        suffixes = Counter(e.suffix or "(no suffix)" for e in entries if e.is_file())
        files = ", ".join(f"{n} x {s}" for s, n in sorted(suffixes.items()))
        lines.append(f"{'  ' * level}{folder.name}/" + (f"  [{files}]" if files else ""))
        if level + 1 >= depth:
            if dirs:
                lines.append(f"{'  ' * (level + 1)}({len(dirs)} folders not shown)")
            return
        for sub in dirs[:max_dirs]:
            walk(sub, level + 1)
        if len(dirs) > max_dirs:
            lines.append(f"{'  ' * (level + 1)}... {len(dirs) - max_dirs} more folders")

    walk(path, 0)
    return "\n".join(lines)


def layout_error(message: str, folder: Path) -> LayoutError:
    """A :class:`LayoutError` whose message lists the folder's content."""
    expected = ("expected v1.0/<es-eu|eu-es>/<train|dev|test>/{audio/*.m4a, "
                "transcriptions/*.<es|eu>} (see local/mintzai_st/README.md)")
    return LayoutError(f"{message}; {expected}. Found:\n{describe(folder)}", folder)


def find_root(path: str | Path) -> Path:
    """The folder that holds ``v1.0`` in a corpus copy (itself, a known wrapper folder, or
    its only sub-folder)."""
    path = Path(path)
    if not path.is_dir():
        raise MissingDataError("mintzai-ST copy not found (run stage 0)", path)
    candidates = [path, *(path / c for c in CONTAINERS)]
    subdirs = [d for d in sorted(path.iterdir()) if d.is_dir()]
    if len(subdirs) == 1:
        candidates.append(subdirs[0])
    for cand in candidates:
        if (cand / VERSION_DIR).is_dir():
            return cand
    raise layout_error(f"no {VERSION_DIR}/ folder", path)


def read_transcription(path: Path) -> str:
    """A segment's transcription: its non-empty lines joined by spaces (UTF-8, BOM
    dropped); "" when it has no text."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        raise PunctInputError(f"not UTF-8 (byte {err.start}): {err.reason}", path) from None
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def _pick(folder: Path, names: tuple[str, ...]) -> Path | None:
    for name in names:
        if (folder / name).is_dir():
            return folder / name
    return None


def _files_by_stem(folder: Path, suffixes: tuple[str, ...], split_dir: Path,
                   what: str) -> dict[str, Path]:
    files = [f for f in sorted(folder.iterdir()) if f.is_file() and not f.name.startswith(".")]
    chosen = [f for f in files if f.suffix.lower() in suffixes]
    if files and not chosen:
        raise layout_error(f"{folder} holds no {what} ({' or '.join(suffixes)} files)",
                           split_dir)
    out: dict[str, Path] = {}
    for f in chosen:
        if any(ch.isspace() for ch in f.stem):
            raise PunctInputError("segment name with white space (not a valid utterance id)",
                                  f)
        if f.stem in out:
            raise PunctInputError(f"two {what} files for segment {f.stem!r}: "
                                  f"{out[f.stem].name} and {f.name}", folder)
        out[f.stem] = f
    return out


def scan_split(direction_dir: Path, split_dir: Path, split: str) -> SplitScan:
    """Pair the audio segments of one split folder with their transcriptions."""
    lang = DIRECTIONS[direction_dir.name]
    scan = SplitScan(direction_dir.name, lang, split, split_dir)
    audio_dir, text_dir = _pick(split_dir, AUDIO_DIRS), _pick(split_dir, TEXT_DIRS)
    if audio_dir is None or text_dir is None:
        missing = " and ".join(n for n, d in (("audio/", audio_dir), ("transcriptions/",
                                                                     text_dir)) if d is None)
        raise layout_error(f"{split_dir} has no {missing}", direction_dir)
    audio = _files_by_stem(audio_dir, AUDIO_SUFFIXES, split_dir, "audio")
    texts = _files_by_stem(text_dir, (f".{lang}",), split_dir, f"transcription (.{lang})")
    for stem in sorted(set(audio) | set(texts)):
        if stem not in texts:
            scan.audio_only.append(stem)
            continue
        if stem not in audio:
            scan.text_only.append(stem)
            continue
        text = read_transcription(texts[stem])
        if not text:
            scan.empty_text.append(stem)
            continue
        utt = f"{lang}_{split}_{stem}"
        scan.segments.append(Segment(utt, lang, split, audio[stem].resolve(), text,
                                     texts[stem]))
    if not scan.segments:
        raise layout_error(f"{split_dir}: no segment has both audio and a transcription",
                           split_dir)
    return scan


def scan_corpus(path: str | Path, langs: tuple[str, ...] = ("es", "eu")) -> list[SplitScan]:
    """Every (language, split) of the copy at ``path``, in (language, split) order.

    Each requested language must have its direction folder with train, dev and test;
    folders with other names stop the scan (with a listing), so an unexpected layout is
    never read half-way.
    """
    root = find_root(path)
    version = root / VERSION_DIR
    found = {d.name: d for d in sorted(version.iterdir()) if d.is_dir()}
    unknown = sorted(set(found) - set(DIRECTIONS))
    if unknown:
        raise layout_error(f"unknown direction folder(s) {', '.join(unknown)} in {version}",
                           version)
    scans = []
    for direction, lang in DIRECTIONS.items():
        if lang not in langs:
            continue
        if direction not in found:
            raise layout_error(f"no {direction}/ folder ({lang} speech) in {version}", version)
        splits: dict[str, Path] = {}
        for sub in sorted(p for p in found[direction].iterdir() if p.is_dir()):
            split = SPLIT_ALIASES.get(sub.name.lower())
            if split is None:
                raise layout_error(f"unknown split folder {sub.name!r} in {found[direction]}",
                                   found[direction])
            if split in splits:
                raise layout_error(f"two folders for split {split}: {splits[split].name} and "
                                   f"{sub.name}", found[direction])
            splits[split] = sub
        missing = [s for s in SPLITS if s not in splits]
        if missing:
            raise layout_error(f"{found[direction]} lacks the split(s) {', '.join(missing)}",
                               found[direction])
        scans.extend(scan_split(found[direction], splits[s], s) for s in SPLITS)
    return scans
