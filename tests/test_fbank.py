"""Log-mel filterbanks and the make_fbank tool (jobs, merge, resume, wav2vec 2.0 stream)."""

from __future__ import annotations

import shutil
from pathlib import Path

import kaldiio
import numpy as np
import pytest
import soundfile

from punct.bin import make_fbank
from punct.features.fbank import FbankConfig, log_mel_fbank, n_frames_of
from punct.features.mfcc import MfccConfig, _dct_matrix, mel_filterbank, mfcc

RATE = 16_000


def tone(freq: float, seconds: float, rate: int = RATE) -> np.ndarray:
    t = np.arange(round(seconds * rate)) / rate
    return (0.5 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def test_frame_count_and_shape() -> None:
    assert n_frames_of(16_000, RATE) == 100
    assert n_frames_of(16_001, RATE) == 101
    assert n_frames_of(0, RATE) == 0
    assert log_mel_fbank(tone(440, 1.0), RATE).shape == (100, 80)
    assert log_mel_fbank(np.zeros(0), RATE).shape == (0, 80)
    # exact 10 ms frames at 22.05 kHz (220.5 samples): 0.5 s -> 50 frames, 40 s -> 4000
    assert log_mel_fbank(tone(440, 0.5, 22_050), 22_050).shape == (50, 80)
    assert n_frames_of(40 * 22_050, 22_050) == 4000
    with pytest.raises(ValueError, match="mono"):
        log_mel_fbank(np.zeros((10, 2)), RATE)


def test_tone_peaks_in_its_mel_band() -> None:
    feats = log_mel_fbank(tone(1000.0, 0.5), RATE)
    cfg = FbankConfig()
    fb = mel_filterbank(RATE, 512, cfg.n_mels, cfg.low_hz, cfg.high_hz)
    freqs = np.fft.rfftfreq(512, 1 / RATE)
    centres = freqs[fb.argmax(axis=1)]
    band = int(feats[10:40].mean(axis=0).argmax())
    assert abs(centres[band] - 1000.0) < 60.0  # the 1 kHz tone lands in the 1 kHz band


def test_silence_is_the_floor() -> None:
    feats = log_mel_fbank(np.zeros(1600), RATE)
    np.testing.assert_allclose(feats, np.log(1e-10), rtol=1e-6)


def test_dct_of_log_mel_is_the_projects_mfcc() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(0, 0.1, 8000)
    m = MfccConfig(lifter=0.0)
    fb = log_mel_fbank(x, RATE, FbankConfig(n_mels=m.n_mels, low_hz=m.low_hz, high_hz=m.high_hz))
    expected = mfcc(x, RATE, m)
    np.testing.assert_allclose(fb.astype(np.float64) @ _dct_matrix(m.n_mels, m.n_ceps),
                               expected, rtol=1e-4, atol=1e-3)


# ------------------------------------------------------------------------- the tool


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """Two recordings, three utterances (segments), word table with one word each."""
    d = tmp_path / "data"
    d.mkdir()
    soundfile.write(tmp_path / "r1.wav", tone(300, 2.0), RATE, subtype="FLOAT")
    soundfile.write(tmp_path / "r2.wav", tone(600, 1.0, 22_050), 22_050)
    (d / "wav.scp").write_text(f"r1 {tmp_path / 'r1.wav'}\nr2 {tmp_path / 'r2.wav'}\n")
    (d / "segments").write_text("u1 r1 0.00 1.00\nu2 r1 1.00 2.00\nu3 r2 0.00 0.50\n")
    rows = ["utt_id\tidx\tword\tform\tpunct\tcap\tstart\tend\tpause_after"]
    rows += [f"{u}\t0\tyes\tYes\tPERIOD\tFIRST_CAP\t\t\t" for u in ("u1", "u2", "u3")]
    (d / "words.tsv").write_text("\n".join(rows) + "\n")
    return d


def test_jobs_merge_and_values(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for job in (1, 2):
        assert make_fbank.main(["--data-dir", str(data_dir), "--job", str(job),
                                "--num-jobs", "2"]) == 0
    assert make_fbank.main(["--data-dir", str(data_dir), "--merge", "--num-jobs", "2"]) == 0
    table = kaldiio.load_scp(str(data_dir / "fbank.scp"))
    assert sorted(table) == ["u1", "u2", "u3"]
    assert table["u1"].shape == (100, 80) and table["u3"].shape == (50, 80)
    np.testing.assert_allclose(table["u2"], log_mel_fbank(tone(300, 2.0)[RATE:], RATE),
                               rtol=1e-5)
    # job 1 holds u1 and u3 (index % 2 == 0); rerunning it is a no-op (resumable)
    assert sorted(kaldiio.load_scp(str(data_dir / "fbank.1.scp"))) == ["u1", "u3"]
    capsys.readouterr()
    assert make_fbank.main(["--data-dir", str(data_dir), "--job", "1", "--num-jobs", "2"]) == 0
    assert "already done" in capsys.readouterr().out


def test_several_data_dirs_in_one_call(data_dir: Path, tmp_path: Path) -> None:
    """Stage 3 runs each job over every set: the same features as one call per set."""
    other = tmp_path / "other"
    shutil.copytree(data_dir, other)
    (other / "segments").write_text("v1 r2 0.00 1.00\n")  # one utterance: job 2 has none
    alone = tmp_path / "alone"
    shutil.copytree(other, alone)
    assert make_fbank.main(["--data-dir", str(alone)]) == 0
    dirs = ["--data-dir", str(data_dir), "--data-dir", str(other)]
    for job in (1, 2):
        assert make_fbank.main([*dirs, "--job", str(job), "--num-jobs", "2"]) == 0
    assert make_fbank.main([*dirs, "--merge", "--num-jobs", "2"]) == 0
    assert sorted(kaldiio.load_scp(str(data_dir / "fbank.scp"))) == ["u1", "u2", "u3"]
    v1 = kaldiio.load_scp(str(other / "fbank.scp"))["v1"]
    np.testing.assert_array_equal(v1, kaldiio.load_scp(str(alone / "fbank.scp"))["v1"])


def test_single_job_and_missing_parts(data_dir: Path, capsys: pytest.CaptureFixture[str]
                                      ) -> None:
    assert make_fbank.main(["--data-dir", str(data_dir), "--n-mels", "40"]) == 0
    assert kaldiio.load_scp(str(data_dir / "fbank.scp"))["u1"].shape == (100, 40)
    assert make_fbank.main(["--data-dir", str(data_dir), "--stream", "x", "--merge",
                            "--num-jobs", "3"]) == 2
    assert "x.1.scp" in capsys.readouterr().err
    (data_dir / "wav.scp").unlink()
    assert make_fbank.main(["--data-dir", str(data_dir), "--stream", "y"]) == 2


def test_wav2vec2_stream(data_dir: Path, tmp_path: Path) -> None:
    import torch
    from transformers import Wav2Vec2Config, Wav2Vec2Model

    torch.manual_seed(0)
    cfg = Wav2Vec2Config(hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32, conv_dim=(8, 8, 8, 8, 8, 8, 8),
                         num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2)
    Wav2Vec2Model(cfg).save_pretrained(str(tmp_path / "w2v"))
    assert make_fbank.main(["--data-dir", str(data_dir), "--wav2vec2",
                            str(tmp_path / "w2v")]) == 0
    table = kaldiio.load_scp(str(data_dir / "w2v.scp"))
    # 1 s at 16 kHz -> 49 frames of 20 ms (receptive field 400 samples, hop 320)
    assert table["u1"].shape == (49, 16)
    assert table["u3"].shape == (24, 16)  # 0.5 s of 22.05 kHz audio resampled to 16 kHz
    assert np.isfinite(table["u2"]).all()
