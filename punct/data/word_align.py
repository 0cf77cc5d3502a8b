"""Word alignment by edit distance: the one aligner of hypothesis words to reference words.

Label projection (:mod:`punct.data.projection`) and scoring across different word
sequences (:mod:`punct.score.metrics`) both use :func:`align_words`. The conventions
(docs/ASR.md, "Alignment conventions"):

- Words are compared case-insensitively (``str.lower``); the caller leaves non-speech
  tokens out beforehand (the corpus' map, :mod:`punct.data.nonspeech`).
- Cost: a substitution, a deletion (a reference word without hypothesis word) and an
  insertion (a hypothesis word without reference word) cost 1, a match 0; the alignment
  has the fewest edits (the Levenshtein distance, so WER is the usual one).
- Among the alignments with the fewest edits, the one with the most matches wins. For a
  given number of edits and matches the numbers of substitutions, deletions and
  insertions are fixed (edits = N_ref + N_hyp - 2 matches - substitutions), so this
  also prefers a substitution to a deletion + insertion pair.
- What is left are alignments with the same counts that differ in *where* the gaps lie
  (``the the cat`` / ``the cat``: which ``the`` is deleted). Reading back from the end,
  each step prefers a deletion, then a diagonal step (match or substitution), then an
  insertion: inside a run of edits, deletions come last and insertions first. So the
  reference word that keeps its hypothesis partner is the earlier one, and a deleted
  word's closing marks (which move back to the hypothesis word before it) stay next to
  the words they followed; a substitution sits right before the next matched word, where
  a closing mark of the substituted reference word belongs.

The dynamic programme keeps one byte of back-pointer per cell, (N_ref + 1) x (N_hyp + 1)
bytes per utterance, and is vectorised over hypothesis positions with numpy. Utterances
above :data:`MAX_CELLS` cells are an error (split them; IWSLT's talk-long utterances of
about 1-2 k words need 1-4 M cells).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from punct.errors import PunctInputError

MATCH, SUB, DEL, INS = "match", "sub", "del", "ins"

#: Largest (N_ref + 1) * (N_hyp + 1) aligned in one piece (one byte each): about 6 k x 6 k words.
MAX_CELLS = 36_000_000

_DEL, _DIAG, _INS = 1, 2, 3  # back-pointer codes


@dataclass(frozen=True)
class AlignedPair:
    """One column of an alignment: reference and hypothesis word index (None for a gap)."""

    op: str
    ref: int | None
    hyp: int | None


@dataclass(frozen=True)
class EditCounts:
    """Matches, substitutions, deletions and insertions of an alignment (or a sum of them)."""

    matches: int = 0
    sub: int = 0
    dels: int = 0
    ins: int = 0

    @property
    def ref_words(self) -> int:
        return self.matches + self.sub + self.dels

    @property
    def hyp_words(self) -> int:
        return self.matches + self.sub + self.ins

    @property
    def wer(self) -> float | None:
        """(S + D + I) / N_ref; None without reference words."""
        n = self.ref_words
        return (self.sub + self.dels + self.ins) / n if n else None

    def __add__(self, other: EditCounts) -> EditCounts:
        return EditCounts(self.matches + other.matches, self.sub + other.sub,
                          self.dels + other.dels, self.ins + other.ins)

    def as_dict(self) -> dict[str, float | int | None]:
        return {"wer": self.wer, "sub": self.sub, "del": self.dels, "ins": self.ins,
                "ref_words": self.ref_words, "hyp_words": self.hyp_words}


def edit_counts(pairs: Sequence[AlignedPair]) -> EditCounts:
    """The counts of an alignment."""
    ops = [p.op for p in pairs]
    return EditCounts(ops.count(MATCH), ops.count(SUB), ops.count(DEL), ops.count(INS))


def _ids(ref: Sequence[str], hyp: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    vocab: dict[str, int] = {}
    r = [vocab.setdefault(w.lower(), len(vocab)) for w in ref]
    h = [vocab.setdefault(w.lower(), len(vocab)) for w in hyp]
    return np.asarray(r, dtype=np.int64), np.asarray(h, dtype=np.int64)


def _back_pointers(ref_ids: np.ndarray, hyp_ids: np.ndarray) -> np.ndarray:
    """Back-pointers of the DP; cost = edits * K - matches with K > any match count, so
    the fewest edits come first and the most matches break ties."""
    n, m = len(ref_ids), len(hyp_ids)
    k = min(n, m) + 1
    cols = np.arange(m + 1, dtype=np.int64) * k
    back = np.empty((n + 1, m + 1), dtype=np.uint8)
    back[0, 0] = 0
    back[0, 1:] = _INS
    prev = cols.copy()
    for i in range(1, n + 1):
        diag = prev[:-1] + np.where(hyp_ids == ref_ids[i - 1], -1, k)
        dele = prev + k
        best = dele.copy()
        best[1:] = np.minimum(dele[1:], diag)
        # insertions chain along the row: cur[j] = min over l <= j of best[l] + (j - l) k
        cur = np.minimum.accumulate(best - cols) + cols
        row = np.full(m + 1, _INS, dtype=np.uint8)
        row[1:][cur[1:] == diag] = _DIAG
        row[cur == dele] = _DEL
        back[i] = row
        prev = cur
    return back


def align_words(ref: Sequence[str], hyp: Sequence[str], *, what: str = "",
                path: str | Path | None = None) -> list[AlignedPair]:
    """The alignment of ``hyp`` to ``ref`` (module docstring), in word order.

    ``what`` (e.g. ``"utterance u1"``) and ``path`` name the input in the error raised for
    an utterance above :data:`MAX_CELLS`."""
    n, m = len(ref), len(hyp)
    if (n + 1) * (m + 1) > MAX_CELLS:
        raise PunctInputError(
            f"{what + ': ' if what else ''}{n} reference x {m} hypothesis words is too long "
            f"to align in one piece (at most {MAX_CELLS} cells of (N_ref+1) x (N_hyp+1)); "
            "split it into shorter utterances", path)
    ref_ids, hyp_ids = _ids(ref, hyp)
    back = _back_pointers(ref_ids, hyp_ids)
    out: list[AlignedPair] = []
    i, j = n, m
    while i or j:
        step = back[i, j]
        if step == _DEL:
            i -= 1
            out.append(AlignedPair(DEL, i, None))
        elif step == _INS:
            j -= 1
            out.append(AlignedPair(INS, None, j))
        else:
            i, j = i - 1, j - 1
            out.append(AlignedPair(MATCH if ref_ids[i] == hyp_ids[j] else SUB, i, j))
    out.reverse()
    return out
