"""``punct.bin.compare_aligners``: datasets, rows, choice, outputs, memory probe."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from punct.align.auto import read_table
from punct.bin import compare_aligners
from punct.bin.compare_aligners import choose
from punct.wordtable import rows_from_text, write_word_table

RATE = 16000
# word (start, end) in seconds; a 0.4 s pause after "two"
WORDS = [("one", 0.2, 0.5), ("two", 0.6, 0.9), ("three", 1.3, 1.7), ("four", 1.8, 2.1)]


def _recipe(tmp_path: Path) -> Path:
    """data/test with two English utterances (noise bursts where the words are) + refs."""
    root = tmp_path / "recipe"
    data, ref, wav_dir = root / "data" / "test", root / "ref", root / "wav"
    for d in (data, ref, wav_dir):
        d.mkdir(parents=True)
    rng = np.random.default_rng(0)
    table, scp = {}, []
    for utt in ("en-a", "en-b"):
        x = np.zeros(round(2.4 * RATE), dtype=np.float32)
        for _, s, e in WORDS:
            x[round(s * RATE): round(e * RATE)] = rng.standard_normal(round((e - s) * RATE)) * 0.2
        sf.write(wav_dir / f"{utt}.wav", x, RATE, subtype="PCM_16")
        scp.append(f"{utt} {wav_dir / f'{utt}.wav'}\n")
        table[utt] = rows_from_text(utt, " ".join(w for w, _, _ in WORDS))
        (ref / f"{utt}.ctm").write_text(
            "".join(f"{utt} 1 {s:.3f} {e - s:.3f} {w}\n" for w, s, e in WORDS), encoding="utf-8")
    (data / "wav.scp").write_text("".join(scp), encoding="utf-8")
    (data / "utt2lang").write_text("en-a en\nen-b en\n", encoding="utf-8")
    write_word_table(data / "words.tsv", table)
    return root


def test_compare_writes_tables_and_choice(tmp_path: Path) -> None:
    root = _recipe(tmp_path)
    out = tmp_path / "results"
    table = tmp_path / "align.yaml"
    code = compare_aligners.main([
        "--aligners", "reference", "vad", "--sets", "test",
        "--data-root", str(root / "data"), "--reference-dir", str(root / "ref"),
        "--out-dir", str(out), "--long-seconds", "5", "--write-table", str(table)])
    assert code == 0
    report = json.loads((out / "aligners.json").read_text(encoding="utf-8"))
    rows = {r["aligner"]: r for r in report["rows"]}
    ref = rows["reference"]
    assert (ref["dataset"], ref["lang"], ref["utterances"], ref["failed"]) == ("mini-test", "en",
                                                                               2, 0)
    assert (ref["median_ms"], ref["p90_ms"], ref["pause_f1"], ref["pause_ref"]) == (0.0, 0.0,
                                                                                   1.0, 2)
    assert rows["vad"]["aligned"] == 2
    assert report["choice"]["en"]["aligner"] == "reference"
    assert read_table(table) == (("dtw",), {"en": ("reference", "dtw")})
    memory = {m["aligner"]: m for m in report["memory"]}
    assert memory["vad"]["aligned"] is True
    # utterances concatenated until >= 5 s: 2 x (2.4 s + a 0.5 s gap), 2 x 4 words
    assert (memory["vad"]["audio_s"], memory["vad"]["words"]) == (5.8, 8)
    assert memory["vad"]["peak_rss_mb"] >= memory["vad"]["rss_before_mb"] > 0
    md = (out / "aligners.md").read_text(encoding="utf-8")
    assert "| mini-test | en | reference | 2 | 2 | 0 | 0.0 | 0.0 |" in md
    assert (out / "aligners.csv").read_text(encoding="utf-8").startswith("dataset,lang,aligner")


def test_choice_prefers_real_speech_and_skips_failures() -> None:
    def row(dataset: str, aligner: str, f1: float, median: float, real: bool = False,
            failed: int = 0, lang: str = "en") -> dict:
        return {"dataset": dataset, "lang": lang, "aligner": aligner, "real_speech": real,
                "failed": failed, "pause_f1": f1, "median_ms": median}

    rows = [row("mini-test", "dtw", 0.98, 5.0), row("mini-test", "pocketsphinx", 0.85, 10.0),
            row("mfa", "dtw", 0.70, 30.0, real=True),
            row("mfa", "pocketsphinx", 0.76, 10.0, real=True),
            row("mfa", "vad", 0.99, 300.0, real=True, failed=1),
            row("mini-test", "dtw", 0.90, 5.0, lang="hu"),
            row("mini-test", "vad", 0.90, 4.0, lang="hu"),  # same F1: lower median wins
            row("mini-test", "dtw", 0.90, 5.0, lang="all")]
    got = {lang: c["aligner"] for lang, c in choose(rows).items()}
    assert got == {"en": "pocketsphinx", "hu": "vad"}


def test_missing_reference_dir_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    root = _recipe(tmp_path)
    code = compare_aligners.main(["--sets", "test", "--data-root", str(root / "data"),
                                  "--reference-dir", str(tmp_path / "nope"),
                                  "--out-dir", str(tmp_path / "o")])
    assert code == 2
    assert "reference timings directory not found" in capsys.readouterr().err
