"""The ASR condition of a test set (punct.align.asr_condition, punct.bin.recognize)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile

from punct.align.asr_condition import build_asr_set, decode_job
from punct.data.timed import END_OF_DOCUMENT_PAUSE, TimedWord
from punct.errors import MissingDataError
from punct.kaldi import read_kv, write_kv
from punct.wordtable import WordRow, read_word_table, write_word_table

REF = {
    "en-a": [("hello", "Hello", (), "FIRST_CAP"), ("mr", "Mr", (), "FIRST_CAP"),
             ("smith", "Smith", ("COMMA",), "FIRST_CAP"), ("how", "how", (), "O"),
             ("are", "are", (), "O"), ("you", "you", ("QUESTION",), "O")],
    "en-b": [("it", "It", (), "FIRST_CAP"), ("rains", "rains", ("PERIOD",), "O")],
    "es-c": [("hola", "Hola", ("PERIOD",), "FIRST_CAP")],
}
#: what the stand-in recogniser "hears": "mr" deleted, "are" -> "art", "well" inserted
HEARD = {
    "en-a": [("hello", 0.1, 0.4), ("smith", 0.5, 0.9), ("how", 1.3, 1.5), ("art", 1.5, 1.7),
             ("you", 1.7, 1.9)],
    "en-b": [("well", 0.1, 0.2), ("it", 0.3, 0.4), ("rains", 0.4, 0.8)],
}


class StandIn:
    """A recogniser that returns HEARD for each utterance and counts its calls."""

    name = "standin"
    language = "en"

    def __init__(self) -> None:
        self.calls: list[str] = []

    def transcribe(self, samples: np.ndarray, rate: int, name: str = "audio") -> list[TimedWord]:
        utt = name.removeprefix("utterance ")
        self.calls.append(utt)
        assert rate == 16000 and len(samples) == 16000 * 2
        return [TimedWord(*w) for w in HEARD[utt]]


def make_set(path: Path) -> Path:
    path.mkdir(parents=True)
    rows = {u: [WordRow(u, i, *r) for i, r in enumerate(ws)] for u, ws in REF.items()}
    write_word_table(path / "words.tsv", rows)
    wavs = {}
    for utt in REF:
        wav = path / f"{utt}.wav"
        soundfile.write(str(wav), np.zeros(32000, np.float32), 16000)
        wavs[utt] = str(wav)
    write_kv(path / "wav.scp", wavs)
    write_kv(path / "utt2lang", {u: u[:2] for u in REF})
    write_kv(path / "utt2spk", {u: u for u in REF})
    return path


def test_asr_set_has_recognised_words_projected_labels_and_the_reference(tmp_path: Path) -> None:
    data = make_set(tmp_path / "test")
    summary = build_asr_set(data, tmp_path / "test_asr", StandIn())
    out = tmp_path / "test_asr"
    table = read_word_table(out / "words.tsv")
    assert list(table) == ["en-a", "en-b"]  # Spanish is not the recogniser's language
    a = table["en-a"]
    assert [r.word for r in a] == ["hello", "smith", "how", "art", "you"]
    assert [r.punct for r in a] == [(), ("COMMA",), (), (), ("QUESTION",)]
    assert [r.cap for r in a] == ["FIRST_CAP", "FIRST_CAP", "O", "O", "O"]
    # pauses from the recogniser's times by the one pause formula
    assert [r.pause_after for r in a] == [0.1, 0.4, 0.0, 0.0, END_OF_DOCUMENT_PAUSE]
    b = table["en-b"]
    assert [(r.word, r.punct, r.cap) for r in b] == [
        ("well", (), "O"), ("it", (), "FIRST_CAP"), ("rains", ("PERIOD",), "O")]
    ref = read_word_table(out / "ref_words.tsv")
    assert list(ref) == ["en-a", "en-b"] and [r.word for r in ref["en-a"]][1] == "mr"
    assert summary["wer"] == pytest.approx(3 / 8)
    assert (summary["sub"], summary["del"], summary["ins"]) == (1, 1, 1)
    assert summary["audio_seconds"] == 4.0 and summary["utterances"] == 2
    assert json.loads((out / "asr.json").read_text())["wer"] == summary["wer"]
    assert set(read_kv(out / "wav.scp")) == {"en-a", "en-b"}
    assert read_kv(out / "utt2lang") == {"en-a": "en", "en-b": "en"}
    assert read_kv(out / "text")["en-b"] == "well It rains."
    ctm = (out / "hyp.ctm").read_text().splitlines()
    assert ctm[0] == "en-a 1 0.100 0.300 hello" and len(ctm) == 8


def test_interrupted_decoding_resumes(tmp_path: Path) -> None:
    data = make_set(tmp_path / "test")
    out = tmp_path / "test_asr"
    first = StandIn()
    build_asr_set(data, out, first)
    whole = read_word_table(out / "words.tsv")
    partial = out / "hyp.ctm.partial"
    lines = partial.read_text().splitlines()
    # as if killed while writing the second utterance
    partial.write_text(lines[0] + "\n" + lines[1][:20])
    again = StandIn()
    build_asr_set(data, out, again)
    assert again.calls == ["en-b"]
    assert read_word_table(out / "words.tsv") == whole
    assert (out / "hyp.ctm").read_text().count("\n") == 8
    assert partial.read_text().count("\n") == 2  # the torn line was cut off
    third = StandIn()
    build_asr_set(data, out, third)
    assert third.calls == []


def test_no_utterance_in_the_recognisers_language(tmp_path: Path) -> None:
    data = make_set(tmp_path / "test")
    write_kv(data / "utt2lang", {u: "hu" for u in REF})
    with pytest.raises(MissingDataError, match="no utterance in language 'en'"):
        build_asr_set(data, tmp_path / "out", StandIn())


def test_recognize_command_with_a_ctc_model(tmp_path: Path) -> None:
    from helpers.tiny_ctc import build_tiny_ctc

    from punct.bin import recognize

    data = make_set(tmp_path / "test")
    model = build_tiny_ctc(tmp_path / "ctc")
    out = tmp_path / "test_asr"
    assert recognize.main(["--data-dir", str(data), "--out-dir", str(out), "--asr", "ctc",
                           "--asr-model", str(model), "--language", "en", "--quiet"]) == 0
    summary = json.loads((out / "asr.json").read_text())
    assert summary["recognizer"] == "ctc" and summary["language"] == "en"
    assert summary["utterances"] == 2
    assert sorted(read_kv(out / "utt2lang")) == ["en-a", "en-b"]
    assert sorted(read_word_table(out / "ref_words.tsv")) == ["en-a", "en-b"]


class Stateful(StandIn):
    """A stand-in whose words depend on the audio it has seen before, as PocketSphinx's
    live cepstral mean does; ``replay`` moves that state on without decoding."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = 0
        self.replayed: list[str] = []

    def transcribe(self, samples: np.ndarray, rate: int, name: str = "audio") -> list[TimedWord]:
        words = super().transcribe(samples, rate, name)
        self.seen += 1
        return [TimedWord(f"{w.word}{self.seen}", w.start, w.end) for w in words]

    def replay(self, samples: np.ndarray, rate: int, name: str = "audio") -> None:
        self.replayed.append(name.removeprefix("utterance "))
        self.seen += 1


def test_jobs_and_merge_give_the_one_process_set(tmp_path: Path) -> None:
    from punct.bin import recognize

    data = make_set(tmp_path / "test")
    write_kv(data / "utt2lang", {"en-a": "en", "en-b": "en", "es-c": "en"})
    HEARD["es-c"] = [("hola", 0.1, 0.5)]
    try:
        whole = build_asr_set(data, tmp_path / "one", Stateful(), "default")
        out = tmp_path / "jobs"
        jobs = [Stateful(), Stateful()]
        for job, rec in enumerate(jobs, start=1):
            assert decode_job(data, out, rec, job, 2) == (2 if job == 1 else 1)
        assert decode_job(data, out, Stateful(), 1, 2) == -1  # done already
        # split2: job 1 = en-a, es-c; job 2 = en-b (replayed by job 1, en-a by job 2)
        assert [r.calls for r in jobs] == [["en-a", "es-c"], ["en-b"]]
        assert [r.replayed for r in jobs] == [["en-b"], ["en-a"]]
        assert recognize.main(["--data-dir", str(data), "--out-dir", str(out), "--asr",
                               "pocketsphinx", "--merge", "--num-jobs", "2", "--quiet"]) == 0
    finally:
        del HEARD["es-c"]
    for name in ("hyp.ctm", "words.tsv", "ref_words.tsv", "text", "wav.scp", "utt2spk"):
        assert (out / name).read_bytes() == (tmp_path / "one" / name).read_bytes(), name
    merged = json.loads((out / "asr.json").read_text())
    assert merged["recognizer"] == "pocketsphinx" and merged["language"] == "en"
    assert merged["wer"] == whole["wer"] and merged["audio_seconds"] == 6.0
    assert recognize.main(["--data-dir", str(data), "--out-dir", str(tmp_path / "none"),
                           "--merge", "--num-jobs", "2"]) == 2  # no job has run there


def test_a_resumed_run_replays_what_it_skips(tmp_path: Path) -> None:
    data = make_set(tmp_path / "test")
    out = tmp_path / "test_asr"
    build_asr_set(data, out, Stateful())
    whole = (out / "hyp.ctm").read_text()
    partial = out / "hyp.ctm.partial"
    partial.write_text(partial.read_text().splitlines()[0] + "\n")
    again = Stateful()
    build_asr_set(data, out, again)
    assert again.calls == ["en-b"] and again.replayed == ["en-a"]
    assert (out / "hyp.ctm").read_text() == whole
