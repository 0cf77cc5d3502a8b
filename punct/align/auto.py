"""``auto``: the aligner per language, from a small table (``conf/align.yaml``).

The table maps utt2lang codes to an aligner name or a list of names (a fallback chain),
with a default for other languages and for utterances without a language::

    default: dtw
    languages:
      en: [pocketsphinx, dtw]
      es: dtw

Each named aligner is built once, on first use, with the options ``auto`` was given
(e.g. ``ctc_model``). In a chain, an aligner that fails on an utterance with a
PunctInputError (e.g. pocketsphinx cannot reach the end of a long recording) hands it to
the next one, with a warning; the last one's error stands (a transcript that does not
fit the audio fails every aligner). Missing audio fails at once.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from punct.align.base import (
    Aligner,
    AlignRequest,
    AlignResult,
    available_aligners,
    get_aligner,
)
from punct.errors import MissingDataError, PunctInputError

#: The recipe's table (written from the aligner comparison, docs/ALIGNERS.md), shipped in
#: the package; conf/align.yaml is a link to it.
DEFAULT_TABLE = Path(__file__).resolve().parents[1] / "conf" / "align.yaml"


def _line_of(path: Path, key: str) -> int | None:
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip().startswith(f"{key}:"):
            return lineno
    return None


def _chain(value: object) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else (str(value),)


def read_table(path: str | Path) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    """(default chain, {language: chain}) from a YAML table; names are checked."""
    path = Path(path)
    if not path.is_file():
        raise MissingDataError("aligner table not found", path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        raise PunctInputError(f"invalid YAML: {err}", path,
                              mark.line + 1 if mark else None) from err
    if not isinstance(data, dict) or not isinstance(data.get("languages", {}), dict):
        raise PunctInputError("expected 'default: <aligner>' and 'languages: {code: aligner}'",
                              path)
    known = [a for a in available_aligners() if a != "auto"]
    default = _chain(data.get("default", "dtw"))
    langs = {str(k).lower(): _chain(v) for k, v in (data.get("languages") or {}).items()}
    for key, chain in [("default", default), *langs.items()]:
        for name in chain:
            if name not in known:
                raise PunctInputError(f"{key}: unknown aligner {name!r}; known: "
                                      f"{', '.join(known)}", path, _line_of(path, key))
        if not chain:
            raise PunctInputError(f"{key}: empty aligner list", path, _line_of(path, key))
    return default, langs


class AutoAligner(Aligner):
    """Delegates each utterance to the aligner its language is mapped to."""

    name = "auto"

    def __init__(self, align_table: str | Path | None = None, **options: Any):
        self.table_path = Path(align_table) if align_table else DEFAULT_TABLE
        self.default, self.languages = read_table(self.table_path)
        self.options = options
        self._built: dict[str, Aligner] = {}

    def choose(self, lang: str | None) -> tuple[str, ...]:
        """The aligner chain for an utt2lang code (the default when unknown or None)."""
        return self.languages.get((lang or "").lower(), self.default)

    def align(self, request: AlignRequest) -> AlignResult | None:
        chain = self.choose(request.lang)
        for i, name in enumerate(chain):
            if name not in self._built:
                self._built[name] = get_aligner(name, **self.options)
            try:
                return self._built[name].align(request)
            except MissingDataError:
                raise
            except PunctInputError as err:
                if i + 1 == len(chain):
                    raise
                print(f"warning: {name} failed ({err.message}); trying {chain[i + 1]}",
                      file=sys.stderr)
        return None  # pragma: no cover - the chain is never empty
