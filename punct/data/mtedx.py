"""Readers of the TED speech corpora of UniPunc: Multilingual TEDx and MuST-C.

mTEDx (OpenSLR 100, CC BY-NC-ND 4.0), one archive per language ``mtedx_<lang>.tgz``::

    <lang>-<lang>/data/{train,valid,test}/wav/<talk>.flac       talk-level audio
    <lang>-<lang>/data/<split>/txt/segments                     <seg> <talk> <start> <end>
    <lang>-<lang>/data/<split>/txt/<split>.<lang>               one transcript per segment

MuST-C (licence-gated, CC BY-NC-ND 4.0), one folder per target language ``en-xx``::

    en-xx/data/{train,dev,tst-COMMON}/wav/<talk>.wav
    en-xx/data/<split>/txt/<split>.yaml   - {duration: 3.5, offset: 16.1, rW: 9, uW: 0,
                                             speaker_id: spk.767, wav: ted_767.wav}
    en-xx/data/<split>/txt/<split>.en     one English transcript per yaml line

Both give :class:`Segment` lists in corpus order. Transcripts are cased and punctuated;
:func:`clean_transcript` removes sound events such as ``(Aplausos)`` / ``(Laughter)``
and what the label parser does not model. A MuST-C segment's id is
``<talk>_<index within the talk>`` (counted from 0), the ids of the UniPunc JSONL files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from punct.data.szeged import CleanStats, clean_text
from punct.errors import MissingDataError, PunctInputError
from punct.kaldi import read_segments
from punct.wordtable import read_text_lines

MTEDX_SPLITS = ("train", "valid", "test")
MUSTC_SPLITS = ("train", "dev", "tst-COMMON")
SOUND_EVENT = re.compile(r"\([^()]*\)")
YAML_KEYS = ("duration", "offset", "wav")


@dataclass(frozen=True)
class Segment:
    """One transcribed stretch of a talk: times in seconds, ``line`` of its transcript."""

    utt_id: str
    talk: str
    audio: Path
    start: float
    end: float
    text: str
    speaker: str
    path: Path
    line: int


def clean_transcript(text: str, stats: CleanStats | None = None) -> str:
    """A transcript without sound events (``(Risas)``) and unmodelled symbols."""
    stats = stats if stats is not None else CleanStats()
    events = SOUND_EVENT.findall(text)
    stats.tokens_dropped += len(events)
    return clean_text(SOUND_EVENT.sub(" ", text), stats)


def _transcripts(path: Path, count: int, index: Path) -> list[str]:
    if not path.is_file():
        raise MissingDataError("transcript file not found", path)
    lines = read_text_lines(path)
    if len(lines) != count:
        raise PunctInputError(f"{len(lines)} transcript lines for {count} segments in "
                              f"{index}", path, min(len(lines), count) + 1)
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            raise PunctInputError("empty transcript line", path, lineno)
    return [line.strip() for line in lines]


def mtedx_split_dir(root: Path, lang: str, split: str) -> Path:
    """``<root>/<lang>-<lang>/data/<split>`` (``root`` may also be the ``<lang>-<lang>`` dir)."""
    base = root if root.name == f"{lang}-{lang}" else root / f"{lang}-{lang}"
    return base / "data" / split


def read_mtedx_split(root: Path, lang: str, split: str) -> list[Segment]:
    """The segments of one mTEDx split (``train``, ``valid`` or ``test``)."""
    split_dir = mtedx_split_dir(root, lang, split)
    seg_path = split_dir / "txt" / "segments"
    if not seg_path.is_file():
        raise MissingDataError(f"mTEDx {lang} {split} segments not found (stage 0; MTEDX in "
                               "conf/db.sh)", seg_path)
    segs = read_segments(seg_path)
    texts = _transcripts(split_dir / "txt" / f"{split}.{lang}", len(segs), seg_path)
    out = []
    for (utt, (talk, start, end, lineno)), text in zip(segs.items(), texts, strict=True):
        if end < 0:
            raise PunctInputError(f"segment {utt}: open end {end} (mTEDx segments have an "
                                  "end time)", seg_path, lineno)
        out.append(Segment(utt, talk, split_dir / "wav" / f"{talk}.flac", start, end, text,
                           talk, split_dir / "txt" / f"{split}.{lang}", lineno))
    return out


def parse_mustc_yaml_line(text: str, path: Path, line: int) -> dict[str, object]:
    """One line ``- {duration: .., offset: .., wav: .., ...}`` of a MuST-C yaml file."""
    if not text.startswith("- "):
        raise PunctInputError("expected '- {duration: ..., offset: ..., wav: ...}'", path, line)
    try:
        item = yaml.safe_load(text[2:])
    except yaml.YAMLError as err:
        raise PunctInputError(f"invalid YAML: {str(err).splitlines()[0]}", path, line) from None
    if not isinstance(item, dict):
        raise PunctInputError("expected a mapping after '- '", path, line)
    missing = [k for k in YAML_KEYS if k not in item]
    if missing:
        raise PunctInputError(f"missing key(s) {', '.join(missing)}", path, line)
    for key in ("duration", "offset"):
        value = item[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise PunctInputError(f"{key} must be a non-negative number, found {value!r}",
                                  path, line)
    if item["duration"] == 0:
        raise PunctInputError("duration 0", path, line)
    if not isinstance(item["wav"], str) or not item["wav"].strip():
        raise PunctInputError(f"bad wav {item['wav']!r}", path, line)
    return item


def read_mustc_yaml(path: Path) -> list[dict[str, object]]:
    """All segment entries of a MuST-C ``<split>.yaml``, with their line numbers (``line``)."""
    if not path.is_file():
        raise MissingDataError("MuST-C segment file not found (MUSTC in conf/db.sh)", path)
    items = []
    for lineno, text in enumerate(read_text_lines(path), start=1):
        if not text.strip():
            raise PunctInputError("empty line", path, lineno)
        item = parse_mustc_yaml_line(text.rstrip("\n"), path, lineno)
        item["line"] = lineno
        items.append(item)
    return items


def read_mustc_split(root: Path, split: str) -> list[Segment]:
    """The segments of one MuST-C split of ``root`` (an ``en-xx`` folder)."""
    split_dir = root / "data" / split
    yaml_path = split_dir / "txt" / f"{split}.yaml"
    items = read_mustc_yaml(yaml_path)
    texts = _transcripts(split_dir / "txt" / f"{split}.en", len(items), yaml_path)
    counters: dict[str, int] = {}
    out = []
    for item, text in zip(items, texts, strict=True):
        wav = str(item["wav"])
        talk = Path(wav).stem
        index = counters.get(talk, 0)
        counters[talk] = index + 1
        start = float(item["offset"])  # type: ignore[arg-type]
        end = start + float(item["duration"])  # type: ignore[arg-type]
        speaker = str(item.get("speaker_id") or talk)
        out.append(Segment(f"{talk}_{index}", talk, split_dir / "wav" / wav, start, end, text,
                           speaker, split_dir / "txt" / f"{split}.en", int(item["line"])))
    return out
