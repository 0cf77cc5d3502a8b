"""The offline English recogniser: chunking, word names, and a real LibriSpeech recording."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import soundfile

from punct.asr.pocketsphinx_asr import (
    SAMPLE_RATE,
    PocketsphinxRecognizer,
    _word,
    chunk_bounds,
    to_pcm16k,
)
from punct.data.word_align import align_words, edit_counts
from punct.errors import PunctInputError

MFA = Path(__file__).resolve().parents[2] / "shared" / "data" / "mfa_english_word_alignments"


def test_segment_names_become_plain_words() -> None:
    assert _word("began") == "began" and _word("the(2)") == "the" and _word("I'M") == "i'm"
    assert [_word(n) for n in ("<s>", "</s>", "<sil>", "[NOISE]", "+um+", "sil", "")] == [None] * 7


def test_chunks_cover_the_audio_and_cut_in_silence() -> None:
    rng = np.random.default_rng(0)
    pcm = (rng.standard_normal(SAMPLE_RATE * 95) * 3000).astype(np.int16)
    quiet = [int(SAMPLE_RATE * 33.5), int(SAMPLE_RATE * 70.2)]
    for q in quiet:
        pcm[q:q + 800] = 0
    bounds = chunk_bounds(pcm)
    assert bounds[0][0] == 0 and bounds[-1][1] == len(pcm)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))
    assert all(hi - lo <= 40 * SAMPLE_RATE for lo, hi in bounds)
    cuts = [hi for _, hi in bounds[:-1]]
    assert len(cuts) == 2 and all(q <= c < q + 800 for q, c in zip(quiet, cuts, strict=True))
    assert chunk_bounds(pcm[:SAMPLE_RATE]) == [(0, SAMPLE_RATE)]


def test_rates_are_converted_or_refused() -> None:
    tone = np.sin(np.arange(22050) / 22050 * 2 * np.pi * 440).astype(np.float32) * 0.5
    assert len(to_pcm16k(tone, 22050, "x.wav")) == 16000
    with pytest.raises(PunctInputError, match=r"x\.wav: sample rate 4000 Hz"):
        to_pcm16k(tone, 4000, "x.wav")
    with pytest.raises(PunctInputError, match=r"x\.wav: expected mono"):
        to_pcm16k(np.zeros((10, 2), np.float32), 16000, "x.wav")


@pytest.mark.skipif(not MFA.is_dir(), reason="needs ../shared/data")
def test_recognises_a_librispeech_recording() -> None:
    samples, rate = soundfile.read(str(MFA / "61-70968-0000.flac"), dtype="float32")
    words = PocketsphinxRecognizer().transcribe(samples, rate, "61-70968-0000.flac")
    ref = (MFA / "61-70968-0000.lab").read_text().lower().split()
    hyp = [w.word for w in words]
    wer = edit_counts(align_words(ref, hyp)).wer
    # measured: 2 errors in 16 words ("who had vanished" -> "would vanish")
    assert wer is not None and wer <= 0.25
    assert words[0].start >= 0.0 and words[-1].end <= len(samples) / rate + 0.01
    assert all(a.end <= b.start + 1e-9 for a, b in itertools.pairwise(words))
    assert all(w.end > w.start for w in words)


# ------------------------------------------------------- punct-restore --asr pocketsphinx
LIBRI_WORDS = ("he", "began", "a", "confused", "complaint", "against", "the", "wizard",
               "who", "had", "vanished", "behind", "curtain", "on", "left", "would", "vanish")


@pytest.fixture(scope="module")
def tiny_exp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from helpers.tiny import tiny_autopunct_exp

    return tiny_autopunct_exp(tmp_path_factory.mktemp("asr_restore"), LIBRI_WORDS)


@pytest.mark.skipif(not MFA.is_dir(), reason="needs ../shared/data")
def test_restore_from_audio_with_pocketsphinx(tiny_exp: Path, tmp_path: Path) -> None:
    from punct import Restorer
    from punct.bin import restore

    flac = MFA / "61-70968-0000.flac"
    samples, rate = soundfile.read(str(flac), dtype="float32")
    heard = PocketsphinxRecognizer().transcribe(samples, rate, "x")
    out = tmp_path / "out.txt"
    assert restore.main(["--exp-dir", str(tiny_exp), "--asr", "pocketsphinx", str(flac),
                         "-o", str(out), "--quiet"]) == 0
    doc_id, _, text = out.read_text().strip().partition(" ")
    assert doc_id == "61-70968-0000"
    assert [w.strip(".,?").lower() for w in text.split()] == [w.word for w in heard]
    words = Restorer.from_pretrained(tiny_exp).restore_audio(flac)
    assert [(w.start, w.end) for w in words] == [(h.start, h.end) for h in heard]
    # a stereo 22.05 kHz copy is averaged and resampled to the recogniser's 16 kHz
    stereo = tmp_path / "stereo.wav"
    up = np.interp(np.arange(int(len(samples) * 22050 / 16000)) * 16000 / 22050,
                   np.arange(len(samples)), samples).astype(np.float32)
    soundfile.write(str(stereo), np.stack([up, up], axis=1), 22050)
    again = Restorer.from_pretrained(tiny_exp).restore_audio(stereo, asr="pocketsphinx")
    ref = (MFA / "61-70968-0000.lab").read_text().lower().split()
    wer = edit_counts(align_words(ref, [w.form.strip(".,?").lower() for w in again])).wer
    assert wer is not None and wer <= 0.25


def test_restore_from_audio_errors(tiny_exp: Path, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    from punct.bin import restore

    assert restore.main(["--exp-dir", str(tiny_exp), "--asr", "pocketsphinx",
                         str(tmp_path / "none.wav")]) == 2
    assert "audio file not found" in capsys.readouterr().err
    assert restore.main(["--exp-dir", str(tiny_exp), "--asr", "pocketsphinx",
                         "--asr-model", str(tmp_path)]) == 1
    assert "drop --asr-model" in capsys.readouterr().err
    bad = tmp_path / "bad.wav"
    bad.write_bytes(b"RIFF0000WAVEnot audio at all")
    assert restore.main(["--exp-dir", str(tiny_exp), "--asr", "pocketsphinx", str(bad)]) == 1
    assert "bad.wav" in capsys.readouterr().err
    low = tmp_path / "low.wav"
    soundfile.write(str(low), np.zeros(4000, np.float32), 4000)
    assert restore.main(["--exp-dir", str(tiny_exp), "--asr", "pocketsphinx", str(low)]) == 1
    assert "sample rate 4000 Hz" in capsys.readouterr().err


def test_replay_leaves_the_decoder_as_decoding_does() -> None:
    from punct.synth.espeak import get_engine

    def speak(text: str) -> tuple[np.ndarray, int]:
        res = get_engine().synthesize(text, "en-us", 160, 50)
        return res.samples.astype(np.float32) / 32768.0, res.sample_rate

    first = speak("the weather will be cold and windy in the north tomorrow morning")
    second = speak("scientists found a new kind of fish in the deep sea near the coast")
    decoding = PocketsphinxRecognizer()
    decoding.transcribe(*first)
    replaying = PocketsphinxRecognizer()
    replaying.replay(*first)
    fresh = PocketsphinxRecognizer().transcribe(*second)
    after_replay = replaying.transcribe(*second)
    assert after_replay == decoding.transcribe(*second)
    assert after_replay != fresh  # the state carried over: replaying was needed
