"""The BABEL-layout reader (transcripts, SPHERE headers, corpus folders), the Hungarian
BABEL preparation (punctuated transcripts, the paper's split) and stage 0 without the
corpus."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from punct.bin import prepare_babel_hu
from punct.data.babel import find_recordings, parse_transcript
from punct.data.babel_corpus import split_recordings
from punct.data.sphere import read_sphere_header, wav_scp_entry
from punct.errors import MissingDataError, PunctInputError
from punct.kaldi import read_kv
from punct.labels import get_label_set
from punct.wordtable import read_word_table

ROOT = Path(__file__).resolve().parents[1]
RATE = 8000


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_segments_between_time_stamps(tmp_path: Path) -> None:
    path = write(tmp_path / "a.txt", "[0.000]\n<no-speech>\n[1.5]\nszia  hogy vagy\n"
                 "[3.250]\n<breath> ~ <HES>\n[4.0]\n(())\n[4.5]\n")
    segs = parse_transcript(path)
    assert [(s.start, s.end, s.text, s.line, s.is_speech) for s in segs] == [
        (0.0, 1.5, "<no-speech>", 2, False), (1.5, 3.25, "szia hogy vagy", 4, True),
        (3.25, 4.0, "<breath> ~ <HES>", 6, False), (4.0, 4.5, "(())", 8, True)]


@pytest.mark.parametrize(("text", "line", "message"), [
    ("[0.0]\nszia\n[1,5]\n", 3, "malformed time stamp '[1,5]'"),
    ("[0.0]\nszia\n[abc\n", 3, "malformed time stamp"),
    ("[0.0]\nszia\n[2.0]\n[3.0]\n", 4, "empty segment [2.0]-[3.0]"),
    ("[0.0]\n\n[1.0]\n", 2, "empty segment after [0.0]"),
    ("[1.0]\nszia\n[0.5]\n", 3, "time stamp 0.5 does not follow 1.0"),
    ("szia\n[0.0]\n", 1, "text before the first time stamp"),
    ("[0.0]\nszia\nmég egy\n[1.0]\n", 3, "two text lines"),
    ("[0.0]\nszia\n", 2, "no closing time stamp"),
    ("[0.0]\nszia <sigh> te\n[1.0]\n", 2,
     "unknown transcription marker '<sigh>' (the babel non-speech map knows <breath>"),
    ("[0.0]\nszia <breath\n[1.0]\n", 2, "unknown transcription marker '<breath'"),
    ("[0.0]\n((szia te\n[1.0]\n", 2, "unbalanced (( ))"),
])
def test_transcript_errors_name_file_and_line(tmp_path: Path, text: str, line: int,
                                              message: str) -> None:
    path = write(tmp_path / "bad.txt", text)
    with pytest.raises(PunctInputError) as err:
        parse_transcript(path)
    assert err.value.path == str(path) and err.value.line == line
    assert message in str(err.value)
    assert str(err.value).startswith(f"{path}:{line}: ")


def test_sphere_header_and_wav_scp_entry(tmp_path: Path) -> None:
    samples = (np.sin(np.arange(RATE) / 7) * 8000).astype(np.int16)
    pcm = tmp_path / "pcm.sph"
    sf.write(pcm, samples, RATE, format="NIST", subtype="PCM_16")
    head = read_sphere_header(pcm)
    assert (head.sample_rate, head.channel_count, head.sample_coding, head.sample_count) == \
        (RATE, 1, "pcm", RATE)
    assert not head.compressed and wav_scp_entry(pcm) == str(pcm.resolve())
    shorten = tmp_path / "shn.sph"
    header = (b"NIST_1A\n   1024\nsample_rate -i 8000\nchannel_count -i 1\nsample_count -i 10\n"
              b"sample_coding -s26 pcm,embedded-shorten-v2.00\nend_head\n")
    shorten.write_bytes(header.ljust(1024, b" ") + b"\0" * 20)
    assert read_sphere_header(shorten).compressed
    env_path = os.environ.get("PATH", "")
    try:
        os.environ["PATH"] = str(tmp_path)  # no sph2pipe there
        with pytest.raises(MissingDataError, match="needs sph2pipe on PATH"):
            wav_scp_entry(shorten)
        fake = tmp_path / "sph2pipe"
        fake.write_text("#!/bin/sh\n", encoding="utf-8")
        fake.chmod(0o755)
        assert wav_scp_entry(shorten) == f"sph2pipe -f wav -p {shorten.resolve()} |"
    finally:
        os.environ["PATH"] = env_path
    bad = tmp_path / "bad.sph"
    bad.write_bytes(b"NIST_1A\n   1024\nsample_rate 8000\nend_head\n".ljust(1024, b" "))
    with pytest.raises(PunctInputError, match="bad SPHERE header field") as err:
        read_sphere_header(bad)
    assert err.value.line == 3
    (tmp_path / "riff.sph").write_bytes(b"RIFF" + b"\0" * 60)
    with pytest.raises(PunctInputError, match="not a NIST SPHERE file"):
        read_sphere_header(tmp_path / "riff.sph")


def make_corpus(base: Path, n: int = 10, punctuated: bool = False,
                subsets: tuple[str, ...] = ("training",)) -> tuple[Path, Path]:
    """n recordings of 3 s (SPHERE and WAV in turn) with two speech segments each; plain
    transcripts in corpus/, punctuated ones in punct/ (or in corpus/ when punctuated)."""
    corpus, punct = base / "corpus", base / "punct"
    noise = (np.random.default_rng(0).standard_normal(3 * RATE) * 500).astype(np.int16)
    for k in range(n):
        sub = subsets[k % len(subsets)]
        reco = f"hu{k:02d}"
        texts = [f"Első mondat {k}, vessző után.", "Második mondat: kérdés?"]
        plain = [" ".join(t.lower().replace(",", "").replace(".", "").replace(":", "")
                          .replace("?", "").split()) for t in texts]
        lines = ["[0.000]", "<no-speech>", "[0.500]", "{0}", "[1.500]", "<breath>", "[1.700]",
                 "{1}", "[2.900]"]
        fill = texts if punctuated else plain
        write(corpus / sub / "transcription" / f"{reco}.txt",
              "\n".join(lines).format(*fill) + "\n")
        write(punct / sub / "transcription" / f"{reco}.txt", "\n".join(lines).format(*texts) + "\n")
        audio = corpus / sub / "audio"
        audio.mkdir(parents=True, exist_ok=True)
        if k % 2:
            sf.write(audio / f"{reco}.wav", noise, RATE)
        else:
            sf.write(audio / f"{reco}.sph", noise, RATE, format="NIST", subtype="PCM_16")
    return corpus, punct


def test_find_recordings_and_missing_audio(tmp_path: Path) -> None:
    corpus, _ = make_corpus(tmp_path, n=4, subsets=("training", "dev"))
    recs = find_recordings(corpus)
    assert [(r.reco_id, r.subset, r.audio.suffix) for r in recs] == [
        ("hu00", "training", ".sph"), ("hu01", "dev", ".wav"), ("hu02", "training", ".sph"),
        ("hu03", "dev", ".wav")]
    (corpus / "dev" / "audio" / "hu03.wav").unlink()
    with pytest.raises(MissingDataError, match=r"no audio hu03\.sph or hu03\.wav"):
        find_recordings(corpus)
    with pytest.raises(MissingDataError, match="no transcripts found"):
        find_recordings(corpus / "training" / "audio")


def test_paper_split_is_10_10_80_and_seeded(tmp_path: Path) -> None:
    corpus, _ = make_corpus(tmp_path, n=20)
    recs = find_recordings(corpus)
    split = split_recordings(recs, "paper", seed=1)
    sizes = {k: len(v) for k, v in split.items()}
    assert sizes == {"train": 16, "dev": 2, "test": 2}
    ids = [r.reco_id for v in split.values() for r in v]
    assert sorted(ids) == [r.reco_id for r in recs]
    assert split == split_recordings(recs, "paper", seed=1)
    assert split != split_recordings(recs, "paper", seed=2)
    with pytest.raises(MissingDataError, match="needs 3 or more"):
        split_recordings(recs[:2], "paper")


def test_prepare_with_punctuated_copy(tmp_path: Path) -> None:
    corpus, punct = make_corpus(tmp_path)
    data = tmp_path / "data"
    assert prepare_babel_hu.main(["--corpus-dir", str(corpus), "--punct-dir", str(punct),
                                  "--data-dir", str(data)]) == 0
    prep = json.loads((data / "prep.json").read_text(encoding="utf-8"))
    assert {k: v["recordings"] for k, v in prep["sets"].items()} == \
        {"train": 8, "dev": 1, "test": 1}
    train = data / "train"
    segments = read_kv(train / "segments")
    assert segments["hu00_00000500"] == "hu00 0.500 1.500"
    assert segments["hu00_00001700"] == "hu00 1.700 2.900"
    assert len(segments) == 16  # the <no-speech> and <breath> segments are no utterances
    assert read_kv(train / "text")["hu00_00000500"] == "Első mondat 0, vessző után."
    wavs = read_kv(train / "wav.scp")
    assert wavs["hu00"].endswith("hu00.sph") and wavs["hu01"].endswith("hu01.wav")
    assert set(read_kv(train / "utt2lang").values()) == {"hu"}
    rows = read_word_table(train / "words.tsv")["hu00_00001700"]
    assert [(r.word, r.punct) for r in rows] == [
        ("második", ()), ("mondat", ("COLON",)), ("kérdés", ("QUESTION",))]
    paper = get_label_set("moro2_paper")
    assert [paper.map(r.punct) for r in rows] == [(), ("PERIOD",), ("PERIOD",)]
    assert get_label_set("moro2").map(("COLON",)) == ("COMMA",)
    assert paper.map(("QUOTE",)) == ("COMMA",) and paper.map(("OPEN_QUOTE",)) == ()
    assert prep["sets"]["train"]["marked_words"] == 8 * 4  # comma, period, colon, question


def test_prepare_reads_punctuated_transcripts_and_pack_split(tmp_path: Path) -> None:
    corpus, _ = make_corpus(tmp_path, n=6, punctuated=True,
                            subsets=("training", "training", "dev", "training", "eval",
                                     "training"))
    data = tmp_path / "data"
    assert prepare_babel_hu.main(["--corpus-dir", str(corpus), "--data-dir", str(data),
                                  "--split", "pack"]) == 0
    assert sorted(read_kv(data / "dev" / "wav.scp")) == ["hu02"]
    assert sorted(read_kv(data / "test" / "wav.scp")) == ["hu04"]
    assert sorted(read_kv(data / "train" / "wav.scp")) == ["hu00", "hu01", "hu03", "hu05"]


def test_prepare_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus, punct = make_corpus(tmp_path)
    data = tmp_path / "data"
    # unpunctuated transcripts and no punctuated copy: exit 2, says what to give
    assert prepare_babel_hu.main(["--corpus-dir", str(corpus), "--data-dir", str(data)]) == 2
    assert "BABEL_HU_PUNCT" in capsys.readouterr().err
    # a punctuated copy whose words differ: file and line
    bad = punct / "training" / "transcription" / "hu03.txt"
    bad.write_text(bad.read_text(encoding="utf-8").replace("Második", "Harmadik"),
                   encoding="utf-8")
    assert prepare_babel_hu.main(["--corpus-dir", str(corpus), "--punct-dir", str(punct),
                                  "--data-dir", str(data)]) == 1
    assert f"{bad}:8: words differ from" in capsys.readouterr().err
    bad.write_text(bad.read_text(encoding="utf-8").replace("[1.700]", "[1.750]"),
                   encoding="utf-8")
    assert prepare_babel_hu.main(["--corpus-dir", str(corpus), "--punct-dir", str(punct),
                                  "--data-dir", str(data)]) == 1
    assert f"{bad}:6: segment [1.5]-[1.75] differs" in capsys.readouterr().err
    # a segment past the end of its audio
    corpus2, punct2 = make_corpus(tmp_path / "b")
    late = punct2 / "training" / "transcription" / "hu05.txt"
    for root in (corpus2, punct2):
        f = root / "training" / "transcription" / "hu05.txt"
        f.write_text(f.read_text(encoding="utf-8").replace("[2.900]", "[3.500]"),
                     encoding="utf-8")
    assert prepare_babel_hu.main(["--corpus-dir", str(corpus2), "--punct-dir", str(punct2),
                                  "--data-dir", str(data)]) == 1
    assert f"{late}:8: segment ends at 3.5 s, after the end of" in capsys.readouterr().err


def test_stage0_without_the_corpus_exits_2(tmp_path: Path) -> None:
    env = dict(os.environ, BABEL_HU="", BABEL_HU_PUNCT="")
    proc = subprocess.run(["bash", str(ROOT / "local" / "babel_hu" / "download.sh"),
                           str(tmp_path / "downloads")], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert "BABEL_HU" in proc.stderr and "conf/db.sh" in proc.stderr
    assert "ELRA" in proc.stderr
    env["BABEL_HU"] = str(tmp_path / "nowhere")
    proc = subprocess.run(["bash", str(ROOT / "local" / "babel_hu" / "download.sh"),
                           str(tmp_path / "downloads")], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    proc = subprocess.run(["bash", str(ROOT / "local" / "babel_hu" / "prepare.sh"),
                           str(tmp_path / "downloads"), str(tmp_path / "data")], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "run stage 0" in proc.stderr


def test_markers_inside_speech_segments(tmp_path: Path) -> None:
    corpus, punct = make_corpus(tmp_path)
    for root, text in ((corpus, "második <hes> mondat (()) ~ kérdés <breath>"),
                       (punct, "Második <hes> mondat: (()) ~ kérdés? <breath>")):
        f = root / "training" / "transcription" / "hu00.txt"
        lines = f.read_text(encoding="utf-8").splitlines()
        lines[7] = text
        f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    data = tmp_path / "data"
    assert prepare_babel_hu.main(["--corpus-dir", str(corpus), "--punct-dir", str(punct),
                                  "--data-dir", str(data)]) == 0
    rows = read_word_table(data / "train" / "words.tsv")["hu00_00001700"]
    assert [(r.word, r.punct) for r in rows] == [
        ("második", ()), ("mondat", ("COLON",)), ("(())", ()), ("kérdés", ("QUESTION",))]
    assert read_kv(data / "train" / "text")["hu00_00001700"] == "Második mondat: (()) kérdés?"
    assert read_kv(data / "train" / "text.orig")["hu00_00001700"] == \
        "Második <hes> mondat: (()) ~ kérdés? <breath>"


def test_prepare_takes_another_nonspeech_map(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    corpus, punct = make_corpus(tmp_path, n=3)
    for root in (corpus, punct):
        f = root / "training" / "transcription" / "hu01.txt"
        f.write_text(f.read_text(encoding="utf-8").replace("<breath>", "<sigh>"),
                     encoding="utf-8")
    args = ["--corpus-dir", str(corpus), "--punct-dir", str(punct),
            "--data-dir", str(tmp_path / "data")]
    assert prepare_babel_hu.main(args) == 1  # the babel map does not name <sigh>
    assert "hu01.txt:6: unknown transcription marker '<sigh>'" in capsys.readouterr().err
    own = write(tmp_path / "own.yaml",
                "name: own\nnonspeech: ['<no-speech>', '<breath>', '<sigh>']\n")
    assert prepare_babel_hu.main([*args, "--nonspeech", str(own)]) == 0
    assert (tmp_path / "data" / "test" / "words.tsv").is_file()
