"""The CTC recogniser: greedy best path with frame times, the model path, restore --asr ctc."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import soundfile
import torch
from helpers.tiny_ctc import VOCAB, build_tiny_ctc

from punct.asr.ctc_asr import CtcRecognizer, greedy_words
from punct.data.timed import TimedWord
from punct.errors import PunctInputError
from punct.infer.asr import RECOGNIZERS, make_recognizer

ID_TO_TOKEN = {i: t for t, i in VOCAB.items()}
SHIFT = 0.02  # seconds per frame


def frames(spec: str) -> torch.Tensor:
    """(T, V) log-probs whose best token per frame is spelled by ``spec``: ``_`` blank,
    ``|`` the delimiter, ``?`` <unk>, letters themselves."""
    ids = [0 if c == "_" else VOCAB["<unk>"] if c == "?" else VOCAB[c] for c in spec]
    scores = torch.full((len(ids), len(VOCAB)), -5.0)
    scores[torch.arange(len(ids)), torch.tensor(ids)] = -0.01
    return scores


def test_greedy_collapses_runs_splits_at_the_delimiter_and_times_from_frames() -> None:
    #            0123456789012345678901
    spec = "_hh_i||_boo_ok?__|_"
    words = greedy_words(frames(spec), ID_TO_TOKEN, 0, SHIFT, duration=10.0)
    assert [w.word for w in words] == ["hi", "book"]
    # "hi": first token at frame 1, last token's run ends at frame 4 -> 0.02 .. 0.10
    assert (words[0].start, words[0].end) == (pytest.approx(0.02), pytest.approx(0.10))
    # "book": b at frame 8, the last k at frame 13 (the <unk> after it is dropped)
    assert (words[1].start, words[1].end) == (pytest.approx(0.16), pytest.approx(0.28))


def test_greedy_edges() -> None:
    assert greedy_words(frames("____"), ID_TO_TOKEN, 0, SHIFT, 1.0) == []
    assert greedy_words(torch.zeros((0, len(VOCAB))), ID_TO_TOKEN, 0, SHIFT, 1.0) == []
    # no delimiter at the end; the last word's end is clipped to the audio's duration
    words = greedy_words(frames("|ab|cd"), ID_TO_TOKEN, 0, SHIFT, duration=0.11)
    assert words == [TimedWord("ab", 0.02, 0.06), TimedWord("cd", 0.08, 0.11)]
    # upper-case vocabularies (wav2vec2-base-960h) give lower-case words
    upper = {i: t.upper() for i, t in ID_TO_TOKEN.items()}
    assert [w.word for w in greedy_words(frames("ab|a"), upper, 0, SHIFT, 1.0)] == ["ab", "a"]


class PreparedModel:
    """A CtcModel stand-in that returns prepared frame scores for any audio."""

    vocab = VOCAB
    blank = 0
    stride = 320
    sample_rate = 16000

    def __init__(self, spec: str):
        self.spec = spec
        self.lengths: list[int] = []

    def emissions(self, x: np.ndarray, chunk_seconds: float, context_seconds: float
                  ) -> torch.Tensor:
        self.lengths.append(len(x))
        return frames(self.spec)


def test_recogniser_resamples_and_times_in_seconds_of_the_input() -> None:
    model = PreparedModel("_he|_l_lo_" + "_" * 40)  # 50 frames of 20 ms: 1 s
    rec = CtcRecognizer("", ctc_model=model)  # type: ignore[arg-type]
    words = rec.transcribe(np.zeros(44100, np.float32), 44100, "x")
    assert model.lengths == [16000]  # 1 s at 44.1 kHz -> 16 kHz
    assert words == [TimedWord("he", 0.02, 0.06), TimedWord("llo", 0.1, 0.18)]  # l, blank, l: two
    with pytest.raises(PunctInputError, match="x: expected mono"):
        rec.transcribe(np.zeros((2, 100), np.float32), 16000, "x")
    assert rec.transcribe(np.zeros(100, np.float32), 16000, "x") == []  # < two frames


def test_make_recognizer_ctc_needs_a_model() -> None:
    assert "ctc" in RECOGNIZERS
    with pytest.raises(PunctInputError, match="--asr ctc needs --asr-model"):
        make_recognizer("ctc")


@pytest.fixture(scope="module")
def tiny_ctc(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_ctc(tmp_path_factory.mktemp("tiny_ctc_asr"))


@pytest.fixture(scope="module")
def tiny_exp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from helpers.tiny import tiny_autopunct_exp

    return tiny_autopunct_exp(tmp_path_factory.mktemp("ctc_restore"), ("a", "b", "c"))


def test_tiny_model_transcribes_and_restore_uses_its_words(tiny_ctc: Path, tiny_exp: Path,
                                                           tmp_path: Path) -> None:
    from punct import Restorer
    from punct.bin import restore

    rng = np.random.default_rng(3)
    samples = (rng.standard_normal(22050 * 2) * 0.3).astype(np.float32)
    wav = tmp_path / "talk.wav"
    soundfile.write(str(wav), samples, 22050)
    rec = make_recognizer("ctc", tiny_ctc)
    heard = rec.transcribe(*soundfile.read(str(wav), dtype="float32"), "talk")
    assert heard, "the random model should emit some non-blank frames"
    assert all(0 <= w.start < w.end <= 2.0 for w in heard)
    assert all(a.end <= b.start for a, b in itertools.pairwise(heard))
    assert all(w.word and w.word == w.word.lower() and "|" not in w.word for w in heard)
    out = tmp_path / "out.txt"
    assert restore.main(["--exp-dir", str(tiny_exp), "--asr", "ctc", "--asr-model",
                         str(tiny_ctc), str(wav), "-o", str(out), "--quiet"]) == 0
    doc_id, _, text = out.read_text().strip().partition(" ")
    assert doc_id == "talk"
    assert [w.strip(".,?!:;\"“”'-").lower() for w in text.split()] == [w.word for w in heard]
    words = Restorer.from_pretrained(tiny_exp).restore_audio(wav, tiny_ctc, asr="ctc")
    assert [(w.start, w.end) for w in words] == [(h.start, h.end) for h in heard]
