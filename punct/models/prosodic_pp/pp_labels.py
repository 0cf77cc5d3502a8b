"""Rule-based phonological-phrase (PP) labels for training the PP models.

No PP-labelled corpus is public, so training labels are derived from the prosody
matrix (``punct.features.prosody``: z-normalised F0 in column 0, intensity in column 2)
and the word timings, never from the punctuation (documented in docs/PROSODIC_PP.md):

1. ``sil``: every gap of at least ``min_sil`` seconds between words (and before the
   first / after the last word) is a silence phrase covering the gap.
2. IPs: the runs of words between two ``sil`` phrases.
3. Inside an IP a word opens a new PP when it carries a stress: the F0 peak over the
   first ``onset_share`` of the word exceeds the mean F0 of the preceding word by at least
   ``stress_rise`` (z units), and both the phrase it closes and the one it opens can still
   last ``min_pp`` seconds. The first word of an IP always opens a PP.
4. Types (Moró & Szaszák 2017, Table 1): the first PP of an IP is ``io`` when its onset
   peak is at least ``strong`` above the IP's mean F0, else ``ls``; the last PP of a
   multi-PP IP is ``cr`` when F0 rises over its last ``final_span`` seconds by at least
   ``rise``, else ``ie``; a single-PP IP is ``cr`` when it rises, else ``io``; inner PPs
   are ``ss`` when their stress rise is at least ``strong``, else ``ms``.

Phrases tile the utterance: a short inter-word gap is given to the phrase that ends there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PP_TYPES: tuple[str, ...] = ("io", "ss", "ms", "ie", "cr", "ls", "sil")


@dataclass(frozen=True)
class Phrase:
    """A phonological phrase: type and span in seconds from the utterance start."""

    label: str
    start: float
    end: float

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class RuleConfig:
    """Thresholds of the rules (seconds; F0 in per-utterance z units)."""

    min_sil: float = 0.25
    min_pp: float = 0.25
    onset_share: float = 0.6
    stress_rise: float = 0.4
    strong: float = 0.8
    final_span: float = 0.2
    rise: float = 0.2
    frame_shift: float = 0.01


def _frames(start: float, end: float, shift: float, n: int) -> slice:
    lo = min(max(int(start / shift), 0), max(n - 1, 0))
    hi = min(max(int(np.ceil(end / shift)), lo + 1), n)
    return slice(lo, hi)


def _ips(times: np.ndarray, duration: float, cfg: RuleConfig
         ) -> tuple[list[Phrase], list[list[int]]]:
    """Silence phrases and the word-index runs (IPs) between them."""
    sils: list[Phrase] = []
    ips: list[list[int]] = []
    current: list[int] = []
    prev_end = 0.0
    for i, (start, end) in enumerate(times):
        if start - prev_end >= cfg.min_sil:
            sils.append(Phrase("sil", prev_end, float(start)))
            if current:
                ips.append(current)
            current = []
        current.append(i)
        prev_end = float(end)
    if current:
        ips.append(current)
    if duration - prev_end >= cfg.min_sil:
        sils.append(Phrase("sil", prev_end, duration))
    return sils, ips


def _onset_peak(f0: np.ndarray, start: float, end: float, cfg: RuleConfig) -> float:
    cut = start + cfg.onset_share * (end - start)
    return float(f0[_frames(start, cut, cfg.frame_shift, len(f0))].max())


def _mean(f0: np.ndarray, start: float, end: float, cfg: RuleConfig) -> float:
    return float(f0[_frames(start, end, cfg.frame_shift, len(f0))].mean())


def _final_rise(f0: np.ndarray, start: float, end: float, cfg: RuleConfig) -> float:
    part = f0[_frames(max(start, end - cfg.final_span), end, cfg.frame_shift, len(f0))]
    if len(part) < 2:
        return 0.0
    return float(np.polyfit(np.arange(len(part)) * cfg.frame_shift, part, 1)[0]
                 * min(cfg.final_span, end - start))


def rule_phrases(feats: np.ndarray, times: np.ndarray, duration: float,
                 cfg: RuleConfig | None = None) -> list[Phrase]:
    """PP segmentation and labels of one utterance (see the module docstring).

    ``feats`` (frames, dim) prosody matrix; ``times`` (N, 2) word start/end seconds (all
    known, increasing); ``duration`` the utterance length in seconds.
    """
    cfg = cfg or RuleConfig()
    if len(times) == 0 or len(feats) == 0:
        return [Phrase("sil", 0.0, duration)] if duration > 0 else []
    f0 = np.asarray(feats[:, 0], dtype=np.float64)
    sils, ips = _ips(np.asarray(times, dtype=np.float64), duration, cfg)
    phrases = list(sils)
    for ip in ips:
        # phrase end of word i: its end, or the next word's start (gap < min_sil) in the IP
        ends = [float(times[ip[j + 1], 0]) if j + 1 < len(ip) else float(times[i, 1])
                for j, i in enumerate(ip)]
        ip_start = float(times[ip[0], 0])
        ip_mean = _mean(f0, ip_start, ends[-1], cfg)
        groups: list[tuple[int, float]] = [(0, _onset_peak(f0, ip_start, ends[0], cfg)
                                            - ip_mean)]
        for j in range(1, len(ip)):
            w0, w1 = float(times[ip[j], 0]), float(times[ip[j], 1])
            prev = ip[j - 1]
            rise = (_onset_peak(f0, w0, w1, cfg)
                    - _mean(f0, float(times[prev, 0]), float(times[prev, 1]), cfg))
            opened = float(times[ip[groups[-1][0]], 0])
            if (rise >= cfg.stress_rise and w0 - opened >= cfg.min_pp
                    and ends[-1] - w0 >= cfg.min_pp):
                groups.append((j, rise))
        for g, (j, strength) in enumerate(groups):
            last = groups[g + 1][0] - 1 if g + 1 < len(groups) else len(ip) - 1
            start = float(times[ip[j], 0]) if g else ip_start
            end = ends[last]
            rising = _final_rise(f0, start, end, cfg) >= cfg.rise
            if len(groups) == 1:
                label = "cr" if rising else "io"
            elif g == 0:
                label = "io" if strength >= cfg.strong else "ls"
            elif g == len(groups) - 1:
                label = "cr" if rising else "ie"
            else:
                label = "ss" if strength >= cfg.strong else "ms"
            phrases.append(Phrase(label, start, end))
    phrases.sort(key=lambda p: p.start)
    return _tile(phrases, duration)


def _tile(phrases: list[Phrase], duration: float) -> list[Phrase]:
    """Close small gaps: each phrase extends to the next one's start (the first starts at 0)."""
    out: list[Phrase] = []
    for k, p in enumerate(phrases):
        start = 0.0 if k == 0 else out[-1].end
        end = phrases[k + 1].start if k + 1 < len(phrases) else max(p.end, duration)
        if end > start:
            out.append(Phrase(p.label, start, end))
    return out
