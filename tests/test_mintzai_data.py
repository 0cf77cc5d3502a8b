"""mintzai-ST: m4a decoding, the layout checks, partitions and ES/EU/ES+EU sets, and
stage 0 (checksum record and verification, safe extraction) on small local copies."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest
import soundfile
from helpers.mintzai_fixture import can_encode_m4a, make_tarball, write_m4a

from punct.bin import prepare_mintzai
from punct.data import audio_decode
from punct.data.audio import load_requests
from punct.data.audio_decode import AudioDecoderMissing, audio_duration, decode_audio
from punct.data.mintzai import LayoutError, find_root, scan_corpus
from punct.errors import MissingDataError, PunctInputError
from punct.kaldi import read_kv
from punct.wordtable import rows_from_text, write_word_table

ROOT = Path(__file__).resolve().parents[1]
RATE = 16000

ES = ["Señor Zabala, ¿cuándo llega el presupuesto?", "Gracias, presidenta.",
      "Votaremos en contra: no es justo.", "¿Y usted qué opina?"]
EU = ["Zabala jauna, noiz dator aurrekontua?", "Eskerrik asko, presidente andrea.",
      "Aurka bozkatuko dugu: ez da bidezkoa.", "Eta zuk zer uste duzu?"]


def tone(seconds: float = 0.5, freq: float = 440.0) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def write_layout(base: Path, splits: tuple[str, ...] = ("train", "dev", "test"),
                 n: int = 2, wrapper: str = "MintzAI-ST") -> Path:
    """A corpus copy with short wav tones (no speech needed for layout checks)."""
    root = base / wrapper if wrapper else base
    for direction, lang, texts in (("es-eu", "es", ES), ("eu-es", "eu", EU)):
        for s, split in enumerate(splits):
            d = root / "v1.0" / direction / split
            (d / "audio").mkdir(parents=True)
            (d / "transcriptions").mkdir()
            (d / "translations").mkdir()
            for k in range(n):
                seg = f"s{s}_{k:02d}"
                soundfile.write(d / "audio" / f"{seg}.wav", tone(), RATE)
                (d / "transcriptions" / f"{seg}.{lang}").write_text(
                    texts[(s + k) % len(texts)] + "\n", encoding="utf-8")
    return root


# ----------------------------------------------------------------- m4a decoding


@pytest.mark.skipif(not can_encode_m4a(), reason="PyAV with an AAC encoder not installed")
def test_m4a_decodes_to_the_encoded_signal(tmp_path: Path) -> None:
    x = tone(1.0, 300.0)
    path = tmp_path / "a.m4a"
    write_m4a(path, x, RATE)
    y, rate = decode_audio(path)
    assert rate == RATE and y.dtype == np.float32
    # AAC adds the encoder delay (priming, 1024 samples) and pads the last frame
    assert len(x) <= len(y) <= len(x) + 3 * 1024
    lag = int(np.argmax(np.correlate(y[:4096], x[:2048], mode="valid")))
    seg = y[lag: lag + len(x) - 2048]
    corr = np.corrcoef(seg, x[: len(seg)])[0, 1]
    assert corr > 0.99
    assert abs(np.sqrt(np.mean(seg ** 2)) - 0.3 / np.sqrt(2)) < 0.02
    assert audio_duration(path) == pytest.approx(len(x) / RATE, abs=0.1)


@pytest.mark.skipif(not can_encode_m4a(), reason="PyAV with an AAC encoder not installed")
def test_align_requests_read_m4a_through_the_decoder(tmp_path: Path) -> None:
    path = tmp_path / "a.m4a"
    write_m4a(path, tone(0.8), RATE)
    data = tmp_path / "d"
    data.mkdir()
    (data / "wav.scp").write_text(f"u1 {path}\n", encoding="utf-8")
    write_word_table(data / "words.tsv", {"u1": rows_from_text("u1", "Hola.")})
    req = load_requests(data)[0]
    samples, rate = req.load_audio()
    assert rate == RATE and 0.8 <= len(samples) / rate < 1.0
    assert req.duration() == pytest.approx(0.8, abs=0.1)


def test_no_decoder_is_a_clear_error_naming_the_file(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "seg.m4a"
    path.write_bytes(b"\0" * 64)
    monkeypatch.setattr(audio_decode, "decoder_name", lambda: None)
    with pytest.raises(AudioDecoderMissing) as err:
        decode_audio(path)
    assert str(path) in str(err.value) and "pip install av" in str(err.value)
    assert "ffmpeg" in str(err.value)
    with pytest.raises(MissingDataError):
        decode_audio(tmp_path / "absent.m4a")


def test_damaged_m4a_is_an_input_error(tmp_path: Path) -> None:
    if audio_decode.decoder_name() is None:
        pytest.skip("no m4a decoder")
    path = tmp_path / "bad.m4a"
    path.write_bytes(b"not an mp4 file at all" * 10)
    with pytest.raises(PunctInputError) as err:
        decode_audio(path)
    assert str(path) in str(err.value)


def test_integer_samples_are_scaled() -> None:
    ints = np.array([[-32768, 0, 16384]], dtype=np.int16)
    assert audio_decode.to_float(ints).tolist() == [[-1.0, 0.0, 0.5]]
    assert audio_decode.to_float(np.array([[0, 128]], dtype=np.uint8)).tolist() == [[-1.0, 0.0]]


# ----------------------------------------------------------------- layout


def test_root_found_through_the_wrapper_folder(tmp_path: Path) -> None:
    root = write_layout(tmp_path)
    assert find_root(tmp_path) == root
    assert find_root(root) == root
    scans = scan_corpus(tmp_path)
    assert [(s.lang, s.split, len(s.segments)) for s in scans] == [
        ("es", "train", 2), ("es", "dev", 2), ("es", "test", 2),
        ("eu", "train", 2), ("eu", "dev", 2), ("eu", "test", 2)]


def test_unrecognised_layout_lists_what_was_found(tmp_path: Path) -> None:
    (tmp_path / "corpus" / "es").mkdir(parents=True)
    (tmp_path / "corpus" / "es" / "a.mp3").write_bytes(b"x")
    (tmp_path / "corpus" / "es" / "a.txt").write_text("hola", encoding="utf-8")
    (tmp_path / "other").mkdir()
    with pytest.raises(LayoutError) as err:
        find_root(tmp_path)
    msg = str(err.value)
    assert "no v1.0/ folder" in msg and "Found:" in msg
    assert "corpus/" in msg and "es/  [1 x .mp3, 1 x .txt]" in msg and "other/" in msg


def test_missing_transcriptions_folder_is_named(tmp_path: Path) -> None:
    root = write_layout(tmp_path)
    split = root / "v1.0" / "eu-es" / "dev"
    (split / "transcriptions").rename(split / "texts")
    with pytest.raises(LayoutError) as err:
        scan_corpus(root)
    assert "has no transcriptions/" in str(err.value) and "texts/" in str(err.value)


def test_unknown_split_and_missing_split_stop(tmp_path: Path) -> None:
    root = write_layout(tmp_path, splits=("train", "valid", "test"))
    scans = scan_corpus(root)  # "valid" is read as dev
    assert {s.split for s in scans} == {"train", "dev", "test"}
    (root / "v1.0" / "es-eu" / "extra").mkdir()
    with pytest.raises(LayoutError, match="unknown split folder 'extra'"):
        scan_corpus(root)
    other = write_layout(tmp_path / "b", splits=("train", "test"))
    with pytest.raises(LayoutError, match="lacks the split"):
        scan_corpus(other)


def test_unknown_direction_and_wrong_suffix_stop(tmp_path: Path) -> None:
    root = write_layout(tmp_path)
    (root / "v1.0" / "en-es").mkdir()
    with pytest.raises(LayoutError, match="unknown direction folder"):
        scan_corpus(root)
    (root / "v1.0" / "en-es").rmdir()
    texts = root / "v1.0" / "es-eu" / "test" / "transcriptions"
    for f in texts.iterdir():
        f.rename(f.with_suffix(".txt"))
    with pytest.raises(LayoutError) as err:
        scan_corpus(root)
    assert "no transcription (.es)" in str(err.value) and "2 x .txt" in str(err.value)


def test_non_utf8_transcription_names_the_file(tmp_path: Path) -> None:
    root = write_layout(tmp_path)
    bad = root / "v1.0" / "es-eu" / "train" / "transcriptions" / "s0_00.es"
    bad.write_bytes("Señor.".encode("latin-1"))
    with pytest.raises(PunctInputError) as err:
        scan_corpus(root)
    assert str(bad) in str(err.value) and "UTF-8" in str(err.value)


# ----------------------------------------------------------------- prepare


def test_sets_keep_the_partitions(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    root = write_layout(tmp_path / "db", n=3)
    data = tmp_path / "data"
    assert prepare_mintzai.main(["--db-dir", str(tmp_path / "db"),
                                 "--data-dir", str(data)]) == 0
    sets = sorted(p.name for p in data.iterdir() if p.is_dir())
    assert sets == sorted(f"{s}_{lang}" for s in ("train", "dev", "test")
                          for lang in ("es", "eu", "es_eu"))
    for split, s in (("train", 0), ("dev", 1), ("test", 2)):
        es = read_kv(data / f"{split}_es" / "wav.scp")
        eu = read_kv(data / f"{split}_eu" / "wav.scp")
        both = read_kv(data / f"{split}_es_eu" / "wav.scp")
        assert both == {**es, **eu} and len(es) == len(eu) == 3
        assert all(f"/es-eu/{split}/audio/s{s}_" in p for p in es.values())
        assert all(f"/eu-es/{split}/audio/s{s}_" in p for p in eu.values())
        langs = read_kv(data / f"{split}_es_eu" / "utt2lang")
        assert sorted(langs.values()) == ["es"] * 3 + ["eu"] * 3
        assert all(u.startswith(f"{lang}_{split}_") for u, lang in langs.items())
    text = read_kv(data / "train_es" / "text")
    assert text["es_train_s0_00"] == ES[0]
    words = (data / "train_es" / "words.tsv").read_text(encoding="utf-8").splitlines()
    assert words[1].startswith("es_train_s0_00\t0\tseñor\tSeñor\tO\tFIRST_CAP\t")
    assert "\tzabala\tZabala\tCOMMA\tFIRST_CAP\t" in words[2]
    assert "\tcuándo\tcuándo\tOPEN_QUES\tO\t" in words[3]
    out = capsys.readouterr().out
    assert "train_es_eu: 6 utts" in out
    assert root.is_dir()


def test_unpaired_and_empty_segments_are_listed(tmp_path: Path,
                                                capsys: pytest.CaptureFixture) -> None:
    root = write_layout(tmp_path / "db", n=3)
    split = root / "v1.0" / "eu-es" / "train"
    (split / "transcriptions" / "s0_00.eu").unlink()
    (split / "audio" / "s0_01.wav").unlink()
    (split / "transcriptions" / "s0_02.eu").write_text("\n  \n", encoding="utf-8")
    with pytest.raises(LayoutError, match="no segment has both"):
        scan_corpus(root)
    soundfile.write(split / "audio" / "s0_03.wav", tone(), RATE)
    (split / "transcriptions" / "s0_03.eu").write_text("Bai, noski.", encoding="utf-8")
    data = tmp_path / "data"
    assert prepare_mintzai.main(["--db-dir", str(root), "--data-dir", str(data)]) == 0
    report = json.loads((data / "mintzai_prepare.json").read_text(encoding="utf-8"))
    eu = report["splits"]["train_eu"]
    assert eu["segments"] == 1
    assert eu["audio_without_transcription"] == ["s0_00"]
    assert eu["transcription_without_audio"] == ["s0_01"]
    assert eu["empty_transcription"] == ["s0_02"]
    assert "3 segments left out" in capsys.readouterr().out
    assert list(read_kv(data / "train_eu" / "text")) == ["eu_train_s0_03"]


def test_unpunctuated_transcriptions_stop(tmp_path: Path) -> None:
    root = write_layout(tmp_path / "db")
    for f in root.rglob("transcriptions/*"):
        f.write_text("hola que tal\n", encoding="utf-8")
    assert prepare_mintzai.main(["--db-dir", str(root), "--data-dir",
                                 str(tmp_path / "data")]) == 1
    with pytest.raises(PunctInputError, match="not punctuated"):
        prepare_mintzai.prepare(root, tmp_path / "data")


def test_max_utts_and_one_language(tmp_path: Path) -> None:
    root = write_layout(tmp_path / "db", n=4)
    data = tmp_path / "data"
    summary = prepare_mintzai.prepare(root, data, max_utts=2, langs=("eu",))
    assert sorted(summary) == ["dev_eu", "test_eu", "train_eu"]
    assert all(c["utterances"] == 2 for c in summary.values())


# ----------------------------------------------------------------- stage 0


def run_download(out: Path, **env: str) -> subprocess.CompletedProcess:
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    full = dict(os.environ, PYTHONPATH=str(ROOT), PATH=path, **env)
    return subprocess.run(["bash", str(ROOT / "local" / "mintzai_st" / "download.sh"),
                           str(out)], capture_output=True, text=True, env=full, timeout=300)


def test_stage0_records_then_checks_the_tarball_sum(tmp_path: Path) -> None:
    src = write_layout(tmp_path / "src", n=1)
    tarball = make_tarball(src, tmp_path / "mintzai.tar.gz")
    out = tmp_path / "downloads"
    proc = run_download(out, MINTZAI_ST=str(tarball), MINTZAI_ST_SHA256="")
    assert proc.returncode == 0, proc.stderr
    assert "no sha256 pinned" in proc.stdout
    sums = (out / "mintzai_st" / "SHA256SUMS").read_text(encoding="utf-8")
    assert sums.split()[1] == "mintzai.tar.gz" and len(sums.split()[0]) == 64
    assert (out / "mintzai_st" / "corpus" / "v1.0" / "es-eu").is_dir()
    assert "es-eu/train: 1 segments (es)" in proc.stdout
    # a different tarball of the same name no longer matches the record
    (out / "mintzai_st" / "corpus").unlink()
    with tarfile.open(tarball, "w:gz") as tar:
        info = tarfile.TarInfo("MintzAI-ST/v1.0/readme")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    proc = run_download(out, MINTZAI_ST=str(tarball), MINTZAI_ST_SHA256="")
    assert proc.returncode == 1 and "checksum mismatch" in proc.stderr


def test_stage0_pinned_sum_and_unsafe_tarball(tmp_path: Path) -> None:
    src = write_layout(tmp_path / "src", n=1)
    tarball = make_tarball(src, tmp_path / "c.tar.gz")
    proc = run_download(tmp_path / "dl", MINTZAI_ST=str(tarball), MINTZAI_ST_SHA256="0" * 64)
    assert proc.returncode == 1 and "MINTZAI_ST_SHA256" in proc.stderr
    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        info = tarfile.TarInfo("../outside.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    proc = run_download(tmp_path / "dl2", MINTZAI_ST=str(evil), MINTZAI_ST_SHA256="")
    assert proc.returncode == 1 and "outside the target" in proc.stderr
    assert not (tmp_path / "dl2" / "mintzai_st" / "outside.txt").exists()
    assert not (tmp_path / "outside.txt").exists()


def test_stage0_links_a_folder_and_stops_on_a_bad_one(tmp_path: Path) -> None:
    src = write_layout(tmp_path / "src", n=1)
    proc = run_download(tmp_path / "dl", MINTZAI_ST=str(tmp_path / "src"))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "dl" / "mintzai_st" / "corpus").resolve() == (tmp_path / "src").resolve()
    assert src.is_dir()
    bad = tmp_path / "bad"
    (bad / "v1.0" / "es-eu" / "train").mkdir(parents=True)
    proc = run_download(tmp_path / "dl3", MINTZAI_ST=str(bad))
    assert proc.returncode == 1 and "lacks the split(s) dev, test" in proc.stderr
    assert "Found:" in proc.stderr
    proc = run_download(tmp_path / "dl4", MINTZAI_ST=str(tmp_path / "absent"))
    assert proc.returncode == 2 and "does not exist" in proc.stderr
