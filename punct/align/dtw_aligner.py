"""``dtw``: align words by DTW against an eSpeak NG rendering of the transcript.

The aligner sees only the audio and the unpunctuated words (and the language):

1. **Render.** The words, joined by spaces, are spoken by eSpeak NG with the default
   voice of the utterance's language; the rendering's word timings come from eSpeak's
   word events (:func:`punct.synth.mini.word_timings`). The speaking rate is refitted
   (up to ``rate_iterations`` renderings) so the rendering's speech time (VAD, pauses
   excluded) matches the real audio's.
2. **Features.** 25 ms / 10 ms MFCCs (+ deltas) with per-utterance mean/variance
   normalisation over speech frames, for both signals (:mod:`punct.features`). Silences
   of the rendering are compressed to ``render_keep_silence`` frames, so the rendering
   is (almost) pure speech.
3. **DTW.** Rows are real-audio frames, columns rendering frames; every real frame takes
   exactly one step: stay on the same rendering frame, advance one, or advance two.
   The cumulative cost is computed row by row in numpy inside a band around the
   "speech-time diagonal" (real and rendered frames with the same share of speech time
   before them), so memory is ``n_real x band`` bytes of back-pointers, never
   ``n_real x n_render``. A silent real frame may stay on the rendering at the cheap
   ``silence_cost`` (plus ``mid_word_silence`` away from word boundaries), which is
   how the real pauses that the rendering lacks are absorbed.
4. **Map and snap.** Each rendered word's start/end frame maps to the first real frame
   whose path column reaches it. A detected silence (:mod:`punct.align.vad` with
   ``pause_vad``, at least ``min_pause`` long) that the path absorbed (mostly stays)
   near a rendered word boundary (``snap_tolerance``) becomes that boundary's pause: the
   word before ends where the silence starts, the next starts where it ends.

An unintelligible token of the non-speech map (``(())``, ``<unk>``) is rendered as
:data:`UNINTELLIGIBLE_STAND_IN` (a single vowel in every eSpeak language used here), so
the rendering has a sound where the real audio has the word nobody could make out.

Transcripts that do not match the audio are detected (no speech; a rendering that
would have to be sped up or slowed down beyond ``max_rate_factor``; a DTW path whose
mean cost is hardly below that of a path against the time-reversed rendering,
``max_cost_ratio``; a rendering over twice as long as the audio). Then
the aligner raises :class:`~punct.errors.PunctInputError` naming the wav.scp line
(``on_mismatch="error"``, the default) or returns ``None`` with a warning
(``on_mismatch="skip"``: the CLI writes empty timings for that utterance).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from punct.align.base import Aligner, AlignRequest, AlignResult
from punct.align.vad import FRAME_SHIFT, VadConfig, frame_log_energy, runs, speech_mask
from punct.data.nonspeech import NonSpeechMap, load_nonspeech_map
from punct.data.timed import TimedWord
from punct.errors import PunctInputError
from punct.features.mfcc import MfccConfig, add_deltas, cmvn, mfcc
from punct.synth.espeak import RATE_RANGE, EspeakError, get_engine
from punct.synth.mini import word_timings

#: eSpeak NG voice per utt2lang code (others are passed to eSpeak as they are).
DEFAULT_VOICES: tuple[tuple[str, str], ...] = (("en", "en-us"), ("es", "es"), ("eu", "eu"),
                                               ("hu", "hu"))
#: What eSpeak speaks for an unintelligible token (``(())``, ``<unk>``).
UNINTELLIGIBLE_STAND_IN = "a"


@dataclass(frozen=True)
class DtwConfig:
    """Rendering, features, DTW weights, snapping and mismatch checks (seconds)."""

    voices: tuple[tuple[str, str], ...] = DEFAULT_VOICES
    default_voice: str = "en-us"    # utterances without a language
    base_rate: int = 175            # eSpeak words per minute of the first rendering
    pitch: int = 50
    rate_iterations: int = 3        # renderings at most (the first included)
    rate_tolerance: float = 0.05    # stop refitting within this relative speech-time error
    mfcc: MfccConfig = field(default_factory=MfccConfig)
    delta_order: int = 1
    vad: VadConfig = field(default_factory=VadConfig)  # speech time (rate fitting, band)
    pause_vad: VadConfig = field(  # pauses that word boundaries snap to
        default_factory=lambda: VadConfig(max_range_db=25.0, min_pause=0.10))
    frame_vad: VadConfig = field(default_factory=lambda: VadConfig(min_pause=0.03))
    render_keep_silence: int = 4    # frames kept of each silent stretch of the rendering
    stay_penalty: float = 0.05      # extra cost of staying on a rendering frame
    skip_penalty: float = 0.05      # extra cost of advancing two rendering frames
    silence_cost: float = 0.35      # a silent real frame absorbed at a word boundary
    mid_word_silence: float = 0.6   # ... extra when absorbed inside a rendered word
    boundary_frames: int = 3        # "at a word boundary": within this many frames
    band_radius: float = 3.0        # band half-width, at least this many seconds ...
    band_share: float = 0.12        # ... or this share of the rendering, if larger
    max_band_cells: int = 150_000_000  # back-pointer bytes at most (narrows the band)
    snap_tolerance: float = 0.12    # rendered-time distance of a pause to a word boundary
    absorb_share: float = 0.5       # share of a silence's frames that must be DTW stays
    min_word: float = 0.02
    max_rate_factor: float = 1.5    # rendered / real speech time outside [1/f, f]: mismatch
    max_cost_ratio: float = 0.92    # path cost / reversed-rendering cost above: mismatch
    on_mismatch: str = "error"      # "error" (PunctInputError) or "skip" (None + warning)


@dataclass(frozen=True)
class DtwPath:
    """A DTW path with one rendering column per real frame (non-decreasing)."""

    cols: np.ndarray
    total: float
    band_width: int


@dataclass
class DtwAlignment:
    """Word timings plus the diagnostics used for the mismatch check."""

    words: list[TimedWord]
    duration: float
    voice: str
    rate: int
    rate_factor: float      # rendered / real speech time at the base rate
    cost_ratio: float       # path cost on speech / that of the time-reversed rendering
    band_width: int
    mismatch: str | None = None  # why the transcript looks wrong for the audio, if it does


# ----------------------------------------------------------------------------- DTW core


def band_limits(centers: np.ndarray, radius: int, n_cols: int) -> tuple[np.ndarray, int]:
    """Per-row first column ``lo`` and the band width for columns ``centers ± radius``.

    Row 0 starts at column 0 and the last row's band holds the last column.
    """
    width = int(min(n_cols, 2 * max(0, radius) + 1))
    lo = np.clip(np.asarray(centers, dtype=np.int64) - radius, 0, n_cols - width)
    lo = np.maximum.accumulate(lo)
    lo[0] = 0
    lo[-1] = n_cols - width
    return lo.astype(np.int64), width


#: Band cells of costs computed at a time (two float64 blocks of 512 KiB).
_BLOCK_CELLS = 1 << 16

BlockCost = Callable[[int, int], tuple[np.ndarray, np.ndarray]]
"""``(r0, r1) -> (diag, stay)``: the costs of rows ``r0..r1-1`` over their band columns,
each of shape ``(r1 - r0, width)`` (see :func:`banded_dtw_blocks`)."""


def banded_dtw(
    n_rows: int,
    n_cols: int,
    diag_cost: Callable[[int, int, int], np.ndarray],
    stay_cost: Callable[[int, int, int, np.ndarray], np.ndarray] | None = None,
    lo: np.ndarray | None = None,
    width: int | None = None,
    skip_penalty: float = 0.0,
) -> DtwPath:
    """Minimum-cost path from (0, 0) to (n_rows - 1, n_cols - 1).

    Each row takes one step from the previous row: column +0 (cost ``stay_cost``),
    +1 (``diag_cost``) or +2 (``diag_cost + skip_penalty``). ``diag_cost(i, j0, j1)``
    returns the costs of row ``i`` for columns ``j0..j1-1``; ``stay_cost(i, j0, j1, diag)``
    those of staying (default: the diagonal costs). With ``lo``/``width`` only columns
    ``lo[i] .. lo[i] + width - 1`` of row ``i`` are considered (``lo`` non-decreasing);
    memory is one int8 per band cell plus a block of rows of costs. Raises ValueError when
    no path exists (e.g. ``n_cols > 2 * n_rows - 1`` or a band too narrow).
    """
    lo, width = _check_band(n_rows, n_cols, lo, width)
    return banded_dtw_blocks(n_rows, n_cols, _row_blocks(diag_cost, stay_cost, lo, width),
                             lo, width, skip_penalty)


def _check_band(n_rows: int, n_cols: int, lo: np.ndarray | None,
                width: int | None) -> tuple[np.ndarray, int]:
    """The band (the full matrix when ``lo`` or ``width`` is None), validated."""
    if n_rows < 1 or n_cols < 1:
        raise ValueError("DTW needs at least one row and one column")
    if width is None or lo is None:
        return np.zeros(n_rows, dtype=np.int64), n_cols
    if len(lo) != n_rows or not 1 <= width <= n_cols:
        raise ValueError("band: need one lo per row and 1 <= width <= n_cols")
    if np.any(np.diff(lo) < 0) or lo[0] != 0 or lo[-1] + width < n_cols:
        raise ValueError("band: lo must be non-decreasing, start at 0 and reach the last column")
    return np.asarray(lo, dtype=np.int64), width


def _row_blocks(diag_cost: Callable[[int, int, int], np.ndarray],
                stay_cost: Callable[[int, int, int, np.ndarray], np.ndarray] | None,
                lo: np.ndarray, width: int) -> BlockCost:
    """Per-row cost callbacks as a :data:`BlockCost` (row 0 has no stay cost)."""

    def block(r0: int, r1: int) -> tuple[np.ndarray, np.ndarray]:
        diag = np.empty((r1 - r0, width))
        stay = np.empty((r1 - r0, width))
        for k, i in enumerate(range(r0, r1)):
            j0 = int(lo[i])
            diag[k] = diag_cost(i, j0, j0 + width)
            stay[k] = diag[k] if stay_cost is None or i == 0 else \
                stay_cost(i, j0, j0 + width, diag[k])
        return diag, stay

    return block


def banded_dtw_blocks(n_rows: int, n_cols: int, block_cost: BlockCost, lo: np.ndarray,
                      width: int, skip_penalty: float = 0.0) -> DtwPath:
    """:func:`banded_dtw` with the costs of blocks of rows from ``block_cost`` (a valid
    band: see :func:`_check_band`). The recursion runs row by row, vectorised over the
    band; a NaN cost counts as +inf (never taken). Ties go to the smallest step."""
    back = np.zeros((n_rows, width), dtype=np.int8)
    buf = np.full(2 * width + 4, np.inf)  # buf[2 + k]: previous row's cost at band column k
    rows = max(1, _BLOCK_CELLS // width)
    for r0 in range(0, n_rows, rows):
        r1 = min(n_rows, r0 + rows)
        diag, stay = (_nan_to_inf(c) for c in block_cost(r0, r1))
        for k in range(r1 - r0):
            i = r0 + k
            if i == 0:
                buf[2] = diag[0, 0]  # the path starts at column 0
            else:
                _dtw_row(buf, diag[k], stay[k], int(lo[i] - lo[i - 1]), skip_penalty, back[i])
    end = n_cols - 1 - int(lo[-1])
    total = float(buf[2 + end])
    if not math.isfinite(total):
        raise ValueError(f"no DTW path through the band ({n_rows} rows, {n_cols} columns, "
                         f"width {width})")
    return DtwPath(_trace_back(back, lo, n_cols), total, width)


def _nan_to_inf(costs: np.ndarray) -> np.ndarray:
    """``costs`` with NaN as +inf (a copy only when there is a NaN)."""
    if not math.isnan(float(costs.sum())):
        return costs
    return np.where(np.isnan(costs), np.inf, costs)


def _dtw_row(buf: np.ndarray, diag: np.ndarray, stay: np.ndarray, shift: int,
             skip_penalty: float, back_row: np.ndarray) -> None:
    """One row of the recursion, in place: ``buf`` (the previous row's costs between two
    leading and ``width + 2`` trailing infs) becomes this row's; ``back_row`` gets the steps.

    Band column ``j`` of this row comes from band column ``j + shift - s`` of the previous
    row (step ``s``); the first smallest candidate wins, as in a loop over s = 0, 1, 2.
    """
    w = len(diag)
    base = min(shift, w + 2) + 2  # a larger shift only reads trailing infs
    c0 = buf[base: base + w] + stay
    c1 = buf[base - 1: base - 1 + w] + diag
    c2 = buf[base - 2: base - 2 + w] + diag
    c2 += skip_penalty
    one = c1 < c0
    best01 = np.minimum(c0, c1)
    two = c2 < best01
    np.minimum(best01, c2, out=buf[2: 2 + w])
    back_row[...] = one
    back_row[two] = 2


def _trace_back(back: np.ndarray, lo: np.ndarray, n_cols: int) -> np.ndarray:
    """The path's column per row, from the last row's last column back to row 0."""
    n_rows = len(back)
    cols = np.empty(n_rows, dtype=np.int64)
    j = n_cols - 1
    lo_list = lo.tolist()
    for i in range(n_rows - 1, -1, -1):
        cols[i] = j
        j -= int(back[i, j - lo_list[i]])
    if cols[0] != 0:  # pragma: no cover - row 0 only allows column 0
        raise ValueError("DTW back-trace did not reach column 0")
    return cols


def dtw_matrix(
    cost: np.ndarray, stay: np.ndarray | None = None, skip_penalty: float = 0.0
) -> DtwPath:
    """:func:`banded_dtw` on a full local-cost matrix (rows x cols); for small problems."""
    cost = np.asarray(cost, dtype=np.float64)
    stay_m = None if stay is None else np.asarray(stay, dtype=np.float64)
    return banded_dtw(
        cost.shape[0], cost.shape[1],
        lambda i, a, b: cost[i, a:b],
        None if stay_m is None else (lambda i, a, b, _d: stay_m[i, a:b]),
        skip_penalty=skip_penalty,
    )


# ----------------------------------------------------------------------------- rendering


def frame_seconds(rate: int) -> float:
    """The true frame shift at ``rate``: the hop is a whole number of samples
    (``round(rate * 0.01)``: 220 samples = 9.977 ms at 22,050 Hz, not 10 ms)."""
    return max(1, round(rate * FRAME_SHIFT)) / rate


@dataclass(frozen=True)
class Rendering:
    """eSpeak audio (float, ±1) and the rendered words' (start, end) in seconds."""

    samples: np.ndarray
    rate: int
    spans: tuple[tuple[float, float], ...]
    voice: str
    wpm: int


def voice_for(lang: str | None, config: DtwConfig = DtwConfig()) -> str:
    """The eSpeak voice for an utt2lang code (the code itself when it is not listed)."""
    if not lang:
        return config.default_voice
    return dict(config.voices).get(lang.lower(), lang.lower())


def render(words: Sequence[str], voice: str, wpm: int, pitch: int = 50,
           where: tuple[str | None, int | None] = (None, None)) -> Rendering:
    """Speak ``words`` (space-joined, no punctuation) and time them from eSpeak's events."""
    text = " ".join(words)
    wpm = int(min(max(wpm, RATE_RANGE[0]), RATE_RANGE[1]))
    try:
        result = get_engine().synthesize(text, voice, wpm, pitch)
    except EspeakError as err:
        raise PunctInputError(f"eSpeak NG cannot render with voice {voice!r}: "
                              f"{str(err).splitlines()[0]}", *where) from err
    timings = word_timings(text, result, *where)
    got = [t.word for t in timings]
    if got != list(words):
        raise PunctInputError(f"rendered words {got[:5]}... differ from the transcript",
                              *where)
    samples = result.samples.astype(np.float64) / 32768.0
    return Rendering(samples, result.sample_rate,
                     tuple((t.start, t.end) for t in timings), voice, wpm)


# ----------------------------------------------------------------------------- features


def _features(samples: np.ndarray, rate: int, speech: np.ndarray, config: DtwConfig,
              high_hz: float) -> np.ndarray:
    # the VAD frames are FRAME_SHIFT apart: the features must share them
    cfg = MfccConfig(**{**config.mfcc.__dict__, "high_hz": high_hz,
                        "frame_shift": FRAME_SHIFT})
    feats = mfcc(samples, rate, cfg)
    if config.delta_order:
        feats = add_deltas(feats, order=config.delta_order)
    n = min(len(feats), len(speech))
    return cmvn(feats[:n], speech[:n])


def _compress_silence(silent: np.ndarray, keep: int) -> np.ndarray:
    """Mask of rendering frames kept: all speech, ``keep`` frames of each silent run."""
    kept = np.ones(len(silent), dtype=bool)
    for s, e in runs(silent):
        if e - s > keep:
            head = (keep + 1) // 2
            kept[s + head: e - (keep - head)] = False
    return kept


# ----------------------------------------------------------------------------- alignment


def _speech_frames(samples: np.ndarray, rate: int, cfg: VadConfig) -> tuple[np.ndarray,
                                                                            np.ndarray]:
    energy = frame_log_energy(samples, rate, cfg)
    return energy, speech_mask(energy, cfg)


def _fit_rendering(words: Sequence[str], voice: str, real_speech_s: float, config: DtwConfig,
                   where: tuple[str | None, int | None]) -> tuple[Rendering, float, np.ndarray]:
    """Render at the base rate, then refit the rate to the real speech time; returns the
    rendering, the first speech-time ratio and the rendering's ``config.vad`` energy."""
    wpm = config.base_rate
    rend = render(words, voice, wpm, config.pitch, where)
    energy = frame_log_energy(rend.samples, rend.rate, config.vad)
    factor = 1.0
    for it in range(max(1, config.rate_iterations)):
        rs = float(speech_mask(energy, config.vad).sum()) * frame_seconds(rend.rate)
        ratio = rs / max(real_speech_s, 1e-6)
        if it == 0:
            factor = ratio
        if abs(ratio - 1.0) <= config.rate_tolerance or it + 1 >= config.rate_iterations:
            break
        new = round(rend.wpm * ratio)
        new = int(min(max(new, RATE_RANGE[0]), RATE_RANGE[1]))
        if new == rend.wpm:
            break
        rend = render(words, voice, new, config.pitch, where)
        energy = frame_log_energy(rend.samples, rend.rate, config.vad)
    return rend, factor, energy


def _energy(samples: np.ndarray, rate: int, cfg: VadConfig, known: VadConfig,
            known_energy: np.ndarray) -> np.ndarray:
    """:func:`frame_log_energy` under ``cfg``: ``known_energy`` (computed under ``known``)
    when both share the band and window, the only settings the energy depends on."""
    if (cfg.low_hz, cfg.high_hz, cfg.window) == (known.low_hz, known.high_hz, known.window):
        return known_energy
    return frame_log_energy(samples, rate, cfg)


def align_dtw(
    samples: np.ndarray,
    rate: int,
    words: Sequence[str],
    lang: str | None = None,
    config: DtwConfig = DtwConfig(),
    where: tuple[str | None, int | None] = (None, None),
) -> DtwAlignment:
    """Align ``words`` to mono ``samples`` (see the module docstring); never raises for a
    mismatch, it reports it in ``DtwAlignment.mismatch`` (timings are then unreliable)."""
    words = list(words)
    duration = len(samples) / rate if rate else 0.0
    voice = voice_for(lang, config)
    if not words:
        return DtwAlignment([], duration, voice, 0, 1.0, 0.0, 0)
    energy, speech = _speech_frames(samples, rate, config.vad)
    shift = frame_seconds(rate)
    real_speech_s = float(speech.sum()) * shift
    n_real = len(energy)
    if real_speech_s <= 0 or n_real < 2:
        return _fallback(words, duration, voice, "no speech detected in the audio")
    rend, factor, r_vad_energy = _fit_rendering(words, voice, real_speech_s, config, where)
    f = config.max_rate_factor
    mismatch = None
    if not 1.0 / f <= factor <= f:
        mismatch = (f"the rendered transcript has {factor:.2f}x the audio's speech time "
                    f"(allowed 1/{f:g}..{f:g})")
    # frames: real (all), rendering (silences compressed)
    real_silent = ~speech_mask(energy, config.frame_vad)
    r_energy = _energy(rend.samples, rend.rate, config.frame_vad, config.vad, r_vad_energy)
    r_speech = speech_mask(r_energy, config.frame_vad)
    kept = _compress_silence(~r_speech, config.render_keep_silence)
    high = min(config.mfcc.high_hz, rate / 2, rend.rate / 2)
    x = _features(samples, rate, ~real_silent, config, high)
    y_all = _features(rend.samples, rend.rate, r_speech, config, high)
    n_real = len(x)
    kept = kept[: len(y_all)]
    y = y_all[kept]
    n_rend = len(y)
    # rendered word spans in compressed frames (end exclusive)
    index = np.concatenate(([0], np.cumsum(kept)))
    r_shift = frame_seconds(rend.rate)
    spans = np.array([[index[min(len(kept), round(s / r_shift))],
                       index[min(len(kept), round(e / r_shift))]] for s, e in rend.spans])
    spans[:, 1] = np.maximum(spans[:, 1], spans[:, 0] + 1)
    if n_rend > 2 * n_real - 1:
        return _fallback(words, duration, voice, mismatch or (
            f"the rendering ({n_rend} speech frames) is over twice as long as the audio "
            f"({n_real} frames)"), rend.wpm, factor)
    near = np.zeros(n_rend, dtype=bool)
    bf = config.boundary_frames
    for s, e in spans:
        near[max(0, s - bf): s + bf + 1] = True
        near[max(0, e - bf): e + bf + 1] = True
    near |= ~r_speech[: len(kept)][kept]
    silent_row = real_silent[:n_real]
    y_speech = r_speech[: len(kept)][kept]
    absorb = config.silence_cost + config.mid_word_silence * (~near)
    try:
        path = _run_dtw(x, y, silent_row, absorb, speech[:n_real], y_speech, config)
    except ValueError as err:
        return _fallback(words, duration, voice, mismatch or str(err), rend.wpm, factor)
    ratio = 0.0
    if config.max_cost_ratio < math.inf:
        ratio = _control_ratio(x, y, path, silent_row, absorb, speech[:n_real], y_speech,
                               config)
    if mismatch is None and ratio > config.max_cost_ratio:
        mismatch = (f"the audio matches the rendered transcript hardly better than the "
                    f"time-reversed rendering (DTW cost ratio {ratio:.2f} > "
                    f"{config.max_cost_ratio:g})")
    starts = np.searchsorted(path.cols, spans[:, 0], side="left")
    ends = np.searchsorted(path.cols, spans[:, 1], side="left")
    pause_speech = speech_mask(_energy(samples, rate, config.pause_vad, config.vad, energy),
                               config.pause_vad)
    times = _snap(starts, ends, pause_speech[:n_real], path.cols, spans, shift, config)
    out = [TimedWord(w, round(min(s, duration), 4), round(min(max(e, s), duration), 4))
           for w, (s, e) in zip(words, times, strict=True)]
    return DtwAlignment(out, duration, voice, rend.wpm, factor, ratio, path.band_width,
                        mismatch)


def _band(real_speech: np.ndarray, rend_speech: np.ndarray, n_real: int, n_rend: int,
          config: DtwConfig) -> tuple[np.ndarray, int]:
    """Band around the speech-time diagonal, narrowed to ``max_band_cells``."""
    cr = np.cumsum(real_speech.astype(float))
    cy = np.cumsum(rend_speech.astype(float))
    cr /= max(cr[-1], 1.0)
    cy /= max(cy[-1], 1.0)
    centers = np.searchsorted(cy, cr, side="left")
    radius = max(config.band_radius / FRAME_SHIFT, config.band_share * n_rend)
    radius = min(radius, (config.max_band_cells / max(n_real, 1) - 1) / 2)
    return band_limits(np.minimum(centers, n_rend - 1), int(max(radius, 2)), n_rend)


def _band_costs(x: np.ndarray, y: np.ndarray, lo: np.ndarray, width: int,
                silent_row: np.ndarray, absorb: np.ndarray, stay_penalty: float) -> BlockCost:
    """Costs of a block of rows over the band: Euclidean distance / sqrt(dim) between real
    frame ``i`` and rendering frame ``j`` (diag); staying adds ``stay_penalty``, unless a
    silent real frame is absorbed more cheaply (``absorb[j]``).

    The dot products are taken one row at a time (``y[a:b] @ x[i]``, the same BLAS call
    for every block size), so the costs do not depend on the blocking to the last bit.
    """
    scale = 1.0 / math.sqrt(x.shape[1])
    yy = np.lib.stride_tricks.sliding_window_view((y * y).sum(axis=1), width)
    xx = (x * x).sum(axis=1)
    absorb_rows = np.lib.stride_tricks.sliding_window_view(absorb, width)

    def block(r0: int, r1: int) -> tuple[np.ndarray, np.ndarray]:
        starts = lo[r0:r1]
        dots = np.empty((r1 - r0, width))
        for k, (i, a) in enumerate(zip(range(r0, r1), starts.tolist(), strict=True)):
            dots[k] = y[a: a + width] @ x[i]
        d2 = xx[r0:r1, None] + yy[starts] - 2.0 * dots
        diag = np.sqrt(np.maximum(d2, 0.0)) * scale
        stay = diag + stay_penalty
        silent = np.flatnonzero(silent_row[r0:r1])
        stay[silent] = np.minimum(stay[silent], absorb_rows[starts[silent]])
        return diag, stay

    return block


def _run_dtw(x: np.ndarray, y: np.ndarray, silent_row: np.ndarray, absorb: np.ndarray,
             x_speech: np.ndarray, y_speech: np.ndarray, config: DtwConfig) -> DtwPath:
    """The silence-aware banded DTW of real features ``x`` against rendered ``y``."""
    lo, width = _band(x_speech, y_speech, len(x), len(y), config)
    lo, width = _check_band(len(x), len(y), lo, width)
    costs = _band_costs(x, y, lo, width, silent_row, absorb, config.stay_penalty)
    return banded_dtw_blocks(len(x), len(y), costs, lo, width, config.skip_penalty)


def _path_cost(x: np.ndarray, y: np.ndarray, cols: np.ndarray, rows: np.ndarray) -> float:
    return float(np.linalg.norm(x[rows] - y[cols[rows]], axis=1).mean())


def _control_ratio(x: np.ndarray, y: np.ndarray, path: DtwPath, silent_row: np.ndarray,
                   absorb: np.ndarray, x_speech: np.ndarray, y_speech: np.ndarray,
                   config: DtwConfig) -> float:
    """Mean local cost on the path's speech rows over the same for the time-reversed
    rendering (same sounds, wrong order): near 1 when the words do not fit the audio."""
    rows = np.flatnonzero(~silent_row)
    if rows.size == 0:
        return math.inf
    y_rev = np.ascontiguousarray(y[::-1])
    try:
        rev = _run_dtw(x, y_rev, silent_row, absorb[::-1], x_speech, y_speech[::-1], config)
    except ValueError:
        return 0.0
    return _path_cost(x, y, path.cols, rows) / max(_path_cost(x, y_rev, rev.cols, rows), 1e-9)


def _snap(starts: np.ndarray, ends: np.ndarray, speech: np.ndarray, cols: np.ndarray,
          spans: np.ndarray, shift: float, config: DtwConfig) -> list[tuple[float, float]]:
    """Frame boundaries -> seconds; word boundaries move onto the pauses the path absorbed.

    A detected silence (``~speech`` run) counts as a pause of the transcript when at least
    ``absorb_share`` of its frames are DTW stays (the rendering has no matching silence);
    it goes to the rendered word boundary nearest to the rendering column the path stays
    on, if that is within ``snap_tolerance``: the word before ends where the silence
    starts and the word after starts where it ends.
    """
    n = len(starts)
    s = starts.astype(float) * shift
    e = ends.astype(float) * shift
    # rendered boundary k (0..n): before word k; its column range [left, right]
    left = np.concatenate(([spans[0, 0]], spans[:, 1]))
    right = np.concatenate((spans[:, 0], [spans[-1, 1]]))
    stays = np.concatenate(([False], np.diff(cols) == 0))
    tol = config.snap_tolerance / FRAME_SHIFT
    mw = config.min_word
    for a, b in runs(~speech):
        if b - a < 2 or stays[a:b].mean() < config.absorb_share:
            continue
        col = float(np.median(cols[a:b][stays[a:b]]))
        dist = np.maximum(0.0, np.maximum(left - col, col - right))
        k = int(np.argmin(dist))
        if dist[k] > tol:
            continue
        ta, tb = a * shift, b * shift
        if k > 0 and ta > s[k - 1] + mw:
            e[k - 1] = ta
        if k < n and tb < e[k] - mw:
            s[k] = tb
    # keep the words ordered and non-overlapping
    for k in range(n):
        if k > 0:
            s[k] = max(s[k], e[k - 1])
        e[k] = max(e[k], s[k])
    return list(zip(s.tolist(), e.tolist(), strict=True))


def _fallback(words: list[str], duration: float, voice: str, why: str, wpm: int = 0,
              factor: float = 0.0) -> DtwAlignment:
    """Words spread evenly (letters) over the audio, flagged with ``why``."""
    lengths = np.array([len(w) + 2 for w in words], dtype=float)
    edges = np.concatenate(([0.0], np.cumsum(lengths))) / lengths.sum() * duration
    out = [TimedWord(w, round(edges[i], 4), round(edges[i + 1], 4))
           for i, w in enumerate(words)]
    return DtwAlignment(out, duration, voice, wpm, factor, float("inf"), 0, why)


class DtwAligner(Aligner):
    """DTW against an eSpeak NG rendering of the words (see the module docstring)."""

    name = "dtw"

    def __init__(self, config: DtwConfig | None = None,
                 nonspeech: NonSpeechMap | str | None = None, **_: object):
        self.config = config or DtwConfig()
        self.nonspeech = load_nonspeech_map(nonspeech)
        if self.config.on_mismatch not in ("error", "skip"):
            raise PunctInputError(f"on_mismatch must be 'error' or 'skip', not "
                                  f"{self.config.on_mismatch!r}")

    def align(self, request: AlignRequest) -> AlignResult | None:
        samples, rate = request.load_audio()
        where = (request.wav_scp, request.wav_line)
        spoken = [UNINTELLIGIBLE_STAND_IN if self.nonspeech.is_unintelligible(w) else w
                  for w in request.words]
        result = align_dtw(samples, rate, spoken, request.lang, self.config, where)
        result.words = [TimedWord(w, t.start, t.end, t.line)
                        for w, t in zip(request.words, result.words, strict=True)]
        if result.mismatch:
            message = f"utterance {request.utt_id}: transcript does not fit the audio: " \
                      f"{result.mismatch}"
            if self.config.on_mismatch == "error":
                raise PunctInputError(message, request.wav_scp, request.wav_line)
            print(f"warning: {message}; no timings", file=sys.stderr)
            return None
        return AlignResult(result.words, result.duration)
