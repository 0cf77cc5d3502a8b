"""The one map of annotation and non-speech tokens (``<breath>``, ``[noise]``, ``(())``).

Real transcripts and ASR output carry tokens that are no words: noise and event tags,
silence tokens, hesitation marks. A :class:`NonSpeechMap` decides, for one corpus, which
tokens are *non-speech* and which stand for an *unintelligible word*:

- a non-speech token is left out of the word sequence that is punctuated, aligned and
  scored (it neither carries nor receives a mark); aligners treat its time as silence,
  so it counts into the pause between the words around it; ``restore`` passes it through
  untouched at its position;
- an unintelligible token (``(())``, ``<unk>``) stays a word.

Maps are YAML files: the ones shipped with the package live in ``punct/conf/nonspeech/``
(``default.yaml``, ``babel.yaml``), and a path to any other file works the same way
(:func:`load_nonspeech_map`). Keys: ``name``, ``nonspeech`` and ``unintelligible``
(exact tokens, case-insensitive), ``patterns`` and ``unintelligible_patterns`` (Python
regular expressions that must match the whole lower-cased token). Precedence:
unintelligible tokens, non-speech tokens, unintelligible patterns, patterns. The tools
that read transcripts take ``--nonspeech NAME|PATH`` (default ``default``), see
docs/NONSPEECH.md.
"""

from __future__ import annotations

import argparse
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from punct.errors import MissingDataError, PunctInputError

#: Where the shipped maps live (``<name>.yaml``).
MAPS_DIR = Path(__file__).resolve().parent.parent / "conf" / "nonspeech"
DEFAULT_MAP = "default"
KEYS = ("name", "nonspeech", "unintelligible", "patterns", "unintelligible_patterns")
WORD, NONSPEECH, UNINTELLIGIBLE = "word", "nonspeech", "unintelligible"
_CACHE_SIZE = 200_000  # classified tokens remembered per map (a corpus' vocabulary)


@dataclass(frozen=True)
class NonSpeechMap:
    """Which tokens are non-speech and which stay words (see the module docstring)."""

    name: str
    nonspeech: frozenset[str] = frozenset()
    unintelligible: frozenset[str] = frozenset()
    patterns: tuple[re.Pattern[str], ...] = ()
    unintelligible_patterns: tuple[re.Pattern[str], ...] = ()

    # (init=False: a copy made with dataclasses.replace starts its own tables)
    cache: dict[str, str] = field(default_factory=dict, init=False, compare=False, hash=False,
                                  repr=False)
    #: ``punct.engine.symbols.split_tokens``' splits of the tokens met under this map, per
    #: cased state (kept with the map: they go when it goes)
    splits: dict[bool, dict[str, tuple[int, str]]] = field(
        default_factory=dict, init=False, compare=False, hash=False, repr=False)

    def classify(self, token: str) -> str:
        """``"nonspeech"``, ``"unintelligible"`` or ``"word"`` (the precedence of the
        module docstring); results are cached, so a corpus pays once per distinct token."""
        hit = self.cache.get(token)
        if hit is not None:
            return hit
        low = token.lower()
        if low in self.unintelligible:
            kind = UNINTELLIGIBLE
        elif low in self.nonspeech:
            kind = NONSPEECH
        elif any(p.fullmatch(low) for p in self.unintelligible_patterns):
            kind = UNINTELLIGIBLE
        elif any(p.fullmatch(low) for p in self.patterns):
            kind = NONSPEECH
        else:
            kind = WORD
        if len(self.cache) >= _CACHE_SIZE:
            self.cache.clear()
        self.cache[token] = kind
        return kind

    def is_unintelligible(self, token: str) -> bool:
        """Whether ``token`` marks a word nobody could make out (it stays a word)."""
        return self.classify(token) == UNINTELLIGIBLE

    def is_nonspeech(self, token: str) -> bool:
        """Whether ``token`` (without glued punctuation marks) is non-speech."""
        return self.classify(token) == NONSPEECH

    def split_nonspeech(self, tokens: Sequence[str]) -> tuple[list[str], list[tuple[int, str]]]:
        """``(speech tokens, non-speech tokens)``; each non-speech token comes with the
        number of speech tokens before it (its position in the speech sequence)."""
        speech: list[str] = []
        removed: list[tuple[int, str]] = []
        for tok in tokens:
            if self.is_nonspeech(tok):
                removed.append((len(speech), tok))
            else:
                speech.append(tok)
        return speech, removed


def _strings(value: Any, key: str, path: Path) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise PunctInputError(f"{key!r} must be a list of non-empty strings", path,
                              _key_line(path, key))
    return [v.strip() for v in value]


def _key_line(path: Path, key: str) -> int | None:
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith(f"{key}:"):
            return lineno
    return None


def _compile(patterns: list[str], key: str, path: Path) -> tuple[re.Pattern[str], ...]:
    out = []
    for pat in patterns:
        try:
            out.append(re.compile(pat))
        except re.error as err:
            raise PunctInputError(f"{key}: invalid regular expression {pat!r}: {err}", path,
                                  _key_line(path, key)) from None
    return tuple(out)


def read_nonspeech_map(path: str | Path) -> NonSpeechMap:
    """Read one map file; every malformed entry is an error naming the file (and line)."""
    path = Path(path)
    if not path.is_file():
        raise MissingDataError("non-speech map not found", path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        raise PunctInputError(f"invalid YAML: {getattr(err, 'problem', err)}", path,
                              mark.line + 1 if mark is not None else None) from None
    if not isinstance(data, dict):
        raise PunctInputError("a non-speech map must be a YAML mapping", path, 1)
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise PunctInputError(f"unknown key {unknown[0]!r} (known: {', '.join(KEYS)})", path,
                              _key_line(path, unknown[0]))
    exact = {k: [t.lower() for t in _strings(data.get(k), k, path)]
             for k in ("nonspeech", "unintelligible")}
    both = sorted(set(exact["nonspeech"]) & set(exact["unintelligible"]))
    if both:
        raise PunctInputError(f"token {both[0]!r} is listed as nonspeech and as unintelligible",
                              path, _key_line(path, "unintelligible"))
    return NonSpeechMap(
        name=str(data.get("name") or path.stem),
        nonspeech=frozenset(exact["nonspeech"]),
        unintelligible=frozenset(exact["unintelligible"]),
        patterns=_compile(_strings(data.get("patterns"), "patterns", path), "patterns", path),
        unintelligible_patterns=_compile(
            _strings(data.get("unintelligible_patterns"), "unintelligible_patterns", path),
            "unintelligible_patterns", path),
    )


def available_maps() -> list[str]:
    """Names of the maps shipped with the package."""
    return sorted(p.stem for p in MAPS_DIR.glob("*.yaml"))


@functools.lru_cache(maxsize=32)
def _load(key: str) -> NonSpeechMap:
    if "/" in key or key.endswith((".yaml", ".yml")):
        return read_nonspeech_map(key)
    path = MAPS_DIR / f"{key}.yaml"
    if not path.is_file():
        raise MissingDataError(f"unknown non-speech map {key!r} (shipped: "
                               f"{', '.join(available_maps())}; or give a YAML path)", path)
    return read_nonspeech_map(path)


def load_nonspeech_map(name_or_path: str | Path | NonSpeechMap | None = None) -> NonSpeechMap:
    """The map called ``name_or_path`` (a shipped name such as ``babel``, or a YAML path);
    None gives the default map; a map is returned as it is."""
    if isinstance(name_or_path, NonSpeechMap):
        return name_or_path
    if name_or_path is None:
        return _load(DEFAULT_MAP)
    return _load(str(name_or_path))


def default_map() -> NonSpeechMap:
    """The default map (``punct/conf/nonspeech/default.yaml``)."""
    return _load(DEFAULT_MAP)


def add_nonspeech_option(parser: argparse.ArgumentParser) -> None:
    """``--nonspeech NAME|PATH``: the one option by which a tool picks its map."""
    parser.add_argument(
        "--nonspeech", default=DEFAULT_MAP, metavar="NAME|PATH",
        help="map of non-speech and unintelligible tokens: a shipped name "
             f"({', '.join(available_maps())}) or a YAML file (docs/NONSPEECH.md)")
