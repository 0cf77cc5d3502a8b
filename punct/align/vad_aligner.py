"""``vad``: VAD-constrained word alignment that needs only the audio and the words.

No acoustic model, so it works offline for any language:

1. an energy detector (:mod:`punct.align.vad`) finds speech regions separated by
   pauses of at least ``min_pause``;
2. every word gets a predicted relative duration from its letters (a per-word constant
   plus per-consonant and per-vowel weights; digits count as several letters);
3. dynamic programming assigns contiguous runs of words to runs of consecutive regions
   (word boundaries may fall on pauses; a word may span a short pause, at a cost
   growing with its length, never one longer than ``max_inner_gap``; regions may be
   left without words, e.g. noise or breaths), minimising the squared mismatch between
   the run's duration and its predicted duration at one utterance-level speaking rate,
   which is re-estimated from the assignment until it settles;
4. inside a run, word boundaries are placed proportionally to the predicted durations
   over the run's speech time, snapped onto the run's inner pauses when one is close,
   and otherwise moved to the nearby energy minimum.

Robust by construction: more pauses than word gaps (regions skipped or spanned), fewer
regions than words (several words per region), a single word, no detected speech
(then the whole utterance is one region).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from punct.align.base import Aligner, AlignRequest, AlignResult
from punct.align.vad import (
    FRAME_SHIFT,
    NucleiConfig,
    VadConfig,
    frame_log_energy,
    speech_mask,
    syllable_nuclei,
    thresholds,
)
from punct.align.vad import runs as runs_of
from punct.data.timed import TimedWord

VOWELS = frozenset("aeiouyáéíóúàèìòùäëïöüőűâêîôûãõåæøœ")
#: Hesitation words (EN, ES, EU, HU transcription conventions), spoken long.
FILLERS = frozenset({"um", "uh", "uhm", "umm", "erm", "er", "ehm", "eh", "em", "mm", "hmm",
                     "mhm", "ah", "ee", "ö", "öö", "hm"})


@dataclass(frozen=True)
class VadAlignConfig:
    """Duration model and dynamic-programming weights (seconds where not stated)."""

    vad: VadConfig = field(default_factory=VadConfig)
    word_constant: float = 2.5     # duration units per word
    consonant: float = 1.0         # units per consonant letter
    vowel: float = 0.8             # units per vowel letter
    digit: float = 3.0             # units per digit (spoken numbers are long)
    filler_units: float = 9.0      # hesitations (um, uh, ...) are long
    duration_cv: float = 0.45      # std of a word's duration / its prediction
    local_rate_sigma: float = 0.1   # std of a run's log rate around the current rate
    edge_sigma: float = 0.06       # std of a run's duration from region edge errors
    dof: float = 3.0               # Student-t degrees of freedom of the mismatch cost
    gap_sigma: float = 0.12        # a spanned pause of this length costs 1
    max_inner_gap: float = 0.5     # a run never spans a longer pause
    skip_cost: float = 4.0         # leaving a region without words: constant
    skip_cost_per_s: float = 12.0  # ... plus this per second of its speech
    max_regions_per_run: int = 6
    rate_iterations: int = 4
    duration_weight: float = 1.0   # weight of the duration mismatch of a run
    syllable_weight: float = 1.0   # weight of the syllable-count mismatch of a run
    syllable_a: float = 0.3        # variance of a run's nucleus count: a * expected + b
    syllable_b: float = 0.7
    skip_cost_per_syllable: float = 1.0
    nuclei: NucleiConfig = field(default_factory=NucleiConfig)
    rate_bins: int = 5             # rate may vary over 2 * rate_bins + 1 values ...
    rate_step: float = 0.25        # ... spaced by this many octaves
    rate_change_cost: float = 1.0  # moving one rate bin between consecutive runs
    rate_prior: float = 0.1        # per run, times (bins away from the global rate)**2
    beam: float = 80.0
    edge_pad: float = 0.0          # widen speech regions by this much on each side
    snap_share: float = 0.45       # snap a boundary to a pause within this share of a word
    refine_window: float = 0.06    # energy-minimum search radius for other boundaries
    min_word: float = 0.03


def predicted_syllables(word: str, lang: str | None = None) -> int:
    """Syllables predicted from spelling: groups of vowel letters (at least 1).

    For English (``lang`` "en") a final silent "e" (as in "price", not "the", "table")
    does not count.
    """
    groups, prev = 0, False
    word = word.lower()
    for ch in word:
        vowel = ch in VOWELS
        groups += vowel and not prev
        prev = vowel
    if (lang or "").lower().startswith("en") and groups > 1 and len(word) > 2:
        if word[-1] == "e" and word[-2] not in VOWELS and not word.endswith("le"):
            groups -= 1
    digits = sum(ch.isdigit() for ch in word)
    return max(1, groups + 2 * digits)


def predicted_units(word: str, config: VadAlignConfig = VadAlignConfig()) -> float:
    """Relative spoken duration of ``word`` from its letters (> 0)."""
    if word.lower() in FILLERS:
        return config.filler_units
    units = config.word_constant
    for ch in word.lower():
        if ch.isdigit():
            units += config.digit
        elif ch in VOWELS:
            units += config.vowel
        elif ch.isalpha():
            units += config.consonant
    return units


@dataclass
class _Problem:
    starts: np.ndarray   # region starts (s)
    ends: np.ndarray     # region ends (s)
    units: np.ndarray    # predicted units per word
    cum: np.ndarray      # prefix sums of units (len N+1)
    cum2: np.ndarray     # prefix sums of units**2
    syl_cum: np.ndarray  # prefix sums of predicted syllables per word (len N+1)
    nuclei: np.ndarray   # times (s) of detected syllable nuclei, sorted
    syl_ratio: float = 1.0  # detected / predicted syllables (re-estimated)

    def observed(self, t0: float, t1: float) -> int:
        """Detected nuclei in [t0, t1)."""
        return int(np.searchsorted(self.nuclei, t1) - np.searchsorted(self.nuclei, t0))


def _assign(
    prob: _Problem, rate: float, cfg: VadAlignConfig
) -> tuple[float, list[tuple[int, int, int, int]]]:
    """DP: best cost and runs (word i0, word i1, region k0, region k1), end-exclusive.

    The speaking rate of a run is one of ``2 * rate_bins + 1`` log-spaced values around
    ``rate``; it may change by one bin from one run to the next (``rate_change_cost``),
    so slow and fast stretches of one recording both fit.
    """
    starts, ends = prob.starts, prob.ends
    n_reg, n_words = len(starts), len(prob.units)
    offsets = np.arange(-cfg.rate_bins, cfg.rate_bins + 1)
    rates = rate * 2.0 ** (offsets * cfg.rate_step)
    prior = cfg.rate_prior * offsets.astype(float) ** 2
    n_r = len(rates)
    inf = math.inf
    cost = np.full((n_reg + 1, n_words + 1, n_r), inf)
    back = np.full((n_reg + 1, n_words + 1, n_r, 3), -1, dtype=np.int64)
    cost[0, 0, :] = 0.0  # the first run may start at any rate
    dur = ends - starts
    gaps = starts[1:] - ends[:-1] if n_reg > 1 else np.zeros(0)
    cv2 = cfg.duration_cv ** 2
    rate_var = cfg.local_rate_sigma ** 2
    log_rates = np.log(rates)
    robust = (cfg.dof + 1.0) / 2.0
    r_idx = np.arange(n_r)
    ratio = prob.syl_ratio
    for k in range(n_reg):
        plane = cost[k]
        row_best = plane.min(axis=1)
        finite = np.flatnonzero(np.isfinite(row_best))
        if finite.size == 0:
            continue
        best = row_best[finite].min()
        skip = (cfg.skip_cost + cfg.skip_cost_per_s * dur[k]
                + cfg.skip_cost_per_syllable * prob.observed(starts[k], ends[k]))
        for i in finite:
            c0 = plane[i]
            if row_best[i] > best + cfg.beam:
                continue
            # a) region k gets no words
            cand = c0 + skip
            better = cand < cost[k + 1, i]
            if better.any():
                cost[k + 1, i, better] = cand[better]
                back[k + 1, i, better] = np.stack(
                    [np.full(better.sum(), k), np.full(better.sum(), i), r_idx[better]], 1
                )
            if i == n_words:
                continue
            # predecessor rate bin for each new bin (stay, or move one step)
            pred = c0.copy()
            pred_r = r_idx.copy()
            for shift in (-1, 1):
                moved = np.full(n_r, inf)
                src = r_idx - shift
                ok = (src >= 0) & (src < n_r)
                moved[ok] = c0[src[ok]] + cfg.rate_change_cost
                take = moved < pred
                pred[take] = moved[take]
                pred_r[take] = src[take]
            if not np.isfinite(pred).any():
                continue
            pred = pred + prior
            # b) words i..j-1 on regions k..last
            inner = 0.0
            for last in range(k, min(n_reg, k + cfg.max_regions_per_run)):
                if last > k:
                    g = gaps[last - 1]
                    if g > cfg.max_inner_gap:
                        break
                    inner += (g / cfg.gap_sigma) ** 2
                span = ends[last] - starts[k]
                if last == n_reg - 1:  # the last region can always take all the rest
                    j_max = n_words
                else:
                    limit = (2.5 * span + 0.5) / rates[0] + prob.cum[i]
                    j_max = int(np.searchsorted(prob.cum, limit, side="right")) - 1
                    j_max = max(min(j_max, n_words), i + 1)
                js = np.arange(i + 1, j_max + 1)
                units = prob.cum[js] - prob.cum[i]
                # log-domain mismatch; variance: word-level jitter + local rate + edges
                var = (
                    cv2 * (prob.cum2[js] - prob.cum2[i]) / units ** 2
                    + rate_var + (cfg.edge_sigma / span) ** 2
                )[None, :]
                z2 = (math.log(span) - log_rates[:, None] - np.log(units)[None, :]) ** 2 / var
                total = pred[:, None] + inner + cfg.duration_weight * robust * np.log1p(
                    z2 / cfg.dof
                )
                if cfg.syllable_weight > 0:
                    expect = ratio * (prob.syl_cum[js] - prob.syl_cum[i])
                    miss = (prob.observed(starts[k], ends[last]) - expect) ** 2 / (
                        cfg.syllable_a * expect + cfg.syllable_b
                    )
                    total = total + cfg.syllable_weight * miss[None, :]
                target = cost[last + 1, js].T  # (R, J)
                better = total < target
                if better.any():
                    rr, jj = np.nonzero(better)
                    cost[last + 1, js[jj], rr] = total[rr, jj]
                    back[last + 1, js[jj], rr, 0] = k
                    back[last + 1, js[jj], rr, 1] = i
                    back[last + 1, js[jj], rr, 2] = pred_r[rr]
    r_end = int(np.argmin(cost[n_reg, n_words]))
    final = float(cost[n_reg, n_words, r_end])
    runs: list[tuple[int, int, int, int]] = []
    if not math.isfinite(final):
        return final, runs
    state = (n_reg, n_words, r_end)
    while state[:2] != (0, 0):
        pk, pi, pr = (int(v) for v in back[state])
        if pi != state[1]:
            runs.append((pi, state[1], pk, state[0]))
        state = (pk, pi, pr)
    runs.reverse()
    return final, runs


def _split_run(
    prob: _Problem,
    run: tuple[int, int, int, int],
    energy: np.ndarray,
    cfg: VadAlignConfig,
) -> list[tuple[float, float]]:
    """Word (start, end) times for one run, see the module docstring (step 4)."""
    i0, i1, k0, k1 = run
    seg_s = prob.starts[k0:k1]
    seg_e = prob.ends[k0:k1]
    seg_d = seg_e - seg_s
    speech = float(seg_d.sum())
    units = prob.units[i0:i1]
    n = len(units)
    if n == 1:
        return [(float(seg_s[0]), float(seg_e[-1]))]
    # speech-time positions of the n-1 internal boundaries
    pos = np.cumsum(units)[:-1] / units.sum() * speech
    seg_cum = np.concatenate(([0.0], np.cumsum(seg_d)))

    def to_time(p: float) -> float:
        m = int(np.clip(np.searchsorted(seg_cum, p, side="right") - 1, 0, len(seg_s) - 1))
        return float(seg_s[m] + (p - seg_cum[m]))

    bounds: list[tuple[float, float]] = [(to_time(p), to_time(p)) for p in pos]
    word_len = units / units.sum() * speech
    # snap boundaries onto inner pauses
    used: set[int] = set()
    for g in range(1, len(seg_s)):
        at = seg_cum[g]
        b = int(np.argmin(np.abs(pos - at)))
        if b in used:
            continue
        tol = cfg.snap_share * min(word_len[b], word_len[b + 1])
        if abs(pos[b] - at) <= tol:
            bounds[b] = (float(seg_e[g - 1]), float(seg_s[g]))
            used.add(b)
    # move the other boundaries to a nearby energy minimum
    if energy.size:
        smooth = np.convolve(energy, np.ones(3) / 3.0, mode="same")
        for b in range(n - 1):
            if b in used:
                continue
            t = bounds[b][0]
            radius = min(cfg.refine_window, 0.3 * min(word_len[b], word_len[b + 1]))
            lo_t = max(t - radius, bounds[b - 1][1] + cfg.min_word if b else seg_s[0])
            hi_t = min(t + radius, seg_e[-1] - cfg.min_word)
            if b + 1 < n - 1:
                hi_t = min(hi_t, bounds[b + 1][0] - cfg.min_word)
            lo = math.ceil(lo_t / FRAME_SHIFT)
            hi = math.floor(hi_t / FRAME_SHIFT)
            if hi <= lo:
                continue
            frames = np.arange(lo, hi + 1)
            frames = frames[frames < smooth.size]
            if frames.size == 0:
                continue
            score = smooth[frames] + 20.0 * np.abs(frames * FRAME_SHIFT - t)
            best = float(frames[int(np.argmin(score))] * FRAME_SHIFT)
            # never move a boundary into a pause of the run
            inside = any(e < best < s for e, s in zip(seg_e[:-1], seg_s[1:], strict=True))
            if not inside:
                bounds[b] = (best, best)
    times = []
    start = float(seg_s[0])
    for b in range(n - 1):
        times.append((start, bounds[b][0]))
        start = bounds[b][1]
    times.append((start, float(seg_e[-1])))
    return times


def align_words(
    samples: np.ndarray,
    rate: int,
    words: list[str] | tuple[str, ...],
    config: VadAlignConfig = VadAlignConfig(),
    lang: str | None = None,
) -> list[TimedWord]:
    """Align ``words`` to mono ``samples``; times in seconds from the first sample.

    ``lang`` (an ISO code such as "en") only refines the syllable estimate of spellings.
    """
    words = list(words)
    if not words:
        return []
    total = len(samples) / rate if rate else 0.0
    energy = frame_log_energy(samples, rate, config.vad)
    regions = runs_of(speech_mask(energy, config.vad))
    nuclei = np.zeros(0)
    if energy.size and config.syllable_weight > 0:
        loud = energy > thresholds(energy, config.vad)[1]
        nuclei = syllable_nuclei(samples, rate, loud, config.nuclei) * FRAME_SHIFT
    pad = config.edge_pad
    starts = np.array([max(0.0, s * FRAME_SHIFT - pad) for s, _ in regions])
    ends = np.array([min(total, e * FRAME_SHIFT + pad) for _, e in regions])
    if len(regions) == 0 or total <= 0:
        starts, ends = np.array([0.0]), np.array([max(total, 1e-3)])
    units = np.array([predicted_units(w, config) for w in words])
    syl = np.array([predicted_syllables(w, lang) for w in words], dtype=float)
    prob = _Problem(
        starts, ends, units,
        np.concatenate(([0.0], np.cumsum(units))),
        np.concatenate(([0.0], np.cumsum(units ** 2))),
        np.concatenate(([0.0], np.cumsum(syl))),
        nuclei,
    )
    seen_all = sum(prob.observed(s, e) for s, e in zip(starts, ends, strict=True))
    prob.syl_ratio = float(np.clip(max(1, seen_all) / syl.sum(), 0.3, 1.5))
    rate_s = float((ends - starts).sum() / units.sum())
    runs: list[tuple[int, int, int, int]] = []
    seen: set[float] = set()
    for _ in range(max(1, config.rate_iterations)):
        cost, runs = _assign(prob, rate_s, config)
        if not math.isfinite(cost):
            break
        used = sum(prob.ends[k1 - 1] - prob.starts[k0] for _, _, k0, k1 in runs)
        new_rate = float(used / units.sum())
        seen_syl = sum(prob.observed(prob.starts[k0], prob.ends[k1 - 1]) for _, _, k0, k1 in runs)
        prob.syl_ratio = float(np.clip(max(1, seen_syl) / syl.sum(), 0.3, 1.5))
        if abs(new_rate - rate_s) < 1e-4 or round(new_rate, 5) in seen:
            break
        seen.add(round(new_rate, 5))
        rate_s = new_rate
    if not runs or not math.isfinite(cost):
        # no feasible assignment (e.g. pauses too long to span): one run over everything
        prob = _Problem(np.array([starts[0]]), np.array([ends[-1]]), units, prob.cum, prob.cum2,
                        prob.syl_cum, nuclei)
        runs = [(0, len(words), 0, 1)]
    out: list[TimedWord] = []
    for run in runs:
        times = _split_run(prob, run, energy, config)
        for w, (s, e) in zip(words[run[0]: run[1]], times, strict=True):
            out.append(TimedWord(w, round(s, 4), round(max(e, s), 4)))
    return out


class VadAligner(Aligner):
    """The offline, language-independent VAD-constrained aligner (see module docstring)."""

    name = "vad"

    def __init__(self, config: VadAlignConfig | None = None, **_: object):
        self.config = config or VadAlignConfig()

    def align(self, request: AlignRequest) -> AlignResult | None:
        samples, rate = request.load_audio()
        words = align_words(samples, rate, request.words, self.config, request.lang)
        return AlignResult(words, len(samples) / rate)
