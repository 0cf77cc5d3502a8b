"""Words that sound alike: neighbours at a small phone edit distance (CMU dictionary).

A word's pronunciations come from the CMU pronouncing dictionary shipped in the
``pocketsphinx`` wheel (the ``speech`` extra, imported only here and only when asked);
stress digits are dropped, so ``their``, ``there`` and ``they're`` (DH EH R) are at
distance 0. Two words are neighbours when some pronunciation of one is within
``max_distance`` phone insertions, deletions or substitutions of some pronunciation of
the other (the smallest distance over the pronunciation pairs counts).

Only the words of a given vocabulary (the training words) are compared, so a substituted
word is always one the featurizer was fitted on. Candidates are found without comparing
every pair: each pronunciation is indexed under itself and under every sequence left
after deleting up to ``max_distance`` of its phones; two sequences within distance d
share such a key, and the candidates are then checked with the exact distance.

``load_neighbours`` builds the table once and caches it as JSON (e.g. under the
experiment directory); the cache is reused while the dictionary, the distance and the
vocabulary are the same.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from itertools import combinations
from pathlib import Path

from punct.atomic import atomic_write_text
from punct.errors import MissingDataError, PunctInputError

Phones = tuple[str, ...]
Neighbours = dict[str, list[tuple[str, int]]]
"""word -> [(neighbour, phone distance)], closest first, then by the vocabulary's count."""

MAX_NEIGHBOURS = 32
"""Neighbours kept per word (the closest, then the most frequent)."""

CACHE_FORMAT = 1
INSTALL_HINT = "pip install 'punct-recipes[speech]'"


def cmudict_path() -> Path:
    """The CMU dictionary of the ``pocketsphinx`` wheel (an error naming the extra when the
    package is missing)."""
    try:
        import pocketsphinx  # optional extra: pocketsphinx (speech)
    except ImportError as err:
        raise MissingDataError("train.augment.sub_source: confusable needs the CMU dictionary "
                               f"of the pocketsphinx package ({INSTALL_HINT})") from err
    path = Path(pocketsphinx.get_model_path()) / "en-us" / "cmudict-en-us.dict"
    if not path.is_file():
        raise MissingDataError("the pocketsphinx package has no CMU dictionary", path)
    return path


def read_dictionary(path: str | Path, words: Iterable[str] | None = None
                    ) -> dict[str, set[Phones]]:
    """Pronunciations (stress dropped) of the dictionary's words, or of ``words`` only.

    Lines are ``word PH ON ES``; alternatives are spelled ``word(2)``; ``#`` starts a
    comment."""
    wanted = None if words is None else set(words)
    prons: dict[str, set[Phones]] = {}
    with open(path, encoding="utf-8", errors="replace") as handle:
        for lineno, line in enumerate(handle, start=1):
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            if len(fields) < 2:
                raise PunctInputError("a dictionary line needs a word and its phones",
                                      path, lineno)
            word = fields[0].split("(", 1)[0].lower()
            if wanted is not None and word not in wanted:
                continue
            prons.setdefault(word, set()).add(
                tuple(phone.rstrip("012") for phone in fields[1:]))
    return prons


def phone_distance(a: Phones, b: Phones) -> int:
    """Levenshtein distance between two phone sequences."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, pa in enumerate(a, start=1):
        current = [i]
        for j, pb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1,
                               previous[j - 1] + (pa != pb)))
        previous = current
    return previous[-1]


def deletion_keys(phones: Phones, max_deletions: int) -> set[Phones]:
    """``phones`` and every sequence left after deleting up to ``max_deletions`` phones."""
    keys = {phones}
    for k in range(1, min(max_deletions, len(phones)) + 1):
        for drop in combinations(range(len(phones)), k):
            keys.add(tuple(p for i, p in enumerate(phones) if i not in drop))
    return keys


def find_neighbours(prons: Mapping[str, set[Phones]], max_distance: int,
                    counts: Mapping[str, int] | None = None) -> Neighbours:
    """Each word's neighbours among the words of ``prons`` (itself excluded), at most
    ``MAX_NEIGHBOURS``, ordered by distance, then by ``counts`` (descending), then by word."""
    index: dict[Phones, set[str]] = {}
    keys_of: dict[str, set[Phones]] = {}
    for word, variants in prons.items():
        keys = set().union(*(deletion_keys(p, max_distance) for p in variants))
        keys_of[word] = keys
        for key in keys:
            index.setdefault(key, set()).add(word)
    counts = counts or {}
    table: Neighbours = {}
    for word in sorted(prons):
        candidates = set().union(*(index[key] for key in keys_of[word])) - {word}
        found = []
        for other in candidates:
            dist = min(phone_distance(a, b) for a in prons[word] for b in prons[other])
            if dist <= max_distance:
                found.append((dist, -counts.get(other, 0), other))
        found.sort()
        table[word] = [(other, dist) for dist, _, other in found[:MAX_NEIGHBOURS]]
    return table


def _cache_key(dictionary: Path, max_distance: int, counts: Mapping[str, int]) -> dict:
    vocab = "\n".join(f"{w}\t{counts[w]}" for w in sorted(counts))
    stat = dictionary.stat()
    return {"format": CACHE_FORMAT, "dictionary": str(dictionary),
            "dictionary_bytes": stat.st_size, "max_distance": max_distance,
            "vocabulary_sha256": hashlib.sha256(vocab.encode("utf-8")).hexdigest()}


def load_neighbours(cache: str | Path, counts: Mapping[str, int], max_distance: int,
                    dictionary: str | Path | None = None) -> Neighbours:
    """The neighbour table of the vocabulary ``counts`` (word -> training count), read from
    ``cache`` when it was built for the same dictionary, distance and vocabulary, else
    built and written there (atomically). ``dictionary``: default the CMU dictionary of
    pocketsphinx."""
    cache = Path(cache)
    dictionary = Path(dictionary) if dictionary is not None else cmudict_path()
    key = _cache_key(dictionary, max_distance, counts)
    if cache.is_file():
        try:
            stored = json.loads(cache.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            stored = {}
        if stored.get("key") == key:
            return {w: [(o, int(d)) for o, d in nbrs] for w, nbrs in stored["table"].items()}
    prons = read_dictionary(dictionary, counts)
    table = find_neighbours(prons, max_distance, counts)
    atomic_write_text(cache, json.dumps({"key": key, "table": table}, ensure_ascii=False)
                      + "\n")
    return table
