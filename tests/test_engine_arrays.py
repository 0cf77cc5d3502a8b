"""The engine's array helpers against their plain definitions: the window walk (all
sequences together or one by one), ragged ranges, chunks of batches, column-wise argmax,
exclusive decisions, and the slot aggregator reading only what its rule needs."""

from __future__ import annotations

from bisect import bisect_left, bisect_right

import numpy as np
import pytest

from punct.engine.aggregate import Aggregator, SlotAggregator
from punct.engine.decode import MarkSets, exclusive_marks, ordered_marks, row_argmax
from punct.labels import get_label_set
from punct.models.subword import plan as plan_module


def walk_by_definition(cum: np.ndarray, seq_start: np.ndarray, capacity: int, stride: int
                       ) -> tuple[list[int], list[int]]:
    """The windows of every sequence, word by word from its start (the loop the plan
    used to run)."""
    cum_l = cum.tolist()
    firsts: list[int] = []
    lasts: list[int] = []
    for a, b in zip(seq_start[:-1].tolist(), seq_start[1:].tolist(), strict=True):
        f = a
        while f < b:
            base = cum_l[f]
            last = bisect_right(cum_l, base + capacity, f, b + 1) - 1
            firsts.append(f)
            lasts.append(last)
            if last >= b:
                break
            f = max(f + 1, min(bisect_left(cum_l, base + stride, f, b), last))
    return firsts, lasts


@pytest.mark.parametrize("together", [1, 4, 10**9])
def test_walk_as_defined(together: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_module, "WALK_TOGETHER", together)
    rng = np.random.default_rng(together)
    for trial in range(200):
        lens = rng.integers(0, 50, int(rng.integers(0, 40)))
        lens[rng.random(len(lens)) < 0.2] = 0  # empty utterances
        if trial % 10 == 0 and len(lens):
            lens[0] = 2000  # a long stream among short utterances
        capacity, stride = int(rng.integers(1, 30)), int(rng.integers(1, 40))
        n_pieces = rng.integers(1, 6, int(lens.sum())).clip(max=capacity)
        cum = plan_module._exclusive_cumsum(n_pieces)
        seq_start = plan_module._exclusive_cumsum(lens)
        first, last = plan_module._walk(cum, seq_start, capacity, stride)
        assert (first.tolist(), last.tolist()) == walk_by_definition(cum, seq_start,
                                                                     capacity, stride)


def test_ragged_ranges_skip_empty_runs() -> None:
    starts = np.array([5, 0, 9, 2, 7])
    counts = np.array([2, 0, 3, 0, 1])
    assert plan_module._ragged(starts, counts).tolist() == [5, 6, 9, 10, 11, 7]
    assert plan_module._ragged(starts[:0], counts[:0]).tolist() == []
    assert plan_module._ragged(starts[1:2], counts[1:2]).tolist() == []


def test_chunks_hold_at_most_the_limit_or_one_batch() -> None:
    spans = np.array([5, 5, 12, 1, 1, 1, 4])
    assert list(plan_module._chunks(spans, 10)) == [(0, 2), (2, 3), (3, 7)]
    assert list(plan_module._chunks(spans, 1)) == [(k, k + 1) for k in range(7)]
    assert list(plan_module._chunks(spans[:0], 10)) == []


@pytest.mark.parametrize("order", ["C", "F"])
def test_row_argmax_first_maximum_as_argmax(order: str) -> None:
    rng = np.random.default_rng(0)
    for n_cols in (1, 2, 3, 4, 5):
        x = np.asarray(rng.integers(0, 3, (500, n_cols)).astype(float), order=order)
        x[::50] = -0.0  # ties everywhere, signed zeros
        assert row_argmax(x).tolist() == x.argmax(axis=1).tolist()
        x[7, n_cols - 1] = np.nan
        assert row_argmax(x).tolist() == x.argmax(axis=1).tolist()
    assert row_argmax(np.zeros((0, 3))).tolist() == []


def test_exclusive_marks_as_argmax_over_o_and_the_marks() -> None:
    rng = np.random.default_rng(1)
    punct = rng.random((2000, 3)) / 2
    punct[:100] = 0.25  # O ties with every mark: O wins
    punct[100:110, 1] = 0.5  # a mark ties with O (0.5 vs 0.25 + 0.25 + ...)
    punct[120, 0] = np.nan
    p_o = 1.0 - punct.sum(axis=1, keepdims=True)
    want = np.concatenate([p_o, punct], axis=1).argmax(axis=1)
    marks = exclusive_marks(np.asfortranarray(punct))
    assert (marks.sum(axis=1) <= 1).all()
    assert np.where(marks.any(axis=1), marks.argmax(axis=1) + 1, 0).tolist() == want.tolist()


@pytest.mark.parametrize(("mode", "exclusive"), [("mean", False), ("sum", False),
                                                 ("sum", True)])
@pytest.mark.parametrize("logits", [True, False])
@pytest.mark.parametrize("layout", ["C", "F"])
def test_slot_aggregator_as_the_aggregator(mode: str, exclusive: bool, logits: bool,
                                           layout: str) -> None:
    """Float32 outputs in batches (rows contiguous, or columns as the engine hands
    them), words predicted up to four times: the same sums as ``Aggregator`` whether
    the activations are given or derived."""
    rng = np.random.default_rng(2)
    n_words, n_punct = 40, 3
    slot = SlotAggregator(n_words, mode, exclusive)
    ref = Aggregator(n_words, n_punct, True, mode, exclusive)
    for ids in (rng.permutation(n_words), rng.integers(0, n_words, 70), np.arange(n_words)):
        raw = rng.normal(size=(len(ids), n_punct)).astype(np.float32)
        cap_raw = rng.normal(size=(len(ids), 3)).astype(np.float32)
        punct = (np.exp(raw) / (1 + np.exp(raw).sum(axis=1, keepdims=True)) if exclusive
                 else 1 / (1 + np.exp(-raw))).astype(np.float32)
        cap = (np.exp(cap_raw) / np.exp(cap_raw).sum(axis=1, keepdims=True)).astype(np.float32)
        extra = (raw, cap_raw) if logits else (None, None)
        wanted = slot.wants(punct, cap, *extra)
        assert wanted == ((True, True, False, False) if mode == "mean" or not logits
                          else (False, False, True, True))
        # only what the aggregator wants reaches it (as the engine gathers it)
        given = [np.asarray(x, order=layout) if keep else None
                 for x, keep in zip((punct, cap, *extra), wanted, strict=True)]
        slot.add(ids, *given)
        ref.add(ids[None], punct[None], cap[None],
                *(None if x is None else x[None] for x in extra))
    for got, want in zip(slot.result(), ref.result(), strict=True):
        np.testing.assert_array_equal(got, want)


def test_one_block_of_columns_summed_as_it_came() -> None:
    """One block with contiguous columns (the engine's) is read without a copy; the mean
    is the sums divided in place."""
    rng = np.random.default_rng(4)
    ids = np.concatenate([np.arange(6), np.arange(2, 9), [3]])
    probs = np.asfortranarray(rng.random((len(ids), 2)).astype(np.float32))
    agg = SlotAggregator(9)
    agg.add(ids, probs)
    assert agg._column(0) is probs
    punct, cap, counts = agg.result()
    assert cap is None and counts.tolist() == [1, 1, 2, 3, 2, 2, 1, 1, 1]
    want = np.zeros((9, 2))
    for i, row in zip(ids, probs.astype(np.float64), strict=True):
        want[i] += row
    np.testing.assert_array_equal(punct, want / counts[:, None])


def test_slot_aggregator_needs_the_same_outputs_every_batch() -> None:
    agg = SlotAggregator(3)
    agg.add(np.array([0, 1]), np.zeros((2, 1), dtype=np.float32),
            np.zeros((2, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="same outputs"):
        agg.add(np.array([2]), np.zeros((1, 1), dtype=np.float32))
    with pytest.raises(ValueError, match="no mark probabilities"):
        agg.add(np.array([2]), None)


def test_mark_sets_as_ordered_marks_word_by_word() -> None:
    """Every set of marks put in reading order once gives each word what
    ``ordered_marks`` gives it (full13: opening marks among them)."""
    labels = get_label_set("full13").labels
    rng = np.random.default_rng(6)
    sets = MarkSets(labels)
    for rate in (0.05, 0.3):
        marks = rng.random((500, len(labels))) < rate
        assert sets.of_rows(marks) == [ordered_marks(row, labels) for row in marks]
    assert len(sets.known) > 100  # the second call reused and added sets
    assert sets.of_rows(np.zeros((0, len(labels)), dtype=bool)) == []
