"""Reading a text data dir aloud with eSpeak NG (punct.synth.render_set) and decoding it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import soundfile as sf

from punct.align.asr_condition import build_asr_set
from punct.asr.pocketsphinx_asr import PocketsphinxRecognizer
from punct.bin import render_set as render_cli
from punct.kaldi import read_kv, read_wav_scp
from punct.synth.render_set import (
    DEFAULT_RATES,
    DEFAULT_VOICES,
    choose_setting,
    render_set,
    select_utterances,
    spoken_pieces,
)
from punct.wordtable import WordRow, read_word_table, render_rows, write_word_table


def rows_of(utt: str, text: str) -> list[WordRow]:
    """IWSLT-style rows: lower-case tokens, a token's marks after it (``did n't ,``)."""
    rows: list[WordRow] = []
    marks = {",": "COMMA", ".": "PERIOD", "?": "QUESTION"}
    for token in text.split():
        if token in marks:
            last = rows[-1]
            rows[-1] = WordRow(utt, last.idx, last.word, last.form, (marks[token],), "O")
        else:
            rows.append(WordRow(utt, len(rows), token, token, (), "O"))
    return rows


TEXTS = {
    "utt1": "i did n't know it . it 's fine , he said .",
    "utt2": "where are you going ?",
    "utt3": "we 're home .",
}


def make_data_dir(root: Path, texts: dict[str, str] = TEXTS) -> Path:
    data = root / "data"
    write_word_table(data / "words.tsv", {u: rows_of(u, t) for u, t in texts.items()})
    (data / "utt2lang").write_text("".join(f"{u} en\n" for u in texts), encoding="utf-8")
    (data / "score_label_set").write_text("iwslt4\n", encoding="utf-8")
    (data / "mid_stream").write_text("blocks\n", encoding="utf-8")
    return data


def test_clitics_join_their_word_and_sentences_start_upper_case() -> None:
    pieces = spoken_pieces(rows_of("u", TEXTS["utt1"]))
    assert [p.text for p in pieces] == ["I didn't know it.", "It's fine, he said."]
    assert [(p.end_mark, p.words) for p in pieces] == [(".", 4), (".", 4)]
    assert spoken_pieces(rows_of("u", "we 're here , i 've seen ca n't"))[0].text == (
        "We're here, I've seen can't")


def test_long_sentences_are_cut_after_a_mark_or_at_twice_the_piece() -> None:
    words = [f"w{i}" for i in range(50)]
    words.insert(15, ",")  # a comma after the 15th word
    pieces = spoken_pieces(rows_of("u", " ".join(words)), piece_words=10)
    assert [p.words for p in pieces] == [15, 20, 15]
    assert [p.end_mark for p in pieces] == [",", "", ""]


def test_voice_and_rate_depend_on_seed_and_utterance_only() -> None:
    utts = [f"dev2012-{i:04d}" for i in range(40)]
    first = [choose_setting(u, 1) for u in utts]
    assert first == [choose_setting(u, 1) for u in reversed(utts)][::-1]
    assert {s.voice for s in first} == set(DEFAULT_VOICES)
    assert all(DEFAULT_RATES[0] <= s.rate <= DEFAULT_RATES[1] for s in first)
    assert len({s.rate for s in first}) > 10
    assert first != [choose_setting(u, 2) for u in utts]


def test_max_words_takes_whole_utterances_in_order() -> None:
    table = {u: rows_of(u, t) for u, t in TEXTS.items()}  # 10, 4 and 3 words
    assert select_utterances(table, 5) == ["utt1"]
    assert select_utterances(table, 10) == ["utt1"]
    assert select_utterances(table, 11) == ["utt1", "utt2"]
    assert select_utterances(table, 14) == ["utt1", "utt2"]
    assert select_utterances(table, 15) == list(TEXTS)
    assert select_utterances(table, None) == list(TEXTS)


def test_render_writes_a_data_dir_with_16k_audio_and_resumes(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path)
    out = tmp_path / "tts"
    summary = render_set(data, out, seed=3, max_words=12)
    assert summary["utterances"] == 2 and summary["rendered"] == 2 and summary["words"] == 14
    assert sorted(read_wav_scp(out / "wav.scp")) == ["utt1", "utt2"]
    for utt in ("utt1", "utt2"):
        info = sf.info(out / "wav" / f"{utt}.wav")
        assert (info.samplerate, info.channels, info.subtype) == (16000, 1, "PCM_16")
        assert 0.5 < info.duration < 6.0
    assert not list((out / "wav").glob(".*"))  # no temporary file left
    assert read_kv(out / "utt2lang") == {"utt1": "en", "utt2": "en"}
    assert read_kv(out / "utt2spk") == {"utt1": "utt1", "utt2": "utt2"}
    assert (out / "score_label_set").read_text() == "iwslt4\n"
    assert (out / "mid_stream").read_text() == "blocks\n"  # the set's markers carried over
    ref, table = read_word_table(data / "words.tsv"), read_word_table(out / "words.tsv")
    assert table == {u: ref[u] for u in ("utt1", "utt2")}
    assert read_kv(out / "text")["utt1"] == render_rows(ref["utt1"])
    style = json.loads((out / "style.json").read_text())
    assert style["seed"] == 3 and list(style["utterances"]) == ["utt1", "utt2"]
    for utt, entry in style["utterances"].items():
        setting = choose_setting(utt, 3)
        assert (entry["voice"], entry["rate"]) == (setting.voice, setting.rate)
        assert entry["seconds"] == pytest.approx(sf.info(out / "wav" / f"{utt}.wav").duration,
                                                 abs=1e-3)

    mtime = (out / "wav" / "utt1.wav").stat().st_mtime_ns
    (out / "wav" / "utt2.wav").unlink()
    again = render_set(data, out, seed=3, max_words=12)
    assert (again["rendered"], again["skipped"]) == (1, 1)
    assert (out / "wav" / "utt1.wav").stat().st_mtime_ns == mtime
    assert render_set(data, out, seed=3, max_words=12)["rendered"] == 0


def test_cli_renders_the_first_words(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                     ) -> None:
    data = make_data_dir(tmp_path)
    out = tmp_path / "tts"
    assert render_cli.main(["--data-dir", str(data), "--out-dir", str(out), "--max-words",
                            "5", "--voices", "en-us+f2", "--quiet"]) == 0
    assert "1 utterances, 10 words" in capsys.readouterr().out
    assert list(read_wav_scp(out / "wav.scp")) == ["utt1"]
    assert json.loads((out / "style.json").read_text())["utterances"]["utt1"]["voice"] == (
        "en-us+f2")
    assert render_cli.main(["--data-dir", str(data), "--out-dir", str(tmp_path / "bad"),
                            "--voices", "xx-novoice", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"{data / 'words.tsv'}: eSpeak could not read utterance utt1 with voice " \
           "'xx-novoice'" in err and "Traceback" not in err


def test_rendered_speech_decodes_with_pocketsphinx(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path, {"hello": "hello world . this is a test ."})
    render_set(data, tmp_path / "tts", seed=1, voices=("en-us+f2",), rates=(150, 150))
    summary = build_asr_set(tmp_path / "tts", tmp_path / "tts_asr", PocketsphinxRecognizer())
    assert summary["utterances"] == 1 and summary["ref_words"] == 6
    assert isinstance(summary["wer"], float) and 0.0 <= summary["wer"] <= 1.0
    hyp = read_word_table(tmp_path / "tts_asr" / "words.tsv")
    ref = read_word_table(tmp_path / "tts_asr" / "ref_words.tsv")
    assert list(hyp) == list(ref) == ["hello"]
    assert ref["hello"] == read_word_table(data / "words.tsv")["hello"]
    assert len(hyp["hello"]) == summary["hyp_words"]
    assert summary["hyp_words"] == 6 - summary["del"] + summary["ins"]
