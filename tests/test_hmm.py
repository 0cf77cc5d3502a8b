"""GMM-HMM pieces: Gaussian mixtures, forced (chain) and free (loop) Viterbi, hand-checked."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from punct.models.prosodic_pp.hmm import (
    DiagGMM,
    PhraseHMM,
    Segment,
    transitions_from_durations,
    viterbi_chain,
    viterbi_loop,
)

LOG_HALF = math.log(0.5)


def test_single_gaussian_density_by_hand() -> None:
    gmm = DiagGMM(np.ones(1), np.zeros((1, 2)), np.ones((1, 2)))
    # N(0; 0, I_2) = 1 / (2 pi); at (1, 1): exp(-1) / (2 pi)
    np.testing.assert_allclose(gmm.log_likelihood(np.array([[0.0, 0.0], [1.0, 1.0]])),
                               [-math.log(2 * math.pi), -1 - math.log(2 * math.pi)])


def test_gmm_fit_finds_two_clusters() -> None:
    rng = np.random.default_rng(0)
    x = np.vstack([rng.normal(-3, 0.5, (200, 1)), rng.normal(4, 0.5, (200, 1))])
    gmm = DiagGMM.fit(x, n_mix=2)
    np.testing.assert_allclose(sorted(gmm.means[:, 0]), [-3, 4], atol=0.15)
    np.testing.assert_allclose(gmm.weights, [0.5, 0.5], atol=0.02)
    # fewer frames than min_frames_per_mix allows -> fewer components
    assert len(DiagGMM.fit(x[:15], n_mix=4).weights) == 1


def test_transitions_from_mean_durations() -> None:
    stay, nxt = transitions_from_durations(np.array([4.0]))
    assert math.exp(nxt[0]) == pytest.approx(0.25) and math.exp(stay[0]) == pytest.approx(0.75)


def test_viterbi_chain_two_states_by_hand() -> None:
    # T=3, S=2. Paths: 0,0,1 and 0,1,1 (start in 0, end in 1).
    ll = np.array([[0.0, -5.0], [-1.0, -2.0], [-4.0, 0.0]])
    stay = np.log([0.6, 0.7])
    nxt = np.log([0.4, 0.3])
    path, score = viterbi_chain(ll, stay, nxt)
    a = 0.0 + math.log(0.6) - 1.0 + math.log(0.4) + 0.0 + math.log(0.3)  # 0,0,1
    b = 0.0 + math.log(0.4) - 2.0 + math.log(0.7) + 0.0 + math.log(0.3)  # 0,1,1
    assert a > b
    assert path.tolist() == [0, 0, 1]
    assert score == pytest.approx(a)
    with pytest.raises(ValueError, match="cannot pass"):
        viterbi_chain(ll[:1], stay, nxt)


def test_viterbi_chain_matches_brute_force() -> None:
    rng = np.random.default_rng(3)
    t_len, s_len = 7, 3
    ll = rng.normal(size=(t_len, s_len))
    stay, nxt = np.log(rng.uniform(0.2, 0.8, s_len)), np.log(rng.uniform(0.2, 0.8, s_len))
    best = -np.inf
    for steps in itertools.product((0, 1), repeat=t_len - 1):
        states = np.concatenate([[0], np.cumsum(steps)])
        if states[-1] != s_len - 1:
            continue
        score = ll[0, 0] + nxt[-1]
        for t in range(1, t_len):
            prev = states[t - 1]
            score += (stay[prev] if states[t] == prev else nxt[prev]) + ll[t, states[t]]
        best = max(best, score)
    _, score = viterbi_chain(ll, stay, nxt)
    assert score == pytest.approx(best)


def _one_state(dim: int = 1) -> PhraseHMM:
    return PhraseHMM([DiagGMM(np.ones(1), np.zeros((1, dim)), np.ones((1, dim)))],
                     np.array([LOG_HALF]), np.array([LOG_HALF]))


def test_viterbi_loop_insertion_controls_density() -> None:
    models = [_one_state(), _one_state()]
    ll_a = np.array([[0.0], [0.0], [-10.0], [-9.0]])
    ll_b = np.array([[-10.0], [-10.0], [0.0], [0.0]])
    segs, score = viterbi_loop([ll_a, ll_b], models, insertion=0.0)
    assert segs == [Segment(0, 0, 2), Segment(1, 2, 4)]
    # prior A, stay, exit A, prior B, stay, exit B: six factors of 1/2
    assert score == pytest.approx(6 * LOG_HALF)
    segs, score = viterbi_loop([ll_a, ll_b], models, insertion=-100.0)
    assert segs == [Segment(0, 0, 4)]
    # prior, 3 stays, exit, emissions -19, one insertion
    assert score == pytest.approx(5 * LOG_HALF - 19.0 - 100.0)


def test_viterbi_loop_reenters_the_same_model_and_respects_states() -> None:
    two = PhraseHMM([DiagGMM(np.ones(1), np.zeros((1, 1)), np.ones((1, 1)))] * 2,
                    np.log([0.5, 0.5]), np.log([0.5, 0.5]))
    ll = np.zeros((4, 2))
    segs, _ = viterbi_loop([ll], [two], insertion=5.0)  # insertions pay: shortest phrases
    assert segs == [Segment(0, 0, 2), Segment(0, 2, 4)]
    segs, _ = viterbi_loop([ll[:1]], [two])  # too short for the model: partial path
    assert segs == [Segment(0, 0, 1)]
