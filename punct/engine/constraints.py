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
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import numpy as np

from punct.engine.combinations import logit
from punct.engine.doc_rules import (
    ENDED,
    OPEN_BITS,
    RULE_MARKS,
    DocRules,
    is_cased,
    rule_marks,
    states,
)
from punct.engine.symbols import is_passthrough
from punct.labels import CAP_LABELS, SENTENCE_END
from punct.models.base import WordSeq

_FIRST_CAP = CAP_LABELS.index("FIRST_CAP")
_CHUNK = 8192  # words per block of the (n, S, S) move tables
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
class Candidates:
    """Candidate mark sets of one word: ``sets`` (K, P) over ``cols`` (the columns they
    decide; other columns keep their threshold decision) and the machine's tables."""

    sets: np.ndarray
    cols: np.ndarray
    states: tuple[int, ...]  # the reachable states of the machine
    step: np.ndarray  # (S, K): next state index, -1 where a rule breaks
    final: np.ndarray  # (S, K): the same for the last word of a document


def candidates(labels: Sequence[str], exclusive: bool,
                allowed: np.ndarray | None) -> Candidates:
    """The candidate tables of a label set: built once per (labels, exclusivity, allowed
    sets) and shared, read-only, by every later call (each epoch's dev decoding, each
    restored block)."""
    key = None if allowed is None else (allowed.shape, allowed.astype(bool).tobytes())
    return _built_candidates(tuple(labels), exclusive, key)


@functools.lru_cache(maxsize=64)
def _built_candidates(labels: tuple[str, ...], exclusive: bool,
                      allowed_key: tuple[tuple[int, ...], bytes] | None) -> Candidates:
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
    return Candidates(sets, cols, kept, step, final)


def candidate_scores(punct: np.ndarray, cand: Candidates, threshold: np.ndarray,
            exclusive: bool) -> np.ndarray:
    """(n, K) score of each candidate set per word, 0 for no mark."""
    if exclusive:
        p = np.clip(punct.astype(np.float64), 1e-12, None)
        p_o = np.clip(1.0 - punct.sum(axis=1, keepdims=True, dtype=np.float64), 1e-12, None)
        return np.concatenate([np.zeros((len(p), 1)), np.log(p) - np.log(p_o)], axis=1)
    thr = np.broadcast_to(threshold, punct.shape[1:])[cand.cols]
    margins = logit(punct[:, cand.cols]) - logit(thr)
    return margins @ cand.sets.T.astype(np.float64)


def best_moves(scores: np.ndarray, table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def passthrough_flags(words: Sequence[str]) -> np.ndarray:
    """``is_passthrough`` of each word; a purely alphanumeric word (most) never passes
    through, so only the others are looked at."""
    plain = np.fromiter(map(str.isalnum, words), dtype=bool, count=len(words))
    flags = np.zeros(len(words), dtype=bool)
    for i in np.flatnonzero(~plain).tolist():
        flags[i] = is_passthrough(words[i])
    return flags


def cased_flags(words: Sequence[str]) -> np.ndarray:
    """``is_cased`` of each word; a lower-case word (most) is cased."""
    flags = np.fromiter(map(str.islower, words), dtype=bool, count=len(words))
    for i in np.flatnonzero(~flags).tolist():
        flags[i] = _cased(words[i])
    return flags


@dataclass
class _Doc:
    """One document of a ``constrain`` call: its speech words (global indices, in order;
    pass-through words left out) and how it meets its neighbours."""

    utt: str
    kept: np.ndarray
    words: list[str]
    starts: bool
    ends: bool


def _documents(seqs: Sequence[WordSeq], edges: Edges | None, marks: np.ndarray,
               through_all: np.ndarray | None = None) -> list[_Doc]:
    """The documents of ``seqs`` (their own words only, per ``edges``); the marks of
    their pass-through words are cleared in ``marks`` (``through_all``: the flags of
    all N words where known)."""
    docs = []
    for k, seq in enumerate(seqs):
        lo, hi, starts, ends = edges.spans[k] if edges else (0, len(seq), True, True)
        own = list(seq.words[lo:hi])
        base = seq.offset + lo
        through = (passthrough_flags(own) if through_all is None
                   else through_all[base:base + len(own)])
        if through.any():
            marks[base + np.flatnonzero(through)] = False
            keep = np.flatnonzero(~through)
            docs.append(_Doc(seq.utt_id, base + keep, [own[i] for i in keep], starts, ends))
        else:
            docs.append(_Doc(seq.utt_id, np.arange(base, base + len(own)), own, starts, ends))
    return docs


class MoveTable:
    """The machine's moves over one word's marks in columns ``cols``, coded as bits (mark k
    of ``cols`` is bit k): (next state, a rule broken, the document would end broken
    there) by (state, code), each computed once."""

    def __init__(self, rules: DocRules, labels: Sequence[str], cols: np.ndarray):
        self.rules, self.cols = rules, cols
        self.names = [labels[c] for c in cols]
        self.weights = 1 << np.arange(len(cols), dtype=np.int64)
        self.cache: dict[tuple[int, int], tuple[int, bool, bool]] = {}

    def codes(self, marks: np.ndarray) -> np.ndarray:
        """The code of each row of ``marks`` (N, P)."""
        return marks[:, self.cols] @ self.weights

    def bits(self, names: Collection[str]) -> int:
        """The bits of the marks ``names``."""
        return int(sum(int(w) for w, name in zip(self.weights, self.names, strict=True)
                       if name in names))

    def move(self, state: int, code: int) -> tuple[int, bool, bool]:
        """The move from ``state`` over the marks of ``code``."""
        found = self.cache.get((state, code))
        if found is None:
            marks = [m for b, m in enumerate(self.names) if code >> b & 1]
            nxt, broken = self.rules.step(state, marks)
            found = (nxt, bool(broken), bool(self.rules.finish(nxt, marks)))
            self.cache[state, code] = found
        return found


class _Checker:
    """Whether given decisions break a rule, for many documents at once.

    A word without any mark the machine looks at (code 0) only clears the "sentence
    ended" bit, so the machine is stepped in Python only at the words with such marks
    and at each document's last word (``MoveTable``); the capital rule is checked on
    arrays (a word is entered "ended" when it opens its document in that state or
    follows a sentence-final mark)."""

    def __init__(self, rules: DocRules, labels: Sequence[str], cols: np.ndarray):
        self.table = MoveTable(rules, labels, cols)
        # the machine only reads the rule marks (an exclusive set's COMMA is no move)
        self.rule_bits = self.table.bits(RULE_MARKS)
        self.end_bits = self.table.bits(SENTENCE_END)

    def scan(self, docs: Sequence[_Doc], starts: Sequence[int], marks: np.ndarray,
             caps: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Per document (none empty): whether its decisions break a rule from state
        ``starts[d]``, and the state the machine reaches over all of its words (it goes
        on past a broken rule as ``DocRules.step`` says)."""
        n_docs = len(docs)
        lengths = np.fromiter((len(d.kept) for d in docs), dtype=np.int64, count=n_docs)
        first = np.zeros(n_docs, dtype=np.int64)
        np.cumsum(lengths[:-1], out=first[1:])
        last = first + lengths - 1
        kept = np.concatenate([d.kept for d in docs])
        codes = self.table.codes(marks[kept]) & self.rule_bits
        doc_of = np.repeat(np.arange(n_docs), lengths)
        start = np.asarray(starts, dtype=np.int64)
        broken = np.zeros(n_docs, dtype=bool)
        if caps is not None:
            ended = np.empty(len(kept), dtype=bool)  # the state a word is entered in
            ended[1:] = (codes[:-1] & self.end_bits) != 0
            ended[first] = (start & ENDED) != 0
            lower = ended & (caps[kept] == 0)
            hits = np.flatnonzero(lower)
            if hits.size:
                cased = cased_flags([docs[d].words[m - first[d]] for m, d in
                                     zip(hits.tolist(), doc_of[hits].tolist(), strict=True)])
                broken[doc_of[hits[cased]]] = True
        ends = np.fromiter((d.ends for d in docs), dtype=bool, count=n_docs)
        # without pairs no move breaks a rule and the state before a word never matters
        # to the next: only each document's last word is stepped
        visit = np.union1d(np.flatnonzero(codes), last) if self.table.rules.pairs else last
        end_state = np.zeros(n_docs, dtype=np.int64)
        move = self.table.move
        doc, state, prev = -1, 0, 0
        for m, d, code in zip(visit.tolist(), doc_of[visit].tolist(), codes[visit].tolist(),
                              strict=True):
            if d != doc:
                doc, state, prev = d, int(start[d]), int(first[d]) - 1
            if m - prev > 1:  # words without rule marks in between
                state &= OPEN_BITS
            state, bad, done = move(state, code)
            prev = m
            if bad:
                broken[d] = True
            if m == last[d]:
                end_state[d] = state
                if done and ends[d]:
                    broken[d] = True
        return broken, end_state


def entry_cap_scores(cap: np.ndarray, cased: np.ndarray, cand: Candidates) -> np.ndarray:
    """(n, S): each word's cap score of entering each state: after a sentence end a cased
    word must take a capital (its best capital label), elsewhere its best label
    (log-probabilities of the cap head, ``cap`` (n, 3))."""
    logc = np.log(np.clip(cap.astype(np.float64), 1e-12, None))
    ended = np.array([bool(s & ENDED) for s in cand.states])
    need = ended[None, :] & cased[:, None]
    return np.where(need, logc[:, 1:].max(axis=1)[:, None], logc.max(axis=1)[:, None])


@dataclass
class _Moves:
    """The move tables of the words that may need a search (the words of the searched
    documents, one after another: document k from row ``first[k]``)."""

    first: dict[int, int]  # document (index in the call) -> its first row
    scores: np.ndarray  # (n, K) candidate scores
    best: np.ndarray  # (n, S, S) best score of a move from state i to state j
    arg: np.ndarray  # (n, S, S) its candidate
    adj: np.ndarray  # (n, S) cap score of entering each state (0 when casing is by rule)


def _moves(docs: Sequence[_Doc], order: Sequence[int], punct: np.ndarray,
           cap: np.ndarray | None, cand: Candidates, thr: np.ndarray, exclusive: bool
           ) -> _Moves:
    """The move tables of the documents ``order`` (indices into ``docs``), in that order."""
    kept = np.concatenate([docs[k].kept for k in order])
    first, row = {}, 0
    for k in order:
        first[k] = row
        row += len(docs[k].kept)
    scores = candidate_scores(punct[kept], cand, thr, exclusive)
    best, arg = best_moves(scores, cand.step)
    adj = (np.zeros((len(kept), len(cand.states))) if cap is None else
           entry_cap_scores(cap[kept], cased_flags([w for k in order for w in docs[k].words]),
                            cand))
    return _Moves(first, scores, best, arg, adj)


@dataclass
class _Found:
    """The searched labelling of one document."""

    choice: np.ndarray  # (n,) candidate per word
    entered: np.ndarray  # (n,) state each word is entered in
    end: int  # the state after its last word


def _search(moves: _Moves, docs: Sequence[_Doc], group: Sequence[int],
            starts: Sequence[int | None], cand: Candidates) -> list[_Found | None]:
    """Viterbi over the machine for the documents ``group``, all at once (one step per
    word position, across documents, longest first); per document its best labelling, or
    None where none obeys the rules (e.g. ``decode.combinations`` without a final mark).
    ``starts``: each one's start state (None: any). The last word of a document that ends
    scores by ``cand.final``. Every document gets exactly the path of a search of its own
    (the same sums in the same order, the same tie-breaking: the first maximum)."""
    n_states = len(cand.states)
    lengths = np.fromiter((len(docs[k].kept) for k in group), dtype=np.int64,
                          count=len(group))
    order = np.argsort(-lengths, kind="stable")
    lengths = lengths[order]
    local = np.zeros(len(group), dtype=np.int64)  # first position of each, in this order
    np.cumsum(lengths[:-1], out=local[1:])
    rows = np.array([moves.first[group[i]] for i in order.tolist()], dtype=np.int64)
    ends = np.array([docs[group[i]].ends for i in order.tolist()], dtype=bool)
    final = np.full(len(group), -1, dtype=np.int64)
    final[ends] = np.arange(int(ends.sum()))
    final_best, final_arg = best_moves(moves.scores[rows[ends] + lengths[ends] - 1],
                                        cand.final)
    value = np.zeros((len(group), n_states))
    for i, k in enumerate(order.tolist()):
        if starts[k] is not None:
            value[i] = -np.inf
            value[i, cand.states.index(starts[k])] = 0.0
    active = len(group) - np.searchsorted(lengths[::-1], np.arange(lengths[0]), side="right")
    back = np.empty((int(lengths.sum()), n_states), dtype=np.int64)
    for j, a in enumerate(active.tolist()):
        r = rows[:a] + j
        step = moves.best[r]
        closing = np.flatnonzero(ends[:a] & (lengths[:a] == j + 1))
        if closing.size:
            step[closing] = final_best[final[closing]]
        total = (value[:a] + moves.adj[r])[:, :, None] + step
        b = total.argmax(axis=1)
        back[local[:a] + j] = b
        value[:a] = np.take_along_axis(total, b[:, None, :], axis=1)[:, 0, :]
    feasible = np.isfinite(value.max(axis=1))
    state = value.argmax(axis=1)
    end = state.copy()
    after = np.empty(len(back), dtype=np.int64)
    entered = np.empty(len(back), dtype=np.int64)
    for j in range(len(active) - 1, -1, -1):
        a = int(active[j])
        p = local[:a] + j
        after[p] = state[:a]
        state[:a] = back[p, state[:a]]
        entered[p] = state[:a]
    choice = moves.arg[np.repeat(rows, lengths) + _ranks(lengths), entered, after]
    closing = local[ends] + lengths[ends] - 1
    choice[closing] = final_arg[np.arange(len(closing)), entered[closing], after[closing]]
    names = np.asarray(cand.states, dtype=np.int64)
    found: list[_Found | None] = [None] * len(group)
    for i, k in enumerate(order.tolist()):
        if feasible[i]:
            sl = slice(local[i], local[i] + lengths[i])
            found[k] = _Found(choice[sl], names[entered[sl]], int(names[end[i]]))
    return found


def _ranks(lengths: np.ndarray) -> np.ndarray:
    """0..n-1 for each length n, one after another."""
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.arange(int(lengths.sum())) - starts


def constrain(marks: np.ndarray, caps: np.ndarray | None, punct: np.ndarray,
              cap: np.ndarray | None, seqs: Sequence[WordSeq], labels: Sequence[str],
              threshold: float | np.ndarray, exclusive: bool = False,
              allowed: np.ndarray | None = None, edges: Edges | None = None,
              through: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """Decisions that obey the rules: ``marks`` (N, P) and ``caps`` (N,) (None when
    casing is by rule) made per word, rewritten per document where they break one.
    ``punct``/``cap``: the model's probabilities; ``allowed``: the combination matrix of
    ``decode.combinations`` (None: any set); ``through``: which of the N words pass
    through, where known (else computed here).

    Documents are checked and searched together; a document that continues one of this
    call (``edges``: not its first block) waits for that one, since it starts in the
    state the earlier block ends in."""
    labels = list(labels)
    rules = DocRules.for_labels(labels)
    cand = candidates(labels, exclusive, allowed)
    marks, caps = marks.copy(), None if caps is None else caps.copy()
    cap = cap if caps is not None else None  # casing by rule: no cap scores
    thr = np.asarray(threshold, dtype=np.float64)
    docs = _documents(seqs, edges, marks, through)
    check = _Checker(rules, labels, cand.cols)
    continued = {d.utt for d in docs if not d.starts}
    # documents that open in this call and have no later block here: all at once
    free = [k for k, d in enumerate(docs) if len(d.kept) and d.starts
            and d.utt not in continued]
    alone = set(free)
    tied = [k for k, d in enumerate(docs) if len(d.kept) and k not in alone]
    broken = np.zeros(len(docs), dtype=bool)
    end_state = np.zeros(len(docs), dtype=np.int64)
    opening = [k for k in (*free, *tied) if docs[k].starts]
    if opening:
        broken[opening], end_state[opening] = check.scan(
            [docs[k] for k in opening], [ENDED] * len(opening), marks, caps)
    maybe = [k for k, d in enumerate(docs) if len(d.kept) and (not d.starts or broken[k])]
    moves = _moves(docs, maybe, punct, cap, cand, thr, exclusive) if maybe else None
    searched = [k for k in free if broken[k]]
    if moves is not None and searched:
        found = _search(moves, docs, searched, [ENDED] * len(searched), cand)
        _apply([(docs[k], f) for k, f in zip(searched, found, strict=True) if f is not None],
               marks, caps, cap, cand)
        for k, f in zip(searched, found, strict=True):
            if f is not None:
                end_state[k] = f.end
    for k in tied:  # in order: each may start where an earlier block of its document ended
        doc = docs[k]
        start = ENDED if doc.starts else (edges.carry.get(doc.utt) if edges else None)
        if not doc.starts:
            verdict, state = check.scan([doc], [0 if start is None else start], marks, caps)
            broken[k], end_state[k] = verdict[0], state[0]
        if broken[k] and moves is not None:
            one = _search(moves, docs, [k], [start], cand)[0]
            if one is not None:
                _apply([(doc, one)], marks, caps, cap, cand)
                end_state[k] = one.end
        if edges is not None:
            _carry(edges, doc, int(end_state[k]))
    if edges is not None:
        for k in free:
            _carry(edges, docs[k], int(end_state[k]))
    return marks, caps


def _apply(found: Sequence[tuple[_Doc, _Found]], marks: np.ndarray,
           caps: np.ndarray | None, cap: np.ndarray | None, cand: Candidates) -> None:
    """Write the searched labellings of documents into ``marks`` and ``caps``: a word
    entered after a sentence end that has no capital gets the likelier of FIRST_CAP and
    ALL_CAPS."""
    if not found:
        return
    kept = np.concatenate([doc.kept for doc, _ in found])
    marks[kept[:, None], cand.cols[None, :]] = cand.sets[
        np.concatenate([f.choice for _, f in found])]
    if caps is None or cap is None:  # casing by rule
        return
    entered = np.concatenate([f.entered for _, f in found])
    hits = np.flatnonzero(((entered & ENDED) != 0) & (caps[kept] == 0))
    if hits.size:
        words = [w for doc, _ in found for w in doc.words]
        g = kept[hits[cased_flags([words[j] for j in hits.tolist()])]]
        caps[g] = _FIRST_CAP + cap[g, 1:].argmax(axis=1)


def _carry(edges: Edges, doc: _Doc, state: int) -> None:
    """Remember the state a document not yet ended goes on in."""
    if doc.ends:
        edges.carry.pop(doc.utt, None)
    else:
        edges.carry[doc.utt] = state
