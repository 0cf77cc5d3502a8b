"""BABEL-layout transcripts and corpus folders.

Layout (IARPA BABEL language packs; a copy of another read-speech corpus converted to it)::

    <root>/[conversational|scripted]/<subset>/audio/<recording>.{sph,wav}
    <root>/[conversational|scripted]/<subset>/transcription/<recording>.txt

with ``<subset>`` e.g. ``training``, ``dev``, ``eval``. A transcript alternates time-stamp
lines ``[12.345]`` and text lines; the text between two time stamps is one segment. Text
keeps the transcription markers as written: tags such as ``<no-speech>``, ``<breath>``,
``<hes>``, unintelligible ``(())`` or uncertain ``((words))``, and ``~``. Which markers
exist and which are non-speech is the shared ``babel`` non-speech map
(``punct.data.nonspeech``); a segment made only of non-speech markers is no utterance.
Bad input raises
:class:`~punct.errors.PunctInputError` naming the file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from punct.data.nonspeech import NonSpeechMap, load_nonspeech_map
from punct.errors import MissingDataError, PunctInputError

TIME_RE = re.compile(r"^\[(\d+(?:\.\d+)?)\]$")
NONSPEECH_MAP = "babel"  # punct/conf/nonspeech/babel.yaml: the BABEL markers
AUDIO_SUFFIXES = (".sph", ".wav")
ID_RE = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class Segment:
    """The text between two time stamps of a transcript (``line``: its text line)."""

    start: float
    end: float
    text: str
    line: int
    is_speech: bool
    """Some token is a word (or an unintelligible word), not only non-speech markers."""


@dataclass(frozen=True)
class Recording:
    """One recording of the corpus copy: audio file, transcript, subset folder name."""

    reco_id: str
    audio: Path
    transcript: Path
    subset: str


def is_tag(token: str) -> bool:
    """A token in the form of a transcription tag (``<...>``) or a broken one."""
    return token.startswith("<") or token.endswith(">")


def check_markers(text: str, path: Path, line: int, ns_map: NonSpeechMap) -> None:
    """Every ``<tag>`` must be one the map lists (non-speech or unintelligible by name);
    unbalanced ``((``/``))`` are errors."""
    known = ns_map.nonspeech | ns_map.unintelligible
    for tok in text.split():
        if is_tag(tok) and tok.lower() not in known:
            tags = " ".join(sorted(t for t in known if t.startswith("<")))
            raise PunctInputError(
                f"unknown transcription marker {tok!r} (the {ns_map.name} non-speech map "
                f"knows {tags})", path, line)
    if text.count("((") != text.count("))"):
        raise PunctInputError("unbalanced (( )) in transcript text", path, line)


def parse_transcript(path: str | Path,
                     nonspeech: NonSpeechMap | str = NONSPEECH_MAP) -> list[Segment]:
    """The segments of a BABEL transcript, in order, time stamps and markers checked
    against the non-speech map ``nonspeech`` (default: the shipped ``babel`` map)."""
    path = Path(path)
    ns_map = load_nonspeech_map(nonspeech)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as err:
        raise PunctInputError(f"not UTF-8: {err.reason} at byte {err.start}", path) from None
    except OSError as err:
        raise MissingDataError(f"cannot read transcript: {err.strerror}", path) from None
    segments: list[Segment] = []
    start: float | None = None
    start_line = 0
    text: tuple[str, int] | None = None
    for lineno, raw in enumerate(lines, start=1):
        line = raw.strip()
        if line.startswith("["):
            m = TIME_RE.match(line)
            if not m:
                raise PunctInputError(f"malformed time stamp {line!r} (expected [seconds])",
                                      path, lineno)
            stamp = float(m.group(1))
            if start is not None:
                if stamp <= start:
                    raise PunctInputError(
                        f"time stamp {stamp} does not follow {start} (line {start_line})",
                        path, lineno)
                if text is None:
                    raise PunctInputError(f"empty segment [{start}]-[{stamp}] (no text line)",
                                          path, lineno)
                speech = any(not ns_map.is_nonspeech(tok) for tok in text[0].split())
                segments.append(Segment(start, stamp, text[0], text[1], speech))
            start, start_line, text = stamp, lineno, None
            continue
        if start is None:
            raise PunctInputError("text before the first time stamp", path, lineno)
        if not line:
            raise PunctInputError(f"empty segment after [{start}] (blank text line)",
                                  path, lineno)
        if text is not None:
            raise PunctInputError(f"two text lines in the segment starting at [{start}]",
                                  path, lineno)
        check_markers(line, path, lineno, ns_map)
        text = (" ".join(line.split()), lineno)
    if text is not None:
        raise PunctInputError("the last segment has no closing time stamp", path, text[1])
    if not segments:
        raise PunctInputError("no segments (a transcript alternates [time] and text lines)",
                              path)
    return segments


def find_recordings(root: str | Path) -> list[Recording]:
    """Every transcript under ``root`` (in ``.../transcription/``) with its audio file in
    the sibling ``audio/`` folder; sorted by recording id, ids unique."""
    root = Path(root)
    if not root.is_dir():
        raise MissingDataError("corpus folder not found", root)
    recordings: dict[str, Recording] = {}
    for trans_dir in sorted(p for p in root.rglob("transcription") if p.is_dir()):
        audio_dir = trans_dir.parent / "audio"
        for txt in sorted(trans_dir.glob("*.txt")):
            audio = next((audio_dir / f"{txt.stem}{s}" for s in AUDIO_SUFFIXES
                          if (audio_dir / f"{txt.stem}{s}").is_file()), None)
            if audio is None:
                raise MissingDataError(
                    f"no audio {txt.stem}.sph or {txt.stem}.wav in {audio_dir}", txt)
            if not ID_RE.match(txt.stem):
                raise PunctInputError(
                    f"recording id {txt.stem!r} is not a Kaldi id (letters, digits, _ - . only)",
                    txt)
            if txt.stem in recordings:
                raise PunctInputError(
                    f"recording {txt.stem} also in {recordings[txt.stem].transcript}", txt)
            recordings[txt.stem] = Recording(txt.stem, audio, txt, trans_dir.parent.name)
    if not recordings:
        raise MissingDataError(
            "no transcripts found (expected <subset>/transcription/*.txt beside "
            "<subset>/audio/*.sph|wav)", root)
    return [recordings[k] for k in sorted(recordings, key=lambda k: k.encode("utf-8"))]
