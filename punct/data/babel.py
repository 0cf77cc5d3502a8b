"""BABEL-layout transcripts and corpus folders.

Layout (IARPA BABEL language packs; a copy of another read-speech corpus converted to it)::

    <root>/[conversational|scripted]/<subset>/audio/<recording>.{sph,wav}
    <root>/[conversational|scripted]/<subset>/transcription/<recording>.txt

with ``<subset>`` e.g. ``training``, ``dev``, ``eval``. A transcript alternates time-stamp
lines ``[12.345]`` and text lines; the text between two time stamps is one segment. Text
keeps the transcription markers as written: tags such as ``<no-speech>``, ``<breath>``,
``<hes>``, unintelligible ``(())`` or uncertain ``((words))``, and ``~``. A segment
made only of markers is no utterance. Bad input raises
:class:`~punct.errors.PunctInputError` naming the file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from punct.errors import MissingDataError, PunctInputError

TIME_RE = re.compile(r"^\[(\d+(?:\.\d+)?)\]$")
# The tags of the BABEL transcription conventions (non-speech events, speaker noises,
# hesitation, foreign speech, overlaps, prompts); anything else in <...> is an error.
TAGS = frozenset({
    "no-speech", "breath", "cough", "laugh", "lipsmack", "click", "ring", "dtmf", "sta",
    "int", "hes", "foreign", "overlap", "prompt", "male-to-female", "female-to-male",
    "noise", "silence", "v-noise", "unk",
})
UNINTELLIGIBLE_RE = re.compile(r"^\(\((.*)\)\)$")
AUDIO_SUFFIXES = (".sph", ".wav")
ID_RE = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class Segment:
    """The text between two time stamps of a transcript (``line``: its text line)."""

    start: float
    end: float
    text: str
    line: int

    @property
    def is_speech(self) -> bool:
        """True when some token is a word rather than a transcription marker."""
        return any(not is_marker(tok) for tok in self.text.split())


@dataclass(frozen=True)
class Recording:
    """One recording of the corpus copy: audio file, transcript, subset folder name."""

    reco_id: str
    audio: Path
    transcript: Path
    subset: str


def is_marker(token: str) -> bool:
    """A transcription marker: ``<tag>``, ``((...))``, ``(())`` or ``~``."""
    return token == "~" or (token.startswith("<") and token.endswith(">")) \
        or bool(UNINTELLIGIBLE_RE.match(token))


def check_markers(text: str, path: Path, line: int) -> None:
    """Every ``<tag>`` must be a known tag; unbalanced ``<``/``((`` are errors."""
    for tok in text.split():
        if tok.startswith("<") or tok.endswith(">"):
            name = tok[1:-1] if tok.startswith("<") and tok.endswith(">") else None
            if name is None or name not in TAGS:
                raise PunctInputError(
                    f"unknown transcription marker {tok!r} (known tags: "
                    f"{' '.join(f'<{t}>' for t in sorted(TAGS))})", path, line)
    opened = text.count("((")
    if opened != text.count("))"):
        raise PunctInputError("unbalanced (( )) in transcript text", path, line)


def parse_transcript(path: str | Path) -> list[Segment]:
    """The segments of a BABEL transcript, in order, time stamps checked."""
    path = Path(path)
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
                segments.append(Segment(start, stamp, text[0], text[1]))
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
        check_markers(line, path, lineno)
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
