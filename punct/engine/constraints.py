"""Constrained decoding: the best labelling of each document that obeys ``doc_rules``.

The per-word decisions of ``punct.engine.decode.decide`` are made word by word and can
break the rules every reader knows (an opening quote never closed, a lower-case word
after a period, a document ending in a comma). Here each document is decoded as a whole
by a Viterbi search over the finite-state machine of ``punct.engine.doc_rules`` (states:
which pairs are open, whether a sentence has just ended).

Scoring. Each word's candidate decisions are scored by the model's log-probabilities,
relative to the unconstrained decision so that the best path without constraints is
today's decisions exactly:

- multi-label sets: a set of marks scores the sum of its marks' margins ``logit(p_k) -
  logit(t_k)`` (the tuned per-mark thresholds ``t_k`` act as a bias: a mark is worth
  taking alone when ``p_k >= t_k``, as in ``punct.engine.combinations``). Candidates are
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

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from punct.engine.combinations import logit
from punct.engine.doc_rules import ENDED, DocRules, is_cased, needs_capital, rule_marks, states
from punct.engine.symbols import is_passthrough
from punct.labels import CAP_LABELS
from punct.models.base import WordSeq

_FIRST_CAP = CAP_LABELS.index("FIRST_CAP")
_CHUNK = 8192  # words per block of the (n, S, S) move tables
#: ``is_passthrough`` with a cache (words repeat)
through_word = functools.lru_cache(maxsize=1 << 16)(is_passthrough)
_cased = functools.lru_cache(maxsize=1 << 16)(is_cased)


@dataclass
class Edges:
    """How the sequences of one ``decide`` call meet their documents (stream blocks).

    ``spans[k]``: ``(lo, hi, starts_doc, ends_doc)`` of sequence k: the words ``lo:hi``
    are its own (the rest is context), ``starts_doc``: word ``lo`` opens the document,
    ``ends_doc``: word ``hi - 1`` closes it. ``carry``: per document id, the state at
    the end of its last block so far (updated by ``constrain``)."""

    spans: Sequence[tuple[int, int, bool, bool]]
    carry: dict[str, int] = field(default_factory=dict)


def data_dir_edges(seqs: Sequence[WordSeq]) -> Edges | None:
    """The edges of whole utterances: None where each is a whole document, else each
    starts a document and ends one only where ``WordSeq.ends_document`` says so (a set cut
    out of a stream, ``punct.kaldi.ends_mid_stream``)."""
    if all(s.ends_document for s in seqs):
        return None
    return Edges([(0, len(s), True, s.ends_document) for s in seqs])


@dataclass(frozen=True)
class _Candidates:
    """Candidate mark sets of one word: ``sets`` (K, P) over ``cols`` (the columns they
    decide; other columns keep their threshold decision) and the machine's tables."""

    sets: np.ndarray
    cols: np.ndarray
    states: tuple[int, ...]  # the reachable states of the machine
    step: np.ndarray  # (S, K): next state index, -1 where a rule breaks
    final: np.ndarray  # (S, K): the same for the last word of a document


def _candidates(labels: Sequence[str], exclusive: bool,
                allowed: np.ndarray | None) -> _Candidates:
    """The candidate tables of a label set: built once per (labels, exclusivity, allowed
    sets) and shared, read-only, by every later call (each epoch's dev decoding, each
    restored block)."""
    key = None if allowed is None else (allowed.shape, allowed.astype(bool).tobytes())
    return _built_candidates(tuple(labels), exclusive, key)


@functools.lru_cache(maxsize=64)
def _built_candidates(labels: tuple[str, ...], exclusive: bool,
                      allowed_key: tuple[tuple[int, ...], bytes] | None) -> _Candidates:
    allowed = (None if allowed_key is None
               else np.frombuffer(allowed_key[1], dtype=bool).reshape(allowed_key[0]))
    rules = DocRules.for_labels(labels)
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
    moves = {s: [rules.step(s, marks) for marks in names] for s in states()}
    reach, todo = {0, ENDED}, [0, ENDED]
    while todo:
        for nxt, broken in moves[todo.pop()]:
            if not broken and nxt not in reach:
                reach.add(nxt)
                todo.append(nxt)
    kept = tuple(sorted(reach))
    index = {s: k for k, s in enumerate(kept)}
    step = np.full((len(kept), len(sets)), -1, dtype=np.int64)
    final = step.copy()
    for i, s in enumerate(kept):
        for k, ((nxt, broken), marks) in enumerate(zip(moves[s], names, strict=True)):
            if not broken:
                step[i, k] = index[nxt]
                if not rules.finish(nxt, marks):
                    final[i, k] = index[nxt]
    for table in (sets, cols, step, final):
        table.setflags(write=False)
    return _Candidates(sets, cols, kept, step, final)


def _scores(punct: np.ndarray, cand: _Candidates, threshold: np.ndarray,
            exclusive: bool) -> np.ndarray:
    """(n, K) score of each candidate set per word, 0 for no mark."""
    if exclusive:
        p = np.clip(punct.astype(np.float64), 1e-12, None)
        p_o = np.clip(1.0 - punct.sum(axis=1, keepdims=True, dtype=np.float64), 1e-12, None)
        return np.concatenate([np.zeros((len(p), 1)), np.log(p) - np.log(p_o)], axis=1)
    thr = np.broadcast_to(threshold, punct.shape[1:])[cand.cols]
    margins = logit(punct[:, cand.cols]) - logit(thr)
    return margins @ cand.sets.T.astype(np.float64)


def _best_moves(scores: np.ndarray, table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n, S, S) best score and candidate of a move from state i to state j per word."""
    n, n_states = len(scores), table.shape[0]
    best = np.full((n, n_states, n_states), -np.inf)
    arg = np.zeros((n, n_states, n_states), dtype=np.int64)
    groups = [(i, j, np.flatnonzero(table[i] == j))
              for i in range(n_states) for j in range(n_states)]
    for lo in range(0, n, _CHUNK):
        part = scores[lo:lo + _CHUNK]
        rows = np.arange(len(part))
        for i, j, idx in groups:
            if len(idx):
                pick = part[:, idx].argmax(axis=1)
                best[lo:lo + _CHUNK, i, j] = part[rows, idx[pick]]
                arg[lo:lo + _CHUNK, i, j] = idx[pick]
    return best, arg


class _Checker:
    """Whether given decisions break a rule: the machine run over them, its moves cached
    by (state, rule marks of the word)."""

    def __init__(self, rules: DocRules, labels: Sequence[str], cols: np.ndarray):
        self.rules, self.cols = rules, cols
        self.names = [labels[c] for c in cols]
        self.weights = 1 << np.arange(len(cols), dtype=np.int64)
        self.cache: dict[tuple[int, int], tuple[int, bool, bool]] = {}

    def _move(self, state: int, code: int) -> tuple[int, bool, bool]:
        marks = [m for b, m in enumerate(self.names) if code >> b & 1]
        nxt, broken = self.rules.step(state, marks)
        move = (nxt, bool(broken), bool(self.rules.finish(nxt, marks)))
        self.cache[state, code] = move
        return move

    def breaks(self, marks: np.ndarray, caps: np.ndarray | None, words: list[str],
               start: int, ends: bool) -> tuple[bool, int]:
        """Whether one document's decisions break a rule; the state after them."""
        codes = (marks[:, self.cols] @ self.weights).tolist()
        caps_list = caps.tolist() if caps is not None else None
        state, done = start, False
        for j, code in enumerate(codes):
            if caps_list is not None and caps_list[j] == 0 and state & ENDED \
                    and _cased(words[j]):
                return True, state
            state, broken, done = self.cache.get((state, code)) or self._move(state, code)
            if broken:
                return True, state
        return bool(ends and codes and done), state


@dataclass
class _Moves:
    """The move tables of the words that may need a search, by global word index."""

    rows: dict[int, int]  # global word index -> row
    scores: np.ndarray  # (n, K) candidate scores
    best: np.ndarray
    arg: np.ndarray
    adj: np.ndarray  # (n, S) cap score of entering each state (0 when casing is by rule)


def _moves(kept: list[int], words: list[str], punct: np.ndarray, cap: np.ndarray | None,
           cand: _Candidates, thr: np.ndarray, exclusive: bool) -> _Moves:
    scores = _scores(punct[kept], cand, thr, exclusive)
    best, arg = _best_moves(scores, cand.step)
    adj = np.zeros((len(kept), len(cand.states)))
    if cap is not None:
        logc = np.log(np.clip(cap[kept].astype(np.float64), 1e-12, None))
        ended = np.array([bool(s & ENDED) for s in cand.states])
        need = ended[None, :] & np.array([_cased(w) for w in words])[:, None]
        adj = np.where(need, logc[:, 1:].max(axis=1)[:, None], logc.max(axis=1)[:, None])
    return _Moves({g: r for r, g in enumerate(kept)}, scores, best, arg, adj)


def _viterbi(moves: _Moves, kept: list[int], scores_last: np.ndarray | None,
             cand: _Candidates, start: int | None) -> tuple[np.ndarray, list[int]] | None:
    """Best candidate per word and the state each word is entered in (then the end
    state); None when no labelling obeys the rules (e.g. ``decode.combinations``
    without a final mark). ``scores_last``: candidate scores of the last word when it
    ends the document."""
    rows = np.array([moves.rows[g] for g in kept])
    best, arg, adj = moves.best[rows], moves.arg[rows], moves.adj[rows]
    if scores_last is not None:  # (S, K, S): candidate k moves state i to state j
        onehot = cand.final[:, :, None] == np.arange(len(cand.states))[None, None, :]
        table = np.where(onehot, scores_last[None, :, None], -np.inf)
        best[-1], arg[-1] = table.max(axis=1), table.argmax(axis=1)
    n, n_states = len(kept), len(cand.states)
    value = np.zeros(n_states) if start is None else np.full(n_states, -np.inf)
    if start is not None:
        value[cand.states.index(start)] = 0.0
    back = np.zeros((n, n_states), dtype=np.int64)
    cols = np.arange(n_states)
    for j in range(n):
        total = (value + adj[j])[:, None] + best[j]
        back[j] = total.argmax(axis=0)
        value = total[back[j], cols]
    if not np.isfinite(value.max()):
        return None
    path = [int(value.argmax())]  # state after each word, last first
    for j in range(n - 1, 0, -1):
        path.append(int(back[j][path[-1]]))
    path.reverse()
    entered = [int(back[0][path[0]]), *path[:-1]]
    choice = arg[np.arange(n), entered, path]
    return choice, [*(cand.states[i] for i in entered), cand.states[path[-1]]]


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
    cand = _candidates(labels, exclusive, allowed)
    marks, caps = marks.copy(), None if caps is None else caps.copy()
    cap = cap if caps is not None else None
    thr = np.asarray(threshold, dtype=np.float64)
    docs = []  # per sequence: own speech words (global), their words, start, ends
    for k, seq in enumerate(seqs):
        lo, hi, starts, ends = edges.spans[k] if edges else (0, len(seq), True, True)
        own = range(seq.offset + lo, seq.offset + hi)
        through = [g for g in own if through_word(seq.words[g - seq.offset])]
        marks[through] = False
        kept = [g for g in own if not through_word(seq.words[g - seq.offset])]
        docs.append((seq.utt_id, kept, [seq.words[g - seq.offset] for g in kept], starts,
                     ends))
    # the words of every document that may need a search: broken from its assumed start,
    # or starting at a cut (its start state comes from a block decided in this call)
    check = _Checker(rules, labels, cand.cols)
    maybe: list[int] = []
    maybe_words: list[str] = []
    verdicts: list[tuple[bool, int] | None] = []
    for _, kept, words, starts, ends in docs:
        verdict = None
        if kept and starts:
            verdict = check.breaks(marks[kept], None if caps is None else caps[kept], words,
                                   ENDED, ends)
        verdicts.append(verdict)
        if kept and (not starts or (verdict is not None and verdict[0])):
            maybe.extend(kept)
            maybe_words.extend(words)
    moves = _moves(maybe, maybe_words, punct, cap, cand, thr, exclusive) if maybe else None
    for (utt, kept, words, starts, ends), verdict in zip(docs, verdicts, strict=True):
        if not kept:
            continue
        start = ENDED if starts else (edges.carry.get(utt) if edges else None)
        broken, state = verdict or check.breaks(marks[kept], None if caps is None
                                                else caps[kept], words,
                                                0 if start is None else start, ends)
        found = None
        if broken and moves is not None:
            last = moves.scores[moves.rows[kept[-1]]] if ends else None
            found = _viterbi(moves, kept, last, cand, start)
        if found is not None:
            choice, entered = found
            marks[np.asarray(kept)[:, None], cand.cols[None, :]] = cand.sets[choice]
            state = entered[-1]
            if caps is not None and cap is not None:
                for j, g in enumerate(kept):
                    if needs_capital(entered[j], words[j]) and caps[g] == 0:
                        caps[g] = _FIRST_CAP + int(cap[g, 1:].argmax())
        if edges is not None:
            if ends:
                edges.carry.pop(utt, None)
            else:
                edges.carry[utt] = state
    return marks, caps
