"""CTC forced alignment: the Viterbi on synthetic emissions, spelling, the model path."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch
from helpers.tiny_ctc import VOCAB, build_tiny_ctc

from punct.align.base import AlignRequest, get_aligner
from punct.align.ctc import (
    CtcAlignError,
    extend_with_blanks,
    min_frames,
    token_spans,
    viterbi,
    word_spans,
)
from punct.align.ctc_aligner import CtcAligner
from punct.asr.ctc_model import CtcModel, spell
from punct.errors import MissingDataError, PunctInputError


def emissions_for(labels: list[int], vocab: int, p: float = 0.9) -> torch.Tensor:
    """Log-probs with ``p`` on each frame's label and the rest spread evenly."""
    em = torch.full((len(labels), vocab), (1 - p) / (vocab - 1))
    em[torch.arange(len(labels)), torch.tensor(labels)] = p
    return em.log()


def brute_force(em: torch.Tensor, tokens: list[int], blank: int = 0) -> float:
    """Best CTC path score by enumerating every state sequence (tiny problems only)."""
    ext = extend_with_blanks(tokens, blank)
    n = len(ext)
    best = -math.inf
    for seq in itertools.product(range(n), repeat=em.shape[0]):
        if seq[0] > 1 or seq[-1] < n - 2:
            continue
        steps = [b - a for a, b in itertools.pairwise(seq)]
        if any(d < 0 or d > 2 for d in steps):
            continue
        if any(d == 2 and (ext[b] == blank or ext[b] == ext[b - 2])
               for d, b in zip(steps, seq[1:], strict=True)):
            continue
        best = max(best, sum(float(em[t, ext[s]]) for t, s in enumerate(seq)))
    return best


# ----------------------------------------------------------------------------- Viterbi


def test_extended_sequence_and_min_frames() -> None:
    assert extend_with_blanks([3, 4], 0).tolist() == [0, 3, 0, 4, 0]
    assert min_frames([1, 2, 3]) == 3
    assert min_frames([1, 1, 2, 2, 2]) == 8  # blanks between the 3 repeats


def test_viterbi_hand_checked_path() -> None:
    # frames: a a _ b b _   (blank 0, a 1, b 2)
    em = emissions_for([1, 1, 0, 2, 2, 0], 3)
    path = viterbi(em, [1, 2])
    assert path.states.tolist() == [1, 1, 2, 3, 3, 4]
    assert token_spans(path, 2).tolist() == [[0, 2], [3, 5]]
    assert path.score == pytest.approx(6 * math.log(0.9))
    assert path.gap_per_frame == pytest.approx(0.0, abs=1e-9)


def test_repeated_token_needs_a_blank() -> None:
    em = emissions_for([1, 1, 1], 3)
    path = viterbi(em, [1, 1])
    assert path.states.tolist() == [1, 2, 3]  # a, blank, a: the only legal path
    with pytest.raises(CtcAlignError,
                       match=r"too short for the transcript: 2 frames, the 2 tokens need at least"):
        viterbi(em[:2], [1, 1])


def test_viterbi_matches_brute_force() -> None:
    gen = torch.Generator().manual_seed(7)
    rng = np.random.default_rng(7)
    for _ in range(40):
        n_frames, n_tokens = int(rng.integers(2, 7)), int(rng.integers(1, 4))
        tokens = rng.integers(1, 4, size=n_tokens).tolist()
        em = torch.randn(n_frames, 4, generator=gen).log_softmax(-1)
        best = brute_force(em, tokens)
        if best == -math.inf:
            with pytest.raises(CtcAlignError):
                viterbi(em, tokens)
            continue
        path = viterbi(em, tokens, chunk_frames=2)  # chunking must not change the result
        assert path.score == pytest.approx(best, abs=1e-9)
        rescored = sum(float(em[t, extend_with_blanks(tokens, 0)[s]])
                       for t, s in enumerate(path.states))
        assert rescored == pytest.approx(best, abs=1e-9)


def test_wrong_transcript_costs_nats_per_frame() -> None:
    em = emissions_for([0, 1, 1, 0, 2, 2, 0, 3, 0], 4)  # says "a b c"
    right = viterbi(em, [1, 2, 3])
    wrong = viterbi(em, [3, 2, 1])
    assert right.gap_per_frame == pytest.approx(0.0, abs=1e-9)
    # "c b a": b keeps frames 4-5, but frames 1-2 (a) must become c or blank and frame 7
    # (c) must become a or blank: 3 frames drop from p=0.9 to 0.1/3, ln(27) each
    assert wrong.gap_per_frame == pytest.approx(3 * math.log(27) / 9, rel=1e-6)


def test_bad_tokens_and_size_limit() -> None:
    em = emissions_for([0, 1, 0], 3)
    with pytest.raises(CtcAlignError, match="blank or outside"):
        viterbi(em, [0])
    with pytest.raises(CtcAlignError, match="blank or outside"):
        viterbi(em, [5])
    with pytest.raises(CtcAlignError, match="no tokens"):
        viterbi(em, [])
    with pytest.raises(CtcAlignError, match="split the recording"):
        viterbi(em, [1], max_trellis_bytes=8)


def test_word_spans_skip_separators() -> None:
    # "ab | c": a a b _ | _ c c   (blank 0, a 1, b 2, c 3, | 4)
    em = emissions_for([1, 1, 2, 0, 4, 0, 3, 3], 5)
    path = viterbi(em, [1, 2, 4, 3])
    assert word_spans(path, [2, 1], [1, 0]) == [(0, 3), (6, 8)]


# ----------------------------------------------------------------------------- spelling

def test_spell_maps_case_accents_and_drops_symbols() -> None:
    assert spell("Café", VOCAB, lower=True) == [VOCAB[c] for c in "cafe"]
    assert spell("don't", VOCAB, lower=True) == [VOCAB[c] for c in "don't"]
    assert spell("e-mail", VOCAB, lower=True) == [VOCAB[c] for c in "email"]  # no "-"
    assert spell("ñandú", VOCAB, lower=True) == [VOCAB[c] for c in "nandu"]
    upper = {k.upper(): v for k, v in VOCAB.items()}
    assert spell("abc", upper, lower=False) == [VOCAB[c] for c in "abc"]
    assert spell("2024", VOCAB, lower=True) is None
    assert spell("---", VOCAB, lower=True) == []


# ----------------------------------------------------------------------------- aligner


def _fake_model(frame_labels: str, stride: int = 320) -> CtcModel:
    """A CtcModel whose emissions spell ``frame_labels`` ('_' blank), whatever the audio."""
    model = CtcModel.__new__(CtcModel)
    model.name, model.vocab, model.blank, model.delimiter = "fake", VOCAB, 0, 1
    model.lower, model.sample_rate, model.stride = True, 16000, stride
    labels = [0 if ch == "_" else VOCAB[ch] for ch in frame_labels]
    em = emissions_for(labels, len(VOCAB))
    model.emissions = lambda samples, *a, **k: em  # type: ignore[method-assign]
    return model


def _silence(tmp_path: Path, seconds: float) -> str:
    path = tmp_path / "utt.wav"
    sf.write(path, np.zeros(round(16000 * seconds), dtype=np.int16), 16000)
    return str(path)


def test_aligner_word_times_from_frames(tmp_path: Path) -> None:
    frames = "__hi_|____ther_e__|go___"  # 23 frames of 20 ms
    aligner = CtcAligner(model=_fake_model(frames))
    req = AlignRequest("u1", ("hi", "there", "go"), _silence(tmp_path, 0.46))
    result = aligner.align(req)
    assert result is not None and result.duration == pytest.approx(0.46)
    got = [(w.word, w.start, w.end) for w in result.words]
    # "hi": frames 2-3, "there": 10-15 (the blank between the two e's), "go": 19-20
    assert got == [("hi", 0.04, 0.08), ("there", 0.2, 0.32), ("go", 0.38, 0.42)]


def test_aligner_rejects_swapped_transcript(tmp_path: Path) -> None:
    frames = "__hello_|_world___|_again_"
    aligner = CtcAligner(model=_fake_model(frames))
    wav = _silence(tmp_path, len(frames) * 0.02)
    req = AlignRequest("utt7", ("across", "the", "sea"), wav, wav_scp="wav.scp", wav_line=3)
    with pytest.raises(PunctInputError, match=r"wav.scp:3: utterance utt7: transcript does "
                                              r"not fit the audio: the forced path scores"):
        aligner.align(req)
    too_long = AlignRequest("utt8", ("hello", "world", "again", "and", "again", "and", "more"),
                            wav, wav_scp="wav.scp", wav_line=4)
    with pytest.raises(PunctInputError, match=r"utterance utt8: .*too short"):
        aligner.align(too_long)
    skip = CtcAligner(model=_fake_model(frames))
    skip.config = skip.config.__class__(on_mismatch="skip")
    assert skip.align(req) is None


def test_aligner_names_unspellable_word(tmp_path: Path) -> None:
    aligner = CtcAligner(model=_fake_model("_a_b_"))
    req = AlignRequest("u2", ("a", "日本"), _silence(tmp_path, 0.1), wav_scp="w", wav_line=1)
    with pytest.raises(PunctInputError, match=r"utterance u2: word 2 '日本' has characters"):
        aligner.align(req)


def test_missing_model_is_missing_data(tmp_path: Path) -> None:
    with pytest.raises(MissingDataError, match="needs a model"):
        get_aligner("ctc")
    with pytest.raises(MissingDataError, match="CTC model directory not found"):
        get_aligner("ctc", ctc_model=str(tmp_path / "nothing"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(MissingDataError, match="cannot load CTC model"):
        get_aligner("ctc", ctc_model=str(tmp_path / "empty"))


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random tiny wav2vec2 CTC model + processor saved locally (stride 20 samples)."""
    return build_tiny_ctc(tmp_path_factory.mktemp("tiny_ctc"))


def test_tiny_model_windows_match_one_pass(tiny_model_dir: Path) -> None:
    model = CtcModel(str(tiny_model_dir))
    assert (model.stride, model.blank, model.delimiter, model.lower) == (20, 0, 1, True)
    x = np.random.default_rng(0).standard_normal(16000).astype(np.float32)
    n = model.n_frames(len(x))
    assert n == 798  # conv (10, 5) then (8, 4): ((16000 - 10) // 5 + 1 - 8) // 4 + 1
    whole = model.emissions(x, chunk_seconds=10.0)
    with torch.inference_mode():
        norm = (x - x.mean()) / math.sqrt(float(x.var()) + 1e-7)
        direct = model.model(torch.from_numpy(norm)[None]).logits[0].log_softmax(-1)
    assert torch.allclose(whole, direct, atol=1e-5)
    # no transformer layers: the model sees +-8 frames, so 0.1 s windows with 0.05 s
    # context (40 frames) give the same frames as one pass
    windowed = model.emissions(x, chunk_seconds=0.1, context_seconds=0.05)
    assert windowed.shape == (n, len(VOCAB))
    assert torch.allclose(windowed, whole, atol=1e-5)


def test_tiny_model_aligns_a_wav(tiny_model_dir: Path, tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    wav = tmp_path / "a.wav"
    sf.write(wav, (rng.standard_normal(22050 * 2) * 3000).astype(np.int16), 22050)
    aligner = get_aligner("ctc", ctc_model=str(tiny_model_dir))
    # a random model: any path is "as good as" another, so only the shape is checked
    aligner.config = aligner.config.__class__(model=str(tiny_model_dir),
                                              max_gap_per_frame=math.inf)
    req = AlignRequest("u3", ("one", "two", "three"), str(wav))
    result = aligner.align(req)
    assert result is not None and result.duration == pytest.approx(2.0)
    words = result.words
    assert [w.word for w in words] == ["one", "two", "three"]
    assert all(0 <= w.start < w.end <= 2.0 for w in words)
    assert all(a.end <= b.start for a, b in itertools.pairwise(words))
