"""Prosodic features: deltas, interpolation, normalisation, Praat F0, the make_prosody CLI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile

from punct.bin import make_prosody
from punct.features.prosody import (
    ProsodyConfig,
    delta,
    f0_intensity,
    feature_names,
    interpolate_unvoiced,
    n_frames,
    prosody_features,
    znorm,
)

RATE = 16000


def tone(hz_start: float, hz_end: float, seconds: float) -> np.ndarray:
    """A sine whose frequency glides linearly from hz_start to hz_end."""
    t = np.arange(int(seconds * RATE)) / RATE
    freq = np.linspace(hz_start, hz_end, len(t))
    return 0.3 * np.sin(2 * np.pi * np.cumsum(freq) / RATE)


def test_delta_of_a_ramp_is_its_slope() -> None:
    x = 2.0 * np.arange(20)
    d = delta(x, 5)
    np.testing.assert_allclose(d[2:-2], 2.0)
    # edge repeated: at t=0, (1*(x1-x0) + 2*(x2-x0)) / 10 = (2 + 8) / 10
    assert d[0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="odd"):
        delta(x, 4)


def test_interpolate_unvoiced_by_hand() -> None:
    values = np.array([0.0, 2.0, 0.0, 0.0, 8.0, 0.0])
    voiced = np.array([0, 1, 0, 0, 1, 0], dtype=bool)
    np.testing.assert_allclose(interpolate_unvoiced(values, voiced), [2, 2, 4, 6, 8, 8])
    np.testing.assert_allclose(interpolate_unvoiced(values, np.zeros(6, bool)), 0.0)


def test_znorm_and_frames() -> None:
    z = znorm(np.array([[1.0, 5.0], [3.0, 5.0]]))
    np.testing.assert_allclose(z, [[-1.0, 0.0], [1.0, 0.0]])
    assert n_frames(16000, RATE, 0.01) == 100
    assert n_frames(16001, RATE, 0.01) == 101


def test_praat_f0_of_a_150_hz_tone() -> None:
    hz, voiced, db = f0_intensity(tone(150, 150, 1.0), RATE)
    assert len(hz) == len(db) == 100
    assert voiced[10:90].all()
    np.testing.assert_allclose(hz[10:90], 150.0, atol=1.0)


def test_features_follow_a_rising_glide() -> None:
    feats = prosody_features(tone(120, 240, 1.0), RATE)
    names = feature_names()
    assert feats.shape == (100, len(names)) and names[:3] == ["f0", "voiced", "int"]
    f0 = feats[10:90, 0]
    assert np.all(np.diff(f0) > -0.05)  # semitones rise (z-normalised)
    assert abs(feats[:, 0].mean()) < 1e-4 and feats[:, 0].std() == pytest.approx(1.0, abs=1e-3)
    assert feats[40:60, names.index("d9_f0")].min() > 0  # positive F0 slope
    assert set(np.unique(feats[:, 1])) <= {0.0, 1.0}


def _data_dir(root: Path, durations: dict[str, float]) -> Path:
    data = root / "data"
    data.mkdir()
    wav_lines, rows = [], ["utt_id\tidx\tword\tform\tpunct\tcap\tstart\tend\tpause_after"]
    for utt, secs in durations.items():
        wav = root / f"{utt}.wav"
        soundfile.write(wav, tone(140, 180, secs) if secs else np.zeros(0), RATE)
        wav_lines.append(f"{utt} {wav}")
        rows.append(f"{utt}\t0\thello\tHello\tPERIOD\tFIRST_CAP\t\t\t")
    (data / "wav.scp").write_text("\n".join(wav_lines) + "\n", encoding="utf-8")
    (data / "words.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return data


def test_make_prosody_jobs_and_merge_match_one_pass(tmp_path: Path) -> None:
    import kaldiio

    data = _data_dir(tmp_path, {"a": 0.5, "b": 0.8, "c": 0.3})
    assert make_prosody.main(["--data-dir", str(data)]) == 0
    whole = dict(kaldiio.load_scp(str(data / "prosody.scp")))
    assert sorted(whole) == ["a", "b", "c"]
    assert whole["b"].shape == (80, len(feature_names()))
    for job in ("1", "2"):
        assert make_prosody.main(["--data-dir", str(data), "--job", job, "--num-jobs", "2"]) == 0
    assert make_prosody.main(["--data-dir", str(data), "--merge", "--num-jobs", "2"]) == 0
    merged = dict(kaldiio.load_scp(str(data / "prosody.scp")))
    assert sorted(merged) == ["a", "b", "c"]
    for utt in whole:
        np.testing.assert_array_equal(whole[utt], merged[utt])
    assert (data / "prosody.names").read_text().split() == feature_names(ProsodyConfig())
    # several data dirs in one call (stage 3's jobs run over every set): the same features
    (tmp_path / "other").mkdir()
    other = _data_dir(tmp_path / "other", {"d": 0.4})
    for job in ("1", "2"):
        assert make_prosody.main(["--data-dir", str(data), "--data-dir", str(other),
                                  "--job", job, "--num-jobs", "2"]) == 0
    assert make_prosody.main(["--data-dir", str(data), "--data-dir", str(other), "--merge",
                              "--num-jobs", "2"]) == 0
    assert dict(kaldiio.load_scp(str(data / "prosody.scp"))).keys() == whole.keys()
    assert sorted(kaldiio.load_scp(str(other / "prosody.scp"))) == ["d"]
    (tmp_path / "alone").mkdir()
    alone = _data_dir(tmp_path / "alone", {"d": 0.4})
    assert make_prosody.main(["--data-dir", str(alone)]) == 0
    np.testing.assert_array_equal(kaldiio.load_scp(str(other / "prosody.scp"))["d"],
                                  kaldiio.load_scp(str(alone / "prosody.scp"))["d"])


def test_make_prosody_names_the_bad_utterance(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    data = _data_dir(tmp_path, {"good": 0.4, "silent": 0.0})
    assert make_prosody.main(["--data-dir", str(data)]) == 2
    err = capsys.readouterr().err
    assert "silent" in err and "empty audio" in err and "wav.scp:2" in err
    (tmp_path / "good.wav").unlink()
    assert make_prosody.main(["--data-dir", str(data)]) == 2
    assert "good" in capsys.readouterr().err
    assert make_prosody.main(["--data-dir", str(data), "--merge", "--num-jobs", "3"]) == 2
    capsys.readouterr()
    missing = tmp_path / "no_such_dir"
    assert make_prosody.main(["--data-dir", str(missing)]) == 2
    assert capsys.readouterr().err == f"make_prosody: {missing}: data directory not found\n"
    assert not missing.exists()
