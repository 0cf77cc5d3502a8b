"""Stage 1 of the mini recipe: data dirs from synthesised utterances."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import soundfile as sf

from punct.bin.prepare_mini import main
from punct.kaldi import read_kv, validate_data_dir
from punct.wordtable import read_word_table

UTTS = [
    ("en1-en_a01", "en1", "en", "train", "Hello, world. How are you?"),
    ("es2-es_b01", "es2", "es", "train", "—¿Vienes? —preguntó Ane."),
    ("eu1-eu_c01", "eu1", "eu", "dev", "Kaixo, EHU!"),
    ("hu1-hu_d01", "hu1", "hu", "test", "„Jó reggelt” – mondta Kovács úr."),
]


def fake_synth(root: Path) -> Path:
    for utt, spk, lang, split, text in UTTS:
        (root / "wav").mkdir(parents=True, exist_ok=True)
        (root / "meta").mkdir(parents=True, exist_ok=True)
        sf.write(root / "wav" / f"{utt}.wav", np.zeros(1600, dtype=np.int16), 16000)
        meta = {"utt_id": utt, "spk": spk, "lang": lang, "split": split, "text": text,
                "duration": 0.1}
        (root / "meta" / f"{utt}.json").write_text(json.dumps(meta), encoding="utf-8")
    return root


def test_prepare_writes_valid_sorted_data_dirs(tmp_path: Path) -> None:
    synth = fake_synth(tmp_path / "synth")
    assert main(["--synth-dir", str(synth), "--data-dir", str(tmp_path / "data")]) == 0
    train = tmp_path / "data" / "train"
    assert validate_data_dir(train, need_audio=True)["utterances"] == 2
    assert read_kv(train / "utt2lang") == {"en1-en_a01": "en", "es2-es_b01": "es"}
    assert read_kv(train / "text")["es2-es_b01"] == "—¿Vienes? —preguntó Ane."
    rows = read_word_table(train / "words.tsv")["es2-es_b01"]
    assert [(r.word, r.punct) for r in rows] == [
        ("vienes", ("OPEN_DASH", "OPEN_QUES", "QUESTION")),
        ("preguntó", ("OPEN_DASH",)),
        ("ane", ("PERIOD",)),
    ]
    assert read_kv(tmp_path / "data" / "test" / "segments") == {
        "hu1-hu_d01": "hu1-hu_d01 0.000 0.100"}


def test_missing_wav_exits_2_naming_the_utterance(tmp_path: Path, capsys) -> None:
    synth = fake_synth(tmp_path / "synth")
    (synth / "wav" / "eu1-eu_c01.wav").unlink()
    assert main(["--synth-dir", str(synth), "--data-dir", str(tmp_path / "data")]) == 2
    err = capsys.readouterr().err
    assert "eu1-eu_c01.json" in err and "missing audio" in err


def test_unknown_mark_exits_1_naming_the_file(tmp_path: Path, capsys) -> None:
    synth = fake_synth(tmp_path / "synth")
    meta_path = synth / "meta" / "en1-en_a01.json"
    meta = json.loads(meta_path.read_text())
    meta["text"] = "Hello (world)."
    meta_path.write_text(json.dumps(meta))
    assert main(["--synth-dir", str(synth), "--data-dir", str(tmp_path / "data")]) == 1
    err = capsys.readouterr().err
    assert "en1-en_a01.json" in err and "unknown punctuation mark '('" in err
