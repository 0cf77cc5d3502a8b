"""CTC forced alignment: the Viterbi path of a token sequence through CTC emissions.

Given frame log-probabilities ``emissions`` (T x V) and a token sequence ``y_1..y_L``
(no blanks), the CTC trellis runs over the extended sequence
``blank, y_1, blank, y_2, ..., y_L, blank`` (S = 2L + 1 states). A path starts in
state 0 or 1, moves each frame by 0, 1 or 2 states (2 only onto a token that differs
from the token two states back) and ends in state S - 1 or S - 2. The best path
maximises the sum of the emissions' log-probabilities along it.

Memory: the running scores are one float64 row of S values; back-pointers are one
int8 per (frame, state) cell (T x S bytes); emissions are gathered onto the
extended sequence ``chunk_frames`` frames at a time, so no T x S float matrix is
ever built. :data:`MAX_TRELLIS_BYTES` bounds the back-pointer matrix: longer
problems fail with a clear message (split the recording with a segments file).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

#: Back-pointer bytes allowed (T x S); a 10-minute recording at 50 frames/s with 5,000
#: characters needs 300 MB.
MAX_TRELLIS_BYTES = 2_000_000_000


class CtcAlignError(ValueError):
    """The token sequence cannot be aligned to the emissions (too short, too long)."""


@dataclass(frozen=True)
class CtcPath:
    """The Viterbi path: ``states[t]`` is the extended-sequence state of frame t."""

    states: np.ndarray       # (T,) int64, values in 0..2L
    score: float             # sum of log-probs along the path
    free_score: float        # sum over frames of the best token's log-prob (no transcript)

    @property
    def n_frames(self) -> int:
        return len(self.states)

    @property
    def gap_per_frame(self) -> float:
        """(free - forced) log-prob per frame, >= 0: how much the transcript costs.

        Near 0 when the audio says the transcript; large when it says something else.
        """
        return (self.free_score - self.score) / max(1, self.n_frames)


def extend_with_blanks(tokens: Sequence[int], blank: int) -> np.ndarray:
    """``[blank, t1, blank, t2, ..., tL, blank]`` as int64."""
    ext = np.full(2 * len(tokens) + 1, blank, dtype=np.int64)
    ext[1::2] = np.asarray(tokens, dtype=np.int64)
    return ext


def min_frames(tokens: Sequence[int]) -> int:
    """Frames a CTC path needs: one per token plus a blank between equal neighbours."""
    repeats = sum(1 for a, b in itertools.pairwise(tokens) if a == b)
    return len(tokens) + repeats


def viterbi(
    emissions: torch.Tensor,
    tokens: Sequence[int],
    blank: int = 0,
    chunk_frames: int = 256,
    max_trellis_bytes: int = MAX_TRELLIS_BYTES,
) -> CtcPath:
    """The best CTC path of ``tokens`` through ``emissions`` (T x V log-probs).

    Raises :class:`CtcAlignError` when ``tokens`` is empty, contains ``blank`` or an
    index outside the vocabulary, needs more frames than there are, or when the
    back-pointers would exceed ``max_trellis_bytes``.
    """
    if emissions.dim() != 2:
        raise CtcAlignError(f"emissions must be (frames, vocabulary), got {tuple(emissions.shape)}")
    n_frames, vocab = emissions.shape
    tokens = [int(t) for t in tokens]
    if not tokens:
        raise CtcAlignError("no tokens to align")
    bad = [t for t in tokens if t == blank or not 0 <= t < vocab]
    if bad:
        raise CtcAlignError(
            f"token {bad[0]} is the blank or outside the vocabulary (0..{vocab - 1})")
    need = min_frames(tokens)
    if n_frames < need:
        raise CtcAlignError(
            f"the audio is too short for the transcript: {n_frames} frames, the "
            f"{len(tokens)} tokens need at least {need}")
    ext = extend_with_blanks(tokens, blank)
    n_states = len(ext)
    if n_frames * n_states > max_trellis_bytes:
        raise CtcAlignError(
            f"alignment too large: {n_frames} frames x {n_states} states exceeds "
            f"{max_trellis_bytes} back-pointer bytes; split the recording (segments file)")
    ext_t = torch.from_numpy(ext)
    # a skip (s-2 -> s) is allowed onto a token that differs from the token two back
    can_skip = torch.zeros(n_states, dtype=torch.bool)
    can_skip[3::2] = ext_t[3::2] != ext_t[1:-2:2]
    back = np.zeros((n_frames, n_states), dtype=np.int8)
    score = torch.full((n_states,), -math.inf, dtype=torch.float64)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # rows of a few thousand states: threads only add overhead
    try:
        free = _forward(emissions, ext_t, can_skip, score, torch.from_numpy(back), chunk_frames)
    finally:
        torch.set_num_threads(threads)
    ends = [n_states - 1, n_states - 2] if n_states > 1 else [0]
    last = max(ends, key=lambda s: float(score[s]))
    total = float(score[last])
    if not math.isfinite(total):
        raise CtcAlignError("no CTC path reaches the end of the transcript")
    states = np.empty(n_frames, dtype=np.int64)
    s = last
    for t in range(n_frames - 1, -1, -1):
        states[t] = s
        s -= int(back[t, s])
    return CtcPath(states, total, free)


def _forward(emissions: torch.Tensor, ext_t: torch.Tensor, can_skip: torch.Tensor,
             score: torch.Tensor, back: torch.Tensor, chunk_frames: int) -> float:
    """Run the trellis: ``score`` ends as the last frame's row (in place), ``back`` holds
    the steps (0, 1, 2 states); returns the free score (best token per frame)."""
    neg_inf = torch.tensor(-math.inf, dtype=torch.float64)
    cand = torch.empty((3, len(score)), dtype=torch.float64)
    free = 0.0
    for c0 in range(0, emissions.shape[0], chunk_frames):
        chunk = emissions[c0: c0 + chunk_frames].detach().to(torch.float64)
        free += float(chunk.max(dim=1).values.sum())
        em = chunk.index_select(1, ext_t)  # (chunk, S): only this chunk is ever gathered
        for i in range(em.shape[0]):
            if c0 + i == 0:
                score[:2] = em[0, :2]
                continue
            cand[0] = score
            cand[1, 0] = -math.inf
            cand[1, 1:] = score[:-1]
            cand[2, :2] = -math.inf
            cand[2, 2:] = score[:-2]
            cand[2] = torch.where(can_skip, cand[2], neg_inf)
            best, arg = cand.max(dim=0)
            back[c0 + i] = arg.to(torch.int8)
            score.copy_(best + em[i])
    return free


def token_spans(path: CtcPath, n_tokens: int) -> np.ndarray:
    """(n_tokens, 2) first frame and end frame (exclusive) of each token on ``path``."""
    spans = np.full((n_tokens, 2), -1, dtype=np.int64)
    token_of = np.where(path.states % 2 == 1, (path.states - 1) // 2, -1)
    frames = np.flatnonzero(token_of >= 0)
    ids = token_of[frames]
    if ids.size:
        first = np.r_[True, ids[1:] != ids[:-1]]
        last = np.r_[ids[1:] != ids[:-1], True]
        spans[ids[first], 0] = frames[first]
        spans[ids[last], 1] = frames[last] + 1
    if (spans < 0).any():  # pragma: no cover - a valid path visits every token
        raise CtcAlignError("the path skips a token")
    return spans


def word_spans(path: CtcPath, word_token_counts: Sequence[int],
               separators: Sequence[int] | None = None) -> list[tuple[int, int]]:
    """Frame spans (start, end exclusive) of consecutive words.

    ``word_token_counts[i]`` tokens belong to word i; ``separators[i]`` tokens (e.g. a
    word delimiter) follow word i and belong to no word.
    """
    seps = list(separators) if separators is not None else [0] * len(word_token_counts)
    n_tokens = sum(word_token_counts) + sum(seps)
    spans = token_spans(path, n_tokens)
    out, k = [], 0
    for count, sep in zip(word_token_counts, seps, strict=True):
        if count < 1:
            raise CtcAlignError("every word needs at least one token")
        out.append((int(spans[k, 0]), int(spans[k + count - 1, 1])))
        k += count + sep
    return out
