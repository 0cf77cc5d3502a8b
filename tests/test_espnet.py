"""The optional ESPnet extra: the espnet_ctc aligner and ``restore --asr-model``.

A tiny CTC-only ESPnet model is built offline (``ASRTask.build_model``, random weights),
so these tests check structure and behaviour (timings ordered and inside the audio,
documents, formats), not accuracy. Without the extra (``./setup.sh --with-espnet``)
they skip, except the checks of what a missing extra says.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile
from helpers.tiny import tiny_autopunct_exp

from punct.align.base import AlignRequest, get_aligner
from punct.asr.espnet_env import EspnetMissingError, espnet_available, import_espnet2
from punct.asr.espnet_model import model_files
from punct.bin import align as align_cli
from punct.bin import restore as restore_cli
from punct.data.timed import END_OF_DOCUMENT_PAUSE
from punct.errors import MissingDataError, PunctInputError

HAVE_ESPNET = espnet_available()
needs_espnet = pytest.mark.skipif(
    not HAVE_ESPNET, reason="ESPnet extra not installed (./setup.sh --with-espnet)")
RATE = 16000
WORDS = ("hello", "world", "what", "is", "it")


@pytest.fixture(scope="module")
def espnet_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not HAVE_ESPNET:
        pytest.skip("ESPnet extra not installed (./setup.sh --with-espnet)")
    from helpers.tiny_espnet import build_tiny_espnet  # (imports espnet2)

    return build_tiny_espnet(tmp_path_factory.mktemp("espnet") / "asr")


@pytest.fixture(scope="module")
def wav(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2.5 s of speech-like noise bursts (one per word) at 22.05 kHz (resampled inside)."""
    rng = np.random.default_rng(0)
    rate = 22050
    x = np.zeros(int(2.5 * rate), np.float32)
    for k in range(len(WORDS)):
        a = int((0.2 + 0.45 * k) * rate)
        x[a:a + int(0.3 * rate)] = 0.3 * rng.standard_normal(int(0.3 * rate))
    path = tmp_path_factory.mktemp("audio") / "talk.wav"
    soundfile.write(path, x, rate)
    return path


# ----------------------------------------------------------------------------- model files


def test_model_files_finds_config_and_parameters(tmp_path: Path) -> None:
    with pytest.raises(MissingDataError, match="ESPnet model not found"):
        model_files(tmp_path / "nope")
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.yaml").write_text("{}\n")
    with pytest.raises(MissingDataError, match=r"no parameter file to pick .*found none"):
        model_files(d)
    (d / "checkpoint.pth").write_bytes(b"")
    (d / "3epoch.pth").write_bytes(b"")
    assert model_files(d) == (d / "config.yaml", d / "3epoch.pth")
    (d / "4epoch.pth").write_bytes(b"")
    with pytest.raises(MissingDataError, match=r"found 3epoch.pth, 4epoch.pth"):
        model_files(d)
    (d / "valid.acc.ave.pth").write_bytes(b"")
    assert model_files(d)[1] == d / "valid.acc.ave.pth"
    assert model_files(d / "4epoch.pth") == (d / "config.yaml", d / "4epoch.pth")
    (d / "config.yaml").unlink()
    with pytest.raises(MissingDataError, match=r"config\.yaml beside the \.pth"):
        model_files(d)


def test_aligner_without_model_says_what_to_give() -> None:
    with pytest.raises(MissingDataError, match="--ctc-model"):
        get_aligner("espnet_ctc")


def test_missing_espnet_names_setup_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "espnet2.bin.nonexistent_module", None)
    with pytest.raises(EspnetMissingError, match=r"\./setup\.sh --with-espnet"):
        import_espnet2("espnet2.bin.nonexistent_module")


# ----------------------------------------------------------------------------- aligner


@needs_espnet
def test_tiny_model_is_tiny_and_ctc_only(espnet_model: Path) -> None:
    from helpers.tiny_espnet import n_parameters

    assert 1000 < n_parameters(espnet_model) < 20000
    config = (espnet_model / "config.yaml").read_text()
    assert "decoder: null" in config and "ctc_weight: 1.0" in config


@needs_espnet
def test_espnet_ctc_aligner_times_every_word_inside_the_audio(espnet_model: Path,
                                                              wav: Path) -> None:
    aligner = get_aligner("espnet_ctc", ctc_model=str(espnet_model))
    req = AlignRequest("talk", WORDS, wav=str(wav))
    result = aligner.align(req)
    assert result is not None and result.duration == pytest.approx(2.5, abs=1e-3)
    assert [w.word for w in result.words] == list(WORDS)
    starts = [w.start for w in result.words]
    ends = [w.end for w in result.words]
    assert all(0.0 <= s <= e <= result.duration for s, e in zip(starts, ends, strict=True))
    assert starts == sorted(starts)
    # consecutive words do not overlap (CTC segmentation gives disjoint spans)
    assert all(ends[k] <= starts[k + 1] + 1e-6 for k in range(len(WORDS) - 1))
    # a segment inside a recording: times stay relative to the utterance
    cut = aligner.align(AlignRequest("talk_b", WORDS[:2], wav=str(wav), seg_start=1.0,
                                     seg_end=2.0))
    assert cut is not None and cut.duration == pytest.approx(1.0, abs=1e-3)
    assert all(0.0 <= w.start <= w.end <= 1.0 for w in cut.words)


@needs_espnet
def test_espnet_ctc_aligner_audio_too_short_names_utterance(espnet_model: Path,
                                                            tmp_path: Path) -> None:
    short = tmp_path / "short.wav"
    soundfile.write(short, np.zeros(RATE // 10, np.float32), RATE)
    aligner = get_aligner("espnet_ctc", ctc_model=str(espnet_model))
    words = tuple("supercalifragilistic" for _ in range(5))
    with pytest.raises(PunctInputError, match=r"scp:7: utterance u1: CTC segmentation"):
        aligner.align(AlignRequest("u1", words, wav=str(short), wav_scp="scp", wav_line=7))


@needs_espnet
def test_align_command_writes_ctm_with_espnet_ctc(espnet_model: Path, wav: Path,
                                                  tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "wav.scp").write_text(f"talk {wav}\n")
    (data / "text").write_text("talk Hello world, what is it?\n")
    (data / "utt2spk").write_text("talk talk\n")
    (data / "spk2utt").write_text("talk talk\n")
    (data / "words.tsv").write_text(
        "utt_id\tidx\tword\tform\tpunct\tcap\tstart\tend\tpause_after\n"
        + "".join(f"talk\t{i}\t{w}\t{w}\t{p}\t{c}\t\t\t\n" for i, (w, p, c) in enumerate(zip(
            WORDS, ["O", "COMMA", "O", "O", "QUESTION"],
            ["FIRST_CAP", "O", "O", "O", "O"], strict=True))))
    out = tmp_path / "ali"
    rc = align_cli.main(["--data-dir", str(data), "--out-dir", str(out), "--aligner",
                         "espnet_ctc", "--ctc-model", str(espnet_model)])
    assert rc == 0
    ctm = (out / "ctm").read_text().split("\n")
    assert [line.split()[4] for line in ctm if line] == list(WORDS)


# ----------------------------------------------------------------------------- restore


@pytest.fixture(scope="module")
def tiny_exp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An untrained pause-aware AutoPunct system over a tiny random BERT."""
    return tiny_autopunct_exp(tmp_path_factory.mktemp("restore"), WORDS, bf16="off")


def test_restore_reads_espnet_outputs(tiny_exp: Path, tmp_path: Path) -> None:
    text = tmp_path / "text"
    text.write_text("spk1-utt1 HELLO WORLD WHAT IS IT\nspk1-utt2\n")
    trn = tmp_path / "hyp.trn"
    trn.write_text("HELLO WORLD\t(spk1-spk1-utt1)\nWHAT IS IT\t(spk1-spk1-utt2)\n")
    seg = tmp_path / "segments"
    seg.write_text("rec_0000 rec 0.20 1.00 -0.1 HELLO WORLD\n"
                   "rec_0001 rec 1.70 2.40 -0.3 WHAT IS IT\n")
    base = ["--exp-dir", str(tiny_exp), "--quiet", "--output-format", "jsonl"]
    got = {}
    for fmt, path in (("kaldi", text), ("trn", trn), ("ctc-segments", seg)):
        out = tmp_path / f"{fmt}.jsonl"
        assert restore_cli.main([*base, "--input-format", fmt, str(path), "-o", str(out)]) == 0
        got[fmt] = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in got["kaldi"]] == ["spk1-utt1", "spk1-utt2"]
    assert [w["word"] for w in got["kaldi"][0]["words"]] == list(WORDS)
    assert got["kaldi"][1]["words"] == []
    assert [r["id"] for r in got["trn"]] == ["spk1-spk1-utt1", "spk1-spk1-utt2"]
    (rec,) = got["ctc-segments"]
    assert rec["id"] == "rec" and [w["word"] for w in rec["words"]] == list(WORDS)
    assert rec["words"][1]["pause_after"] == pytest.approx(0.7)
    assert rec["words"][-1]["pause_after"] == END_OF_DOCUMENT_PAUSE


def test_restore_espnet_input_error_exit_code(tiny_exp: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    trn = tmp_path / "hyp.trn"
    trn.write_text("HELLO WORLD (u1)\nWHAT IS IT\n")
    assert restore_cli.main(["--exp-dir", str(tiny_exp), "--input-format", "trn", str(trn),
                             "--quiet"]) == 1
    assert f"{trn}:2: expected" in capsys.readouterr().err


def test_restore_asr_model_refuses_input_format(tiny_exp: Path) -> None:
    with pytest.raises(SystemExit):
        restore_cli.main(["--exp-dir", str(tiny_exp), "--asr-model", "m", "--input-format",
                          "ctm", "x.wav"])


@needs_espnet
def test_restore_asr_model_end_to_end(tiny_exp: Path, tmp_path: Path, wav: Path) -> None:
    from helpers.tiny_espnet import build_tiny_espnet

    # blank made unlikely: the random model then emits characters, so words come out
    model = build_tiny_espnet(tmp_path / "asr", seed=1, blank_bias=-4.0)
    out = tmp_path / "out.jsonl"
    second = tmp_path / "second.flac"
    x, rate = soundfile.read(wav)
    soundfile.write(second, np.stack([x[: rate], x[: rate]], axis=1), rate)  # stereo, 1 s
    rc = restore_cli.main(["--exp-dir", str(tiny_exp), "--asr-model", str(model),
                           "--asr-beam-size", "2", "--output-format", "jsonl", "--quiet",
                           "--num-threads", "1", str(wav), str(second), "-o", str(out)])
    assert rc == 0
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in recs] == ["talk", "second"]
    for rec, duration in zip(recs, (2.5, 1.0), strict=True):
        words = rec["words"]
        assert words, "the biased random model emits characters"
        starts = [w["start"] for w in words]
        assert starts == sorted(starts)
        assert all(0.0 <= w["start"] <= w["end"] <= duration + 1e-3 for w in words)
        assert words[-1]["pause_after"] == END_OF_DOCUMENT_PAUSE
        assert all(w["pause_after"] >= 0 for w in words)
    # the default output of audio input is kaldi (id + restored text)
    kaldi = tmp_path / "out.txt"
    assert restore_cli.main(["--exp-dir", str(tiny_exp), "--asr-model", str(model),
                             "--asr-beam-size", "2", "--quiet", str(wav), "-o",
                             str(kaldi)]) == 0
    line = kaldi.read_text().splitlines()[0]
    assert line.split()[0] == "talk"
    assert " ".join(line.split()[1:]).lower().replace(",", "").replace(".", "").replace(
        "?", "").split() == [w["word"] for w in recs[0]["words"]]


@needs_espnet
def test_restore_asr_model_missing_model_exits_2(tiny_exp: Path, wav: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert restore_cli.main(["--exp-dir", str(tiny_exp), "--asr-model",
                             str(tmp_path / "none"), str(wav), "--quiet"]) == 2
    assert "ESPnet model not found" in capsys.readouterr().err


def test_restore_asr_model_without_extra_names_setup(tiny_exp: Path, wav: Path,
                                                     tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "asr"
    model.mkdir()
    (model / "config.yaml").write_text("decoder: null\n")
    (model / "model.pth").write_bytes(b"")
    monkeypatch.setitem(sys.modules, "espnet2.bin.asr_inference", None)  # as if not installed
    assert restore_cli.main(["--exp-dir", str(tiny_exp), "--asr-model", str(model), str(wav),
                             "--quiet"]) == 2
    assert "./setup.sh --with-espnet" in capsys.readouterr().err


@needs_espnet
def test_api_restore_audio_gives_timed_words(tiny_exp: Path, tmp_path: Path, wav: Path) -> None:
    """``Restorer.restore_audio``: the command's ASR path from Python, one file or several."""
    from helpers.tiny_espnet import build_tiny_espnet

    from punct import Restorer

    model = build_tiny_espnet(tmp_path / "asr", seed=1, blank_bias=-4.0)
    restorer = Restorer.from_pretrained(tiny_exp)
    words = restorer.restore_audio(wav, model, beam_size=2)
    assert words and all(w.start is not None and 0.0 <= w.start <= w.end <= 2.5 + 1e-3
                         for w in words)
    assert [w.start for w in words] == sorted(w.start for w in words)
    both = restorer.restore_audio([wav, wav], model, beam_size=2)
    assert len(both) == 2 and [w.form for w in both[0]] == [w.form for w in words]
