"""Constrained decoding as it was before the batched search (issue 20): the oracle of
``tests/test_constraints.py`` and the "before" of ``python -m punct.bin.bench_engine``.

Each document is checked by running the machine word by word in Python and searched by
its own Viterbi loop. Not used by the recipes: :func:`punct.engine.constraints.constrain`
must take the same decisions (it differs only where no labelling obeys the rules and the
document goes on in a later block: there it carries the state the machine reaches over
the whole block, where this one carried the state at the first broken rule).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from punct.engine.constraints import (
    Candidates,
    Edges,
    MoveTable,
    best_moves,
    candidate_scores,
    candidates,
    entry_cap_scores,
)
from punct.engine.doc_rules import ENDED, DocRules, is_cased, needs_capital
from punct.engine.symbols import is_passthrough
from punct.labels import CAP_LABELS
from punct.models.base import WordSeq

FIRST_CAP = CAP_LABELS.index("FIRST_CAP")


class _Checker:
    """Whether given decisions break a rule: the machine run over them word by word."""

    def __init__(self, rules: DocRules, labels: Sequence[str], cols: np.ndarray):
        self.table = MoveTable(rules, labels, cols)

    def breaks(self, marks: np.ndarray, caps: np.ndarray | None, words: list[str],
               start: int, ends: bool) -> tuple[bool, int]:
        """Whether one document's decisions break a rule; the state after them."""
        codes = self.table.codes(marks).tolist()
        caps_list = caps.tolist() if caps is not None else None
        state, done = start, False
        for j, code in enumerate(codes):
            if caps_list is not None and caps_list[j] == 0 and state & ENDED \
                    and is_cased(words[j]):
                return True, state
            state, broken, done = self.table.move(state, code)
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
           cand: Candidates, thr: np.ndarray, exclusive: bool) -> _Moves:
    scores = candidate_scores(punct[kept], cand, thr, exclusive)
    best, arg = best_moves(scores, cand.step)
    adj = (np.zeros((len(kept), len(cand.states))) if cap is None else
           entry_cap_scores(cap[kept], np.array([is_cased(w) for w in words]), cand))
    return _Moves({g: r for r, g in enumerate(kept)}, scores, best, arg, adj)


def _viterbi(moves: _Moves, kept: list[int], scores_last: np.ndarray | None,
             cand: Candidates, start: int | None) -> tuple[np.ndarray, list[int]] | None:
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


def reference_constrain(marks: np.ndarray, caps: np.ndarray | None, punct: np.ndarray,
                        cap: np.ndarray | None, seqs: Sequence[WordSeq],
                        labels: Sequence[str], threshold: float | np.ndarray,
                        exclusive: bool = False, allowed: np.ndarray | None = None,
                        edges: Edges | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """Decisions that obey the rules: ``marks`` (N, P) and ``caps`` (N,) (None when
    casing is by rule) made per word, rewritten per document where they break one.
    ``punct``/``cap``: the model's probabilities; ``allowed``: the combination matrix of
    ``decode.combinations`` (None: any set)."""
    labels = list(labels)
    rules = DocRules.for_labels(labels)
    cand = candidates(labels, exclusive, allowed)
    marks, caps = marks.copy(), None if caps is None else caps.copy()
    cap = cap if caps is not None else None
    thr = np.asarray(threshold, dtype=np.float64)
    docs = []  # per sequence: own speech words (global), their words, start, ends
    for k, seq in enumerate(seqs):
        lo, hi, starts, ends = edges.spans[k] if edges else (0, len(seq), True, True)
        own = range(seq.offset + lo, seq.offset + hi)
        through = [g for g in own if is_passthrough(seq.words[g - seq.offset])]
        marks[through] = False
        kept = [g for g in own if not is_passthrough(seq.words[g - seq.offset])]
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
                        caps[g] = FIRST_CAP + int(cap[g, 1:].argmax())
        if edges is not None:
            if ends:
                edges.carry.pop(utt, None)
            else:
                edges.carry[utt] = state
    return marks, caps
