"""The ``dtw`` aligner: DTW core, MFCC features, eSpeak-rendered alignment, mismatches."""

from __future__ import annotations

import itertools
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from punct.align.base import AlignRequest, available_aligners, get_aligner
from punct.align.dtw_aligner import (
    DtwAligner,
    DtwConfig,
    _band_costs,
    _energy,
    align_dtw,
    band_limits,
    banded_dtw,
    dtw_matrix,
    frame_seconds,
    voice_for,
)
from punct.align.evaluate import evaluate
from punct.align.vad import VadConfig, frame_log_energy
from punct.data.textgrid import textgrid_words
from punct.data.timed import TimedWord
from punct.errors import PunctInputError
from punct.features import add_deltas, cmvn, mel_filterbank, mfcc

MFA = Path("/work/shared/data/mfa_english_word_alignments")
needs_mfa = pytest.mark.skipif(not MFA.is_dir(), reason="MFA test recordings not present")
RATE = 16000
TEXT = ("the quick brown fox jumps over the lazy dog while the old farmer watches "
        "from his porch")
PAUSE_AFTER = 7  # "lazy dog | while"


# ----------------------------------------------------------------------------- DTW core


def _brute_force(cost: np.ndarray, stay: np.ndarray, skip: float) -> tuple[float, list[int]]:
    """Every column sequence with steps 0/1/2 from column 0 to the last column."""
    n, m = cost.shape
    best: tuple[float, list[int]] = (np.inf, [])
    for steps in itertools.product((0, 1, 2), repeat=n - 1):
        cols = np.concatenate(([0], np.cumsum(steps)))
        if cols[-1] != m - 1:
            continue
        total = cost[0, 0] + sum(
            (stay[i, cols[i]] if s == 0 else cost[i, cols[i]] + (skip if s == 2 else 0.0))
            for i, s in zip(range(1, n), steps, strict=True)
        )
        if total < best[0]:
            best = (float(total), cols.tolist())
    return best


def test_dtw_on_hand_checked_matrices():
    # 3 rows, 4 columns: 0 -> 1 -> 3 (1 + 2 + 3 + skip 0.5) beats 0 -> 2 -> 3 (1 + 7 + 0.5 + 3)
    cost = np.array([[1.0, 9, 9, 9], [9, 2, 7, 9], [9, 9, 9, 3]])
    path = dtw_matrix(cost, skip_penalty=0.5)
    assert path.cols.tolist() == [0, 1, 3]
    assert path.total == pytest.approx(6.5)
    # 4 rows, 2 columns: staying on column 0 is best (0 + 3 + 2 + 0) ...
    cost = np.array([[0.0, 4], [3, 1], [2, 5], [6, 0]])
    path = dtw_matrix(cost)
    assert path.cols.tolist() == [0, 0, 0, 1] and path.total == pytest.approx(5.0)
    # ... unless staying in row 2 is expensive: 0 -> 1 early (0 + 1 + 7 + 2 = 10)
    stay = cost + 2.0
    stay[2, 0] = 10.0
    path = dtw_matrix(cost, stay)
    assert path.cols.tolist() == [0, 1, 1, 1] and path.total == pytest.approx(10.0)
    # the rendering may not be more than twice as long as the audio
    with pytest.raises(ValueError, match="no DTW path"):
        dtw_matrix(np.zeros((2, 4)))


def test_dtw_matches_brute_force_and_band():
    rng = np.random.default_rng(3)
    for _ in range(20):
        n, m = int(rng.integers(3, 8)), int(rng.integers(2, 7))
        if m > 2 * n - 1:
            continue
        cost, stay = rng.random((n, m)), rng.random((n, m)) * 2
        total, cols = _brute_force(cost, stay, 0.3)
        path = dtw_matrix(cost, stay, skip_penalty=0.3)
        assert path.total == pytest.approx(total)
        assert path.cols.tolist() == cols
    # a band that holds the optimum gives it; a narrower one never does better
    cost = rng.random((40, 30))
    full = dtw_matrix(cost)
    centers = np.round(np.arange(40) * 29 / 39).astype(int)
    lo, width = band_limits(centers, 29, 30)
    assert width == 30
    wide = banded_dtw(40, 30, lambda i, a, b: cost[i, a:b], lo=lo, width=width)
    assert wide.total == pytest.approx(full.total)
    lo, width = band_limits(centers, 2, 30)
    narrow = banded_dtw(40, 30, lambda i, a, b: cost[i, a:b], lo=lo, width=width)
    assert width == 5 and narrow.total >= full.total - 1e-12
    assert all(lo[i] <= narrow.cols[i] < lo[i] + width for i in range(40))


def test_banded_dtw_never_allocates_the_full_matrix():
    n = m = 20_000  # full int8 back-pointers: 400 MB; float64 costs: 3.2 GB
    centers = np.arange(n)
    lo, width = band_limits(centers, 100, m)
    assert width == 201

    def cost(i: int, a: int, b: int) -> np.ndarray:
        return np.abs(np.arange(a, b) - i) * 0.01  # the diagonal is free

    tracemalloc.start()
    try:
        path = banded_dtw(n, m, cost, lo=lo, width=width)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert path.cols.tolist() == list(range(n)) and path.total == 0.0
    assert path.band_width == 201
    assert peak < 12 * 2**20  # measured ~4.5 MB (n x 201 int8 back-pointers + rows)


def _reference_banded_dtw(cost: np.ndarray, stay: np.ndarray, lo: np.ndarray, width: int,
                          skip: float) -> tuple[float, list[int]]:
    """The banded recursion written out cell by cell (first smallest step wins)."""
    n, m = cost.shape
    acc = np.full((n, m), np.inf)
    step = np.zeros((n, m), dtype=int)
    acc[0, 0] = cost[0, 0]
    for i in range(1, n):
        for j in range(lo[i], lo[i] + width):
            for s in (0, 1, 2):
                if not lo[i - 1] <= j - s < lo[i - 1] + width:
                    continue
                c = acc[i - 1, j - s] + (stay[i, j] if s == 0 else cost[i, j])
                c = c + skip if s == 2 else c
                if c < acc[i, j]:
                    acc[i, j], step[i, j] = c, s
    cols, j = [], m - 1
    for i in range(n - 1, -1, -1):
        cols.append(j)
        j -= step[i, j]
    return float(acc[n - 1, m - 1]), cols[::-1]


def _banded(cost: np.ndarray, stay: np.ndarray, lo: np.ndarray, width: int, skip: float):
    return banded_dtw(cost.shape[0], cost.shape[1], lambda i, a, b: cost[i, a:b],
                      lambda i, a, b, _d: stay[i, a:b], lo, width, skip)


def test_vectorised_dtw_equals_the_cell_by_cell_recursion():
    rng = np.random.default_rng(7)
    for trial in range(60):
        n = int(rng.integers(2, 40))
        m = int(rng.integers(1, 2 * n))
        # small integer costs make many exact ties: the tie-breaking must agree too
        cost = rng.integers(0, 4, (n, m)).astype(float) if trial % 2 else rng.random((n, m))
        stay = np.minimum(cost + 0.25, rng.integers(0, 3, (n, m)) * 0.5)
        stay[rng.random((n, m)) < 0.05] = np.nan  # never taken, like +inf
        centers = np.round(np.arange(n) * (m - 1) / max(n - 1, 1)
                           + rng.integers(-3, 4, n)).astype(int)
        lo, width = band_limits(centers, int(rng.integers(0, m + 1)), m)
        skip = float(rng.choice([0.0, 0.25, 0.5]))
        total, cols = _reference_banded_dtw(cost, np.where(np.isnan(stay), np.inf, stay),
                                            lo, width, skip)
        if not np.isfinite(total):
            with pytest.raises(ValueError, match="no DTW path"):
                _banded(cost, stay, lo, width, skip)
            continue
        path = _banded(cost, stay, lo, width, skip)
        assert path.total == total and path.cols.tolist() == cols


def test_band_costs_equal_the_row_by_row_costs_to_the_bit():
    rng = np.random.default_rng(11)
    n, m, dim = 300, 240, 26
    x, y = rng.standard_normal((n, dim)), rng.standard_normal((m, dim))
    silent = rng.random(n) < 0.3
    absorb = 0.35 + 0.6 * (rng.random(m) < 0.5)
    lo, width = band_limits(np.arange(n) * (m - 1) // (n - 1), 40, m)
    block = _band_costs(x, y, lo, width, silent, absorb, 0.05)
    scale = 1.0 / np.sqrt(dim)
    xx, yy = (x * x).sum(axis=1), (y * y).sum(axis=1)
    for r0, r1 in ((0, n), (0, 1), (17, 93), (299, 300)):
        diag, stay = block(r0, r1)
        for k, i in enumerate(range(r0, r1)):
            a, b = lo[i], lo[i] + width
            want = np.sqrt(np.maximum(xx[i] + yy[a:b] - 2.0 * (y[a:b] @ x[i]), 0.0)) * scale
            want_stay = want + 0.05
            if silent[i]:
                want_stay = np.minimum(want_stay, absorb[a:b])
            assert np.array_equal(diag[k], want) and np.array_equal(stay[k], want_stay)


def test_energy_is_shared_between_configs_of_one_band():
    rng = np.random.default_rng(5)
    samples = rng.standard_normal(RATE)
    base = VadConfig()
    energy = frame_log_energy(samples, RATE, base)
    same_band = VadConfig(max_range_db=25.0, min_pause=0.10)
    assert _energy(samples, RATE, same_band, base, energy) is energy
    other = VadConfig(low_hz=300.0)
    assert np.array_equal(_energy(samples, RATE, other, base, energy),
                          frame_log_energy(samples, RATE, other))


# ----------------------------------------------------------------------------- features


def test_mfcc_frames_match_vad_and_rates_agree():
    t16 = np.arange(RATE) / RATE
    t22 = np.arange(22050) / 22050
    sig = lambda t: np.sin(2 * np.pi * 440 * t) + 0.3 * np.sin(2 * np.pi * 1800 * t)  # noqa: E731
    f16, f22 = mfcc(sig(t16), RATE), mfcc(sig(t22), 22050)
    assert f16.shape == (len(frame_log_energy(sig(t16), RATE)), 13) == (100, 13)
    assert f22.shape == (len(frame_log_energy(sig(t22), 22050)), 13)
    # filters are in Hz: the same tone gives nearly the same cepstrum at both rates
    a, b = f16[10:-10].mean(axis=0), f22[10:-10].mean(axis=0)
    assert np.corrcoef(a[1:], b[1:])[0, 1] > 0.99
    fb = mel_filterbank(RATE, 512, 40, 60.0, 7600.0)
    assert fb.shape == (40, 257) and fb.max() <= 1.0 + 1e-9 and (fb.sum(axis=1) > 0).all()
    feats = add_deltas(f16, order=2)
    assert feats.shape == (100, 39)
    norm = cmvn(feats)
    assert np.allclose(norm.mean(axis=0), 0.0, atol=1e-9)
    assert np.allclose(norm[:, 1:13].std(axis=0), 1.0)
    assert frame_seconds(22050) == pytest.approx(220 / 22050) and frame_seconds(RATE) == 0.01


# ----------------------------------------------------------------------------- aligner


@pytest.fixture(scope="module")
def paused_utterance(tmp_path_factory) -> tuple[Path, list[TimedWord]]:
    """An eSpeak utterance (another voice and rate than the aligner's) with 0.5 s of
    silence inserted after word PAUSE_AFTER, and its true word timings."""
    from punct.features.resample import resample_int16
    from punct.synth.espeak import get_engine
    from punct.synth.mini import word_timings

    res = get_engine().synthesize(TEXT, "en-us+f3", 150, 65)
    timings = word_timings(TEXT, res)
    cut = 0.5 * (timings[PAUSE_AFTER].end + timings[PAUSE_AFTER + 1].start)
    audio = resample_int16(res.samples, res.sample_rate, RATE)
    c = round(cut * RATE)
    audio = np.concatenate([audio[:c], np.zeros(RATE // 2, np.int16), audio[c:]])
    ref = [TimedWord(w.word, w.start + 0.5 * (w.start >= cut), w.end + 0.5 * (w.end > cut))
           for w in timings]
    path = tmp_path_factory.mktemp("dtw") / "paused.wav"
    sf.write(path, audio, RATE)
    return path, ref


def test_registered_and_voices():
    assert "dtw" in available_aligners()
    assert isinstance(get_aligner("dtw", source=None, tier="words"), DtwAligner)
    assert voice_for("en") == "en-us" and voice_for("hu") == "hu" and voice_for(None) == "en-us"
    with pytest.raises(ValueError, match="on_mismatch"):
        DtwAligner(DtwConfig(on_mismatch="ignore"))


def test_finds_inserted_pause(paused_utterance):
    path, ref = paused_utterance
    req = AlignRequest("utt1", tuple(TEXT.split()), str(path), lang="en")
    result = get_aligner("dtw").align(req)
    assert result is not None
    hyp = result.words
    assert [w.word for w in hyp] == TEXT.split()
    for a, b in itertools.pairwise(hyp):
        assert 0.0 <= a.start <= a.end <= b.start <= result.duration
    gaps = [b.start - a.end for a, b in itertools.pairwise(hyp)]
    assert gaps[PAUSE_AFTER] == pytest.approx(0.5, abs=0.05)  # measured 0.49 s
    assert all(g < 0.15 for k, g in enumerate(gaps) if k != PAUSE_AFTER)
    report = evaluate(hyp, ref)
    assert report["pauses"]["f1"] == 1.0
    # measured: median 9 ms, p90 73 ms, max 203 ms
    assert report["boundary_error_ms"]["median"] < 25
    assert report["boundary_error_ms"]["p90"] < 120


def test_mismatched_transcript_is_flagged(paused_utterance, capsys):
    path, _ = paused_utterance
    half = tuple(w for i, w in enumerate(TEXT.split()) if i % 2 == 0)
    out = align_dtw(sf.read(path, dtype="float32")[0], RATE, half, "en")
    assert out.mismatch and "speech time" in out.mismatch
    assert out.rate_factor < 1 / 1.5  # measured 0.45 (0.37-0.59 over the mini corpus)
    req = AlignRequest("utt1", half, str(path), wav_scp="data/wav.scp", wav_line=3, lang="en")
    with pytest.raises(PunctInputError, match="does not fit the audio") as err:
        get_aligner("dtw").align(req)
    assert err.value.path == "data/wav.scp" and err.value.line == 3
    skipping = DtwAligner(DtwConfig(on_mismatch="skip"))
    assert skipping.align(req) is None
    assert "utt1" in capsys.readouterr().err
    # silence only: no speech to align
    out = align_dtw(np.zeros(RATE, np.float32), RATE, ["one", "two"], "en")
    assert out.mismatch == "no speech detected in the audio"
    assert [w.word for w in out.words] == ["one", "two"]
    # an unknown language is bad input naming the wav.scp line
    req = AlignRequest("utt2", ("hello",), str(path), wav_scp="wav.scp", wav_line=7, lang="xx")
    with pytest.raises(PunctInputError, match="voice 'xx'") as err:
        get_aligner("dtw").align(req)
    assert err.value.line == 7


@needs_mfa
def test_real_english_recordings():
    hyp, ref = {}, {}
    for name in ("acoustic_corpus", "cold_corpus"):
        audio, rate = sf.read(MFA / f"{name}.wav", dtype="float32")
        words = textgrid_words(MFA / f"{name}.TextGrid")
        out = align_dtw(audio, rate, [w.word for w in words], "en")
        assert out.mismatch is None
        hyp[name], ref[name] = out.words, words
    both = evaluate(hyp, ref)
    # measured: median 35 ms, p90 237 ms, pause F1 0.71 (vad: 420 ms, F1 0.41)
    assert both["boundary_error_ms"]["median"] < 60
    assert both["boundary_error_ms"]["p90"] < 350
    assert both["pauses"]["f1"] > 0.55
