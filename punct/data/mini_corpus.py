"""Parser of the embedded mini corpus (``local/mini/corpus/<lang>.txt``).

Format (UTF-8): lines starting with ``#`` are comments; a document starts with
``@doc <doc_id> <split>`` (split: train, dev or test) and continues with one
sentence per line; a blank line ends it. The file name gives the language.
Every sentence is checked with ``punct.labels.parse_text`` so that a bad mark is
reported with its file and line here rather than later.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from punct.errors import MissingDataError, PunctInputError
from punct.labels import parse_text
from punct.wordtable import read_text_lines

SPLITS = ("train", "dev", "test")
LANGS = ("en", "es", "eu", "hu")


@dataclass
class Doc:
    """One document: its sentences in file order, and where it starts (``@doc`` line)."""

    doc_id: str
    lang: str
    split: str
    sentences: list[str]
    path: str
    line: int


def parse_corpus_file(path: str | Path, lang: str | None = None) -> list[Doc]:
    """Documents of one corpus file; ``lang`` defaults to the file name's stem."""
    path = Path(path)
    lang = lang if lang is not None else path.stem
    docs: list[Doc] = []
    seen: dict[str, int] = {}
    current: Doc | None = None

    def close() -> None:
        if current is not None and not current.sentences:
            raise PunctInputError(
                f"document {current.doc_id!r} has no sentences", path, current.line
            )

    for number, raw_line in enumerate(read_text_lines(path), start=1):
        line = raw_line.rstrip("\r")
        stripped = line.strip()
        if stripped.startswith("#"):
            continue
        if not stripped:
            close()
            current = None
            continue
        if stripped.startswith("@"):
            fields = stripped.split()
            if fields[0] != "@doc" or len(fields) != 3:
                raise PunctInputError(
                    f"bad document line {stripped!r}: expected '@doc <doc_id> <split>'",
                    path,
                    number,
                )
            _, doc_id, split = fields
            if split not in SPLITS:
                raise PunctInputError(
                    f"unknown split {split!r} for document {doc_id!r} (known: {', '.join(SPLITS)})",
                    path,
                    number,
                )
            if doc_id in seen:
                raise PunctInputError(
                    f"duplicate document id {doc_id!r} (first at line {seen[doc_id]})",
                    path,
                    number,
                )
            close()
            seen[doc_id] = number
            current = Doc(doc_id, lang, split, [], str(path), number)
            docs.append(current)
            continue
        if current is None:
            raise PunctInputError(
                "sentence outside a document (start documents with '@doc <doc_id> <split>')",
                path,
                number,
            )
        parse_text(stripped, str(path), number)  # unknown or unattachable marks name the line
        current.sentences.append(stripped)
    close()
    return docs


def load_corpus(corpus_dir: str | Path, langs: list[str] | None = None) -> list[Doc]:
    """All documents of ``corpus_dir/<lang>.txt``, sorted by language then file order.

    Without ``langs`` every ``*.txt`` file is read. Document ids must be unique in
    the whole corpus (they name the utterances).
    """
    corpus_dir = Path(corpus_dir)
    if not corpus_dir.is_dir():
        raise MissingDataError(f"corpus directory {corpus_dir} does not exist", corpus_dir)
    if langs is None:
        paths = sorted(corpus_dir.glob("*.txt"))
        if not paths:
            raise MissingDataError(f"no <lang>.txt files in {corpus_dir}", corpus_dir)
    else:
        paths = [corpus_dir / f"{lang}.txt" for lang in sorted(langs)]
        for path in paths:
            if not path.is_file():
                raise MissingDataError(f"corpus file {path} does not exist", path)
    docs: list[Doc] = []
    first: dict[str, Doc] = {}
    for path in paths:
        for doc in parse_corpus_file(path):
            if doc.doc_id in first:
                other = first[doc.doc_id]
                raise PunctInputError(
                    f"duplicate document id {doc.doc_id!r} (also at {other.path}:{other.line})",
                    path,
                    doc.line,
                )
            first[doc.doc_id] = doc
            docs.append(doc)
    return docs
