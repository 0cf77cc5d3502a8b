"""Left-to-right GMM-HMMs and Viterbi search, in numpy (no HMM library).

- :class:`DiagGMM`: diagonal-covariance Gaussian mixture, EM with mixture splitting.
- :class:`PhraseHMM`: ``n_states`` left-to-right states (stay or advance by one), one
  GMM per state; leaving the last state ends the model.
- :func:`viterbi_chain`: best state path through one left-to-right chain that starts in
  the first state and ends in the last (forced alignment).
- :func:`viterbi_loop`: best segmentation of a sequence by a loop over several models
  (free phrase recognition); every model entry costs ``insertion`` (a log-likelihood
  added per phrase: 0 = dense, very negative = sparse).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

LOG_2PI = float(np.log(2.0 * np.pi))
NEG_INF = -np.inf


def logsumexp(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable log(sum(exp(x))) along ``axis`` (all -inf -> -inf)."""
    top = np.max(x, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(x - top), axis=axis, keepdims=True)) + top
    return np.squeeze(out, axis=axis)


@dataclass
class DiagGMM:
    """Gaussian mixture with diagonal covariances: weights (M,), means and variances (M, D)."""

    weights: np.ndarray
    means: np.ndarray
    variances: np.ndarray

    def component_loglik(self, x: np.ndarray) -> np.ndarray:
        """log(w_m N(x_t; mu_m, var_m)) for every frame and component: (T, M)."""
        x = np.asarray(x, dtype=np.float64)
        inv = 1.0 / self.variances
        const = -0.5 * (x.shape[1] * LOG_2PI + np.log(self.variances).sum(axis=1)
                        + (self.means ** 2 * inv).sum(axis=1))
        quad = -0.5 * (x ** 2) @ inv.T + x @ (self.means * inv).T
        with np.errstate(divide="ignore"):
            return quad + const + np.log(self.weights)

    def log_likelihood(self, x: np.ndarray) -> np.ndarray:
        """log p(x_t) per frame: (T,)."""
        return logsumexp(self.component_loglik(x), axis=1)

    @classmethod
    def fit(cls, x: np.ndarray, n_mix: int = 1, n_iter: int = 10, var_floor: float = 1e-3,
            min_frames_per_mix: int = 10) -> DiagGMM:
        """EM from one Gaussian, splitting the heaviest component until ``n_mix`` (at most
        one component per ``min_frames_per_mix`` frames)."""
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or len(x) == 0:
            raise ValueError(f"need a non-empty (T, D) matrix, got shape {x.shape}")
        n_mix = max(1, min(n_mix, len(x) // min_frames_per_mix))
        gmm = cls(np.ones(1), x.mean(axis=0, keepdims=True),
                  np.maximum(x.var(axis=0, keepdims=True), var_floor))
        while True:
            for _ in range(n_iter):
                gmm = gmm._em_step(x, var_floor)
            if len(gmm.weights) >= n_mix:
                return gmm
            gmm = gmm._split()

    def _em_step(self, x: np.ndarray, var_floor: float) -> DiagGMM:
        comp = self.component_loglik(x)
        post = np.exp(comp - logsumexp(comp, axis=1)[:, None])  # (T, M)
        occ = post.sum(axis=0)
        keep = occ > 1e-3
        post, occ = post[:, keep], occ[keep]
        means = post.T @ x / occ[:, None]
        variances = np.maximum(post.T @ (x ** 2) / occ[:, None] - means ** 2, var_floor)
        return DiagGMM(occ / occ.sum(), means, variances)

    def _split(self) -> DiagGMM:
        k = int(np.argmax(self.weights))
        shift = 0.5 * np.sqrt(self.variances[k])
        weights = np.concatenate([self.weights, [self.weights[k] / 2]])
        weights[k] /= 2
        means = np.vstack([self.means, self.means[k] + shift])
        means[k] = means[k] - shift
        return DiagGMM(weights, means, np.vstack([self.variances, self.variances[k]]))

    def to_dict(self) -> dict[str, list]:
        return {"weights": self.weights.tolist(), "means": self.means.tolist(),
                "variances": self.variances.tolist()}

    @classmethod
    def from_dict(cls, d: dict[str, list]) -> DiagGMM:
        return cls(np.asarray(d["weights"], dtype=np.float64),
                   np.asarray(d["means"], dtype=np.float64),
                   np.asarray(d["variances"], dtype=np.float64))


@dataclass
class PhraseHMM:
    """A left-to-right model: per state a GMM, log P(stay) and log P(advance/exit)."""

    gmms: list[DiagGMM]
    log_stay: np.ndarray
    log_next: np.ndarray

    @property
    def n_states(self) -> int:
        return len(self.gmms)

    def state_loglik(self, x: np.ndarray) -> np.ndarray:
        """Emission log-likelihoods (T, n_states)."""
        return np.stack([g.log_likelihood(x) for g in self.gmms], axis=1)

    def to_dict(self) -> dict[str, list]:
        return {"gmms": [g.to_dict() for g in self.gmms], "log_stay": self.log_stay.tolist(),
                "log_next": self.log_next.tolist()}

    @classmethod
    def from_dict(cls, d: dict[str, list]) -> PhraseHMM:
        return cls([DiagGMM.from_dict(g) for g in d["gmms"]],
                   np.asarray(d["log_stay"], dtype=np.float64),
                   np.asarray(d["log_next"], dtype=np.float64))


def transitions_from_durations(mean_frames: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log P(stay), log P(advance) of states with the given mean occupancies (frames)."""
    p_next = 1.0 / np.maximum(np.asarray(mean_frames, dtype=np.float64), 1.0 + 1e-6)
    p_next = np.clip(p_next, 1e-4, 1.0 - 1e-4)
    return np.log1p(-p_next), np.log(p_next)


def viterbi_chain(loglik: np.ndarray, log_stay: np.ndarray, log_next: np.ndarray
                  ) -> tuple[np.ndarray, float]:
    """Best path through a left-to-right chain of S states over T frames.

    ``loglik`` (T, S) emission log-likelihoods; the path starts in state 0, moves by
    0 or 1 state per frame and ends in state S-1 (leaving it with ``log_next[-1]``).
    Returns (state per frame (T,), path log-likelihood); ValueError when T < S.
    """
    loglik = np.asarray(loglik, dtype=np.float64)
    t_len, s_len = loglik.shape
    if t_len < s_len:
        raise ValueError(f"{t_len} frames cannot pass through {s_len} states")
    delta = np.full(s_len, NEG_INF)
    delta[0] = loglik[0, 0]
    advanced = np.zeros((t_len, s_len), dtype=bool)
    for t in range(1, t_len):
        stay = delta + log_stay
        adv = np.full(s_len, NEG_INF)
        adv[1:] = delta[:-1] + log_next[:-1]
        advanced[t] = adv > stay
        delta = np.maximum(stay, adv) + loglik[t]
    score = float(delta[-1] + log_next[-1])
    path = np.empty(t_len, dtype=np.int64)
    state = s_len - 1
    for t in range(t_len - 1, -1, -1):
        path[t] = state
        if t > 0 and advanced[t, state]:
            state -= 1
    return path, score


@dataclass(frozen=True)
class Segment:
    """A recognised phrase: model index and frames ``[start, end)``."""

    model: int
    start: int
    end: int


def viterbi_loop(logliks: Sequence[np.ndarray], models: Sequence[PhraseHMM],
                 insertion: float = 0.0, log_priors: np.ndarray | None = None
                 ) -> tuple[list[Segment], float]:
    """Best segmentation of T frames by a loop over ``models``.

    ``logliks[k]`` (T, S_k) are the emission log-likelihoods of model k. Each phrase
    enters a model in its first state (log prior of the model + ``insertion``), walks
    left to right, and leaves from its last state (``log_next[-1]``); the sequence must
    end leaving a last state (if no model fits, e.g. fewer frames than states, the best
    partial path is taken). Returns the segments in time order and the path score.
    """
    k_len = len(models)
    sizes = [m.n_states for m in models]
    firsts = np.cumsum([0, *sizes[:-1]])
    lasts = firsts + np.array(sizes) - 1
    log_stay = np.concatenate([m.log_stay for m in models])
    log_next = np.concatenate([m.log_next for m in models])
    ll = np.concatenate([np.asarray(x, dtype=np.float64) for x in logliks], axis=1)
    t_len, s_len = ll.shape
    priors = (np.full(k_len, -np.log(k_len)) if log_priors is None
              else np.asarray(log_priors, dtype=np.float64))
    entry_cost = priors + insertion
    not_first = np.ones(s_len, dtype=bool)
    not_first[firsts] = False
    delta = np.full(s_len, NEG_INF)
    delta[firsts] = entry_cost + ll[0, firsts]
    back = np.zeros((t_len, s_len), dtype=np.int32)  # source state
    entered = np.zeros((t_len, s_len), dtype=bool)  # arrived by a model entry
    entered[0, firsts] = True
    idx = np.arange(s_len, dtype=np.int32)
    for t in range(1, t_len):
        stay = delta + log_stay
        adv = np.full(s_len, NEG_INF)
        adv[1:] = delta[:-1] + log_next[:-1]
        adv[~not_first] = NEG_INF
        exits = delta[lasts] + log_next[lasts]
        best_exit = int(np.argmax(exits))
        enter = np.full(s_len, NEG_INF)
        enter[firsts] = exits[best_exit] + entry_cost
        src = np.where(adv > stay, idx - 1, idx)
        best = np.maximum(stay, adv)
        take_entry = enter > best
        back[t] = np.where(take_entry, lasts[best_exit], src)
        entered[t] = take_entry
        delta = np.where(take_entry, enter, best) + ll[t]
    final = delta[lasts] + log_next[lasts]
    if np.isfinite(final).any():
        state = int(lasts[int(np.argmax(final))])
        score = float(final.max())
    else:
        state = int(np.argmax(delta))
        score = float(delta[state])
    model_of = np.repeat(np.arange(k_len), sizes)
    segments: list[Segment] = []
    end = t_len
    for t in range(t_len - 1, -1, -1):
        if entered[t, state]:
            segments.append(Segment(int(model_of[state]), t, end))
            end = t
        state = int(back[t, state])
    segments.reverse()
    return segments, score
