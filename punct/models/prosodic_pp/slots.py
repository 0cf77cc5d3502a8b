"""PP slots: phrase ends matched to word slots, and their features (Moró & Szaszák 2017, 3.1).

A PP slot is the end of a phrase. It is *matched* to word ``i`` when it falls in word i's
boundary region ``[end_i - tol, start_{i+1} + tol]`` (the last word's region reaches the
utterance end); the first PP end in a region carries the word's punctuation, a second one
in the same region is a *duplicate* (target O, no word), a PP end in no region is
*unmatched* (target O, no word; the paper's "unmatched PP slot"). Words with no matched PP
end are *uncovered*: they get no prediction (-> O).

Slot features: the PP type one-hot, the PP duration and SIL_dur, the pause after the word
whose end is closest to the PP end within ``pause_window`` seconds (0 when there is none);
durations are z-normalised per utterance. The pauses are the word table's, from the one
pause formula (``punct.data.timed.pauses``): the utterance's last word carries the
end-of-document pause, so the final PP slot's SIL_dur is that constant.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from punct.models.prosodic_pp.pp_labels import PP_TYPES, Phrase

FEATURE_GROUPS = ("label", "duration", "pause")


@dataclass
class UttSlots:
    """The PP slots of one utterance."""

    phrases: list[Phrase]
    word: np.ndarray  # (n,) matched word index, -1 unmatched/duplicate
    unmatched: np.ndarray  # (n,) bool: in no word's boundary region
    pause: np.ndarray  # (n,) SIL_dur seconds
    uncovered: list[list[int]]  # per slot: words without a PP end, assigned to this slot

    def __len__(self) -> int:
        return len(self.phrases)


def match_words(ends: np.ndarray, times: np.ndarray, duration: float, tol: float
                ) -> tuple[np.ndarray, np.ndarray]:
    """(matched word per PP end or -1, unmatched flag) for PP ``ends`` (seconds)."""
    n = len(ends)
    word = np.full(n, -1, dtype=np.int64)
    unmatched = np.ones(n, dtype=bool)
    known = [i for i in range(len(times)) if np.isfinite(times[i]).all()]
    taken: set[int] = set()
    for j, e in enumerate(ends):
        for pos, i in enumerate(known):
            right = times[known[pos + 1], 0] if pos + 1 < len(known) else max(duration, e)
            if times[i, 1] - tol <= e <= right + tol:
                unmatched[j] = False
                if i not in taken:
                    word[j] = i
                    taken.add(i)
                break
    return word, unmatched


def sil_durations(ends: np.ndarray, times: np.ndarray, pauses: np.ndarray, window: float
                  ) -> np.ndarray:
    """Pause after the word whose end is closest to each PP end within ``window`` (else 0)."""
    word_ends = np.asarray(times, dtype=np.float64)[:, 1] if len(times) else np.zeros(0)
    out = np.zeros(len(ends))
    for j, e in enumerate(ends):
        dist = np.abs(word_ends - e)
        dist[~np.isfinite(dist)] = np.inf
        if dist.size and dist.min() <= window:
            p = pauses[int(np.argmin(dist))]
            out[j] = 0.0 if not np.isfinite(p) else max(float(p), 0.0)
    return out


def build_slots(phrases: Sequence[Phrase], times: np.ndarray, pauses: np.ndarray,
                duration: float, tol: float = 0.1, pause_window: float = 0.25) -> UttSlots:
    """Match PP ends to words, compute SIL_dur, and assign uncovered words to slots."""
    phrases = list(phrases)
    ends = np.array([p.end for p in phrases], dtype=np.float64)
    times = np.asarray(times, dtype=np.float64).reshape(-1, 2)
    word, unmatched = match_words(ends, times, duration, tol)
    pause = sil_durations(ends, times, np.asarray(pauses, dtype=np.float64), pause_window)
    covered = set(word[word >= 0].tolist())
    uncovered: list[list[int]] = [[] for _ in phrases]
    for i in range(len(times)):
        if i in covered or not phrases:
            continue
        end = times[i, 1] if np.isfinite(times[i, 1]) else -np.inf
        j = int(np.searchsorted(ends, end)) if np.isfinite(end) else 0
        uncovered[min(j, len(phrases) - 1)].append(i)
    return UttSlots(phrases, word, unmatched, pause, uncovered)


def _z(x: np.ndarray) -> np.ndarray:
    std = x.std() if len(x) else 0.0
    return (x - x.mean()) / std if std > 1e-8 else np.zeros_like(x)


def slot_features(slots: UttSlots, groups: Sequence[str]) -> np.ndarray:
    """(n, dim) features of the selected groups (label one-hot 7, duration 1, pause 1)."""
    unknown = set(groups) - set(FEATURE_GROUPS)
    if unknown:
        raise ValueError(f"unknown PP feature groups {sorted(unknown)}; known {FEATURE_GROUPS}")
    n = len(slots)
    cols: list[np.ndarray] = []
    if "label" in groups:
        onehot = np.zeros((n, len(PP_TYPES)))
        for j, p in enumerate(slots.phrases):
            onehot[j, PP_TYPES.index(p.label)] = 1.0
        cols.append(onehot)
    if "duration" in groups:
        cols.append(_z(np.array([p.duration for p in slots.phrases]))[:, None])
    if "pause" in groups:
        cols.append(_z(slots.pause)[:, None])
    return (np.hstack(cols) if cols else np.zeros((n, 0))).astype(np.float32)


def feature_dim(groups: Sequence[str]) -> int:
    """Width of :func:`slot_features` for ``groups``."""
    return (len(PP_TYPES) if "label" in groups else 0) + ("duration" in groups) + (
        "pause" in groups)
