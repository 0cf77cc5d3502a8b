"""Constrained decoding: the best labelling of each document that obeys ``doc_rules``.

The per-word decisions of ``punct.infer.decode.decide`` are made word by word and can
break the rules every reader knows (an opening quote never closed, a lower-case word
after a period, a document ending in a comma). Here each document is decoded as a whole
by a Viterbi search over the finite-state machine of ``punct.infer.doc_rules`` (states:
which pairs are open, whether a sentence has just ended).

Scoring. Each word's candidate decisions are scored by the model's log-probabilities,
relative to the unconstrained decision so that the best path without constraints is
today's decisions exactly:

- multi-label sets: a set of marks scores the sum of its marks' margins ``logit(p_k) -
  logit(t_k)`` (the tuned per-mark thresholds ``t_k`` act as a bias: a mark is worth
  taking alone when ``p_k >= t_k``, as in ``punct.infer.combinations``). Candidates are
  every subset of the marks the rules look at (``doc_rules.RULE_MARKS``); the other
  marks keep their threshold decision. With ``decode.combinations`` the candidates are
  the allowed sets;
- exclusive sets (argmax): one mark or none, scored ``log p_k - log p_O``;
- capitalisation (where modelled): ``log p(cap)``; a word that needs a capital picks the
  best of FIRST_CAP and ALL_CAPS.

Pass-through words get no mark and do not move the machine. A document whose
unconstrained decisions break no rule keeps them unchanged (no search is run); ``Edges``
carries the state of a document cut mid-stream from one block to the next.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from punct.infer.doc_rules import DOC_START, DocRules, needs_capital, rule_marks, states
from punct.infer.symbols import is_passthrough
from punct.labels import CAP_LABELS
from punct.models.base import WordSeq

_EPS = 1e-6
_FIRST_CAP = CAP_LABELS.index("FIRST_CAP")


@dataclass
class Edges:
    """How the sequences of one ``decide`` call meet their documents (stream blocks).

    ``spans[k]``: ``(lo, hi, starts_doc, ends_doc)`` of sequence k: the words ``lo:hi``
    are its own (the rest is context), ``starts_doc``: word ``lo`` opens the document,
    ``ends_doc``: word ``hi - 1`` closes it. ``carry``: per document id, the state at
    the end of its last block so far (updated by ``constrain``)."""

    spans: Sequence[tuple[int, int, bool, bool]]
    carry: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class _Candidates:
    """Candidate mark sets of one word: ``sets`` (K, P) over ``cols`` (the columns they
    decide; other columns keep their threshold decision) and the machine's tables."""

    sets: np.ndarray
    cols: np.ndarray
    step: np.ndarray  # (S, K): next state index, -1 where a rule breaks
    final: np.ndarray  # (S, K): the same for the last word of a document


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), _EPS, 1.0 - _EPS)
    return np.log(p) - np.log1p(-p)


def _candidates(labels: Sequence[str], rules: DocRules, exclusive: bool,
                allowed: np.ndarray | None) -> _Candidates:
    n = len(labels)
    if exclusive:
        sets = np.vstack([np.zeros((1, n), dtype=bool), np.eye(n, dtype=bool)])
        cols = np.arange(n)
    elif allowed is not None:
        sets, cols = allowed.astype(bool), np.arange(n)
    else:
        cols = np.array([labels.index(m) for m in rule_marks(labels)], dtype=np.int64)
        # fewer marks first, then label order: ties go to the simpler, commoner set
        subsets = sorted(itertools.product((False, True), repeat=len(cols)),
                         key=lambda row: (sum(row), [-on for on in row]))
        sets = np.array(subsets, dtype=bool).reshape(2 ** len(cols), len(cols))
    names = [frozenset(labels[c] for c, on in zip(cols, row, strict=True) if on)
             for row in sets]
    all_states = states()
    index = {s: k for k, s in enumerate(all_states)}
    step = np.full((len(all_states), len(sets)), -1, dtype=np.int64)
    final = step.copy()
    for i, s in enumerate(all_states):
        for k, marks in enumerate(names):
            nxt, broken = rules.step(s, marks)
            if not broken:
                step[i, k] = index[nxt]
                if not rules.finish(nxt, marks):
                    final[i, k] = index[nxt]
    return _Candidates(sets, cols, step, final)


def _scores(punct: np.ndarray, cand: _Candidates, threshold: np.ndarray,
            exclusive: bool) -> np.ndarray:
    """(n, K) score of each candidate set per word, 0 for no mark."""
    if exclusive:
        p = np.clip(punct.astype(np.float64), 1e-12, None)
        p_o = np.clip(1.0 - punct.sum(axis=1, keepdims=True, dtype=np.float64), 1e-12, None)
        return np.concatenate([np.zeros((len(p), 1)), np.log(p) - np.log(p_o)], axis=1)
    thr = np.broadcast_to(threshold, punct.shape[1:])[cand.cols]
    margins = _logit(punct[:, cand.cols]) - _logit(thr)
    return margins @ cand.sets.T.astype(np.float64)


def _best_moves(scores: np.ndarray, table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n, S, S) best score and candidate of a move from state i to state j per word."""
    n, n_states = len(scores), table.shape[0]
    best = np.full((n, n_states, n_states), -np.inf)
    arg = np.zeros((n, n_states, n_states), dtype=np.int64)
    for i in range(n_states):
        for j in range(n_states):
            idx = np.flatnonzero(table[i] == j)
            if len(idx):
                sub = scores[:, idx]
                pick = sub.argmax(axis=1)
                best[:, i, j] = sub[np.arange(n), pick]
                arg[:, i, j] = idx[pick]
    return best, arg


def _cap_scores(cap: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
    """Per word: (best log-probability of any cap, of a capital), or None."""
    if cap is None:
        return None
    logc = np.log(np.clip(cap.astype(np.float64), 1e-12, None))
    return logc.max(axis=1), logc[:, 1:].max(axis=1)


def _breaks(rules: DocRules, marks: np.ndarray, caps: np.ndarray | None, words: list[str],
            cols: Sequence[int], labels: Sequence[str], start: int, ends: bool
            ) -> tuple[bool, int]:
    """Whether the decisions of one document's words break a rule; the end state."""
    state, last = start, None
    for row, cap, word in zip(marks, caps if caps is not None else [None] * len(words), words,
                              strict=True):
        last = [labels[c] for c in cols if row[c]]
        if cap is not None and cap == 0 and needs_capital(state, word):
            return True, state
        state, broken = rules.step(state, last)
        if broken:
            return True, state
    return bool(ends and rules.finish(state, last)), state


def _viterbi(scores: np.ndarray, cand: _Candidates, words: list[str],
             cap_best: tuple[np.ndarray, np.ndarray] | None, start: int | None, ends: bool
             ) -> tuple[np.ndarray, list[int]] | None:
    """Best candidate per word and the state each word is entered in; None when no
    labelling obeys the rules (e.g. ``decode.combinations`` without a final mark)."""
    all_states = states()
    n, n_states = len(words), len(all_states)
    best, arg = _best_moves(scores, cand.step)
    if ends:
        best[-1], arg[-1] = (m[0] for m in _best_moves(scores[-1:], cand.final))
    need = np.array([[needs_capital(s, w) for s in all_states] for w in words])
    if cap_best is None:
        adj = np.zeros((n, n_states))
    else:
        adj = np.where(need, cap_best[1][:, None], cap_best[0][:, None])
    value = np.zeros(n_states) if start is None else np.full(n_states, -np.inf)
    if start is not None:
        value[all_states.index(start)] = 0.0
    back = np.zeros((n, n_states), dtype=np.int64)
    for j in range(n):
        total = (value + adj[j])[:, None] + best[j]
        back[j] = total.argmax(axis=0)
        value = total[back[j], np.arange(n_states)]
    if not np.isfinite(value.max()):
        return None
    path = [int(value.argmax())]  # state after each word, last first
    for j in range(n - 1, 0, -1):
        path.append(int(back[j][path[-1]]))
    path.reverse()
    entered = [int(back[0][path[0]]), *path[:-1]]
    choice = arg[np.arange(n), entered, path]
    return choice, [*(all_states[i] for i in entered), all_states[path[-1]]]


def constrain(marks: np.ndarray, caps: np.ndarray | None, punct: np.ndarray,
              cap: np.ndarray | None, seqs: Sequence[WordSeq], labels: Sequence[str],
              threshold: float | np.ndarray, exclusive: bool = False,
              allowed: np.ndarray | None = None, edges: Edges | None = None
              ) -> tuple[np.ndarray, np.ndarray | None]:
    """Decisions that obey the rules: ``marks`` (N, P) and ``caps`` (N,) (None when
    casing is by rule) made per word, rewritten per document where they break one.
    ``punct``/``cap``: the model's probabilities; ``allowed``: the combination matrix of
    ``decode.combinations`` (None: any set)."""
    labels = list(labels)
    rules = DocRules.for_labels(labels)
    cand = _candidates(labels, rules, exclusive, allowed)
    marks, caps = marks.copy(), None if caps is None else caps.copy()
    cap_best = _cap_scores(cap) if caps is not None else None
    thr = np.asarray(threshold, dtype=np.float64)
    for k, seq in enumerate(seqs):
        lo, hi, starts, ends = edges.spans[k] if edges else (0, len(seq), True, True)
        start = DOC_START if starts else (edges.carry.get(seq.utt_id) if edges else None)
        glob = [seq.offset + i for i in range(lo, hi)]
        through = [g for g, i in zip(glob, range(lo, hi), strict=True)
                   if is_passthrough(seq.words[i])]
        marks[through] = False
        kept = [g for g, i in zip(glob, range(lo, hi), strict=True)
                if not is_passthrough(seq.words[i])]
        if not kept:
            continue
        words = [seq.words[g - seq.offset] for g in kept]
        broken, state = _breaks(rules, marks[kept], None if caps is None else caps[kept],
                                words, cand.cols, labels, 0 if start is None else start, ends)
        if broken:
            found = _viterbi(_scores(punct[kept], cand, thr, exclusive), cand, words,
                             None if cap_best is None else (cap_best[0][kept],
                                                            cap_best[1][kept]),
                             start, ends)
            if found is not None:
                choice, entered = found
                rows = np.asarray(kept)
                marks[rows[:, None], cand.cols[None, :]] = cand.sets[choice]
                state = entered[-1]
                if caps is not None and cap is not None:
                    for j, g in enumerate(kept):
                        if needs_capital(entered[j], words[j]) and caps[g] == 0:
                            caps[g] = _FIRST_CAP + int(cap[g, 1:].argmax())
        if edges is not None:
            if ends:
                edges.carry.pop(seq.utt_id, None)
            else:
                edges.carry[seq.utt_id] = state
    return marks, caps
