"""The simulated ASR condition (punct.data.asr_simulation) and the ASR penalty table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.trainset import make_set

from punct.bin import asr_penalty as penalty_cli
from punct.bin import score as score_cli
from punct.bin import simulate_asr
from punct.data.asr_simulation import noise_options, simulate_asr_set
from punct.errors import PunctInputError
from punct.kaldi import write_kv
from punct.wordtable import read_word_table, write_word_table


@pytest.fixture(scope="module")
def sets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("asrsim")
    make_set(root / "train", 200, 1)
    make_set(root / "dev", 400, 2)
    table = read_word_table(root / "dev" / "words.tsv")
    write_kv(root / "dev" / "utt2lang", {u: "en" for u in table})
    return root


def test_noise_model_rates() -> None:
    opts = noise_options(0.2)
    assert (opts.sub_rate, opts.del_rate, opts.ins_rate) == pytest.approx((0.12, 0.05, 0.03))
    with pytest.raises(PunctInputError, match="outside"):
        noise_options(0.0)
    with pytest.raises(PunctInputError, match="summing to 1"):
        noise_options(0.2, (0.5, 0.2, 0.2))


def test_simulated_set_hits_the_target_wer_and_projects_labels(sets: Path) -> None:
    out = sets / "dev_sim"
    summary = simulate_asr_set(sets / "dev", sets / "train", out, 0.2, seed=1,
                               source="frequent")
    # a substitute never equals its word, so only edits that meet lower the WER
    assert 0.17 <= float(summary["wer"]) <= 0.21
    assert summary["sub"] > summary["del"] > summary["ins"] > 0
    ref = read_word_table(sets / "dev" / "words.tsv")
    assert read_word_table(out / "ref_words.tsv") == ref
    hyp = read_word_table(out / "words.tsv")
    assert list(hyp) == list(ref)
    # every utterance keeps its final mark (a deleted last word's mark moves back)
    assert all(rows[-1].punct for rows in hyp.values())
    assert json.loads((out / "asr.json").read_text())["wer"] == summary["wer"]
    again = simulate_asr_set(sets / "dev", sets / "train", sets / "dev_sim2", 0.2, seed=1,
                             source="frequent")
    assert again == summary and read_word_table(sets / "dev_sim2" / "words.tsv") == hyp
    other = simulate_asr_set(sets / "dev", sets / "train", sets / "dev_sim3", 0.2, seed=2,
                             source="frequent")
    assert read_word_table(sets / "dev_sim3" / "words.tsv") != hyp and other["wer"]


def test_command_and_penalty_table(sets: Path, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "dev_asrsim"
    assert simulate_asr.main(["--data-dir", str(sets / "dev"), "--train-dir", str(sets / "train"),
                              "--out-dir", str(out), "--wer", "0.3", "--substitutes",
                              "frequent"]) == 0
    assert "target 30.0%" in capsys.readouterr().out
    assert simulate_asr.main(["--data-dir", str(sets / "dev"), "--train-dir", str(sets / "train"),
                              "--out-dir", str(out), "--shares", "a,b,c"]) == 1
    # a "system" that outputs the reference labels: perfect on dev, worse on the ASR words
    exp = tmp_path / "exp" / "oracle"
    for name, ref, hyp in (("dev", sets / "dev" / "words.tsv", sets / "dev" / "words.tsv"),
                           ("dev_asrsim", out / "ref_words.tsv", out / "words.tsv")):
        decode = exp / f"decode_{name}"
        decode.mkdir(parents=True)
        write_word_table(decode / "words.tsv", read_word_table(hyp))
        assert score_cli.main(["--ref", str(ref), "--hyp", str(decode / "words.tsv"),
                               "--utt2lang", str(sets / "dev" / "utt2lang"),
                               "--system", "oracle", "--test-set", name,
                               "--out", str(decode / "scores.json")]) == 0
    rows_json = tmp_path / "penalty.json"
    assert penalty_cli.main(["--exp-dir", str(tmp_path / "exp"), "--pair", "dev:dev_asrsim",
                             "--system", "oracle", "--system", "missing",
                             "--json", str(rows_json)]) == 0
    err = capsys.readouterr().err
    assert "missing: no scores on both dev and dev_asrsim" in err
    row = json.loads(rows_json.read_text())["oracle (dev_asrsim)"]
    assert row["ref_micro_f1"] == 100.0 and row["asr_micro_f1"] < 100.0
    assert row["micro_penalty"] == pytest.approx(100.0 - row["asr_micro_f1"], abs=0.05)
    wer = json.loads((out / "asr.json").read_text())["wer"]
    assert row["wer"] == pytest.approx(100 * wer, abs=0.05)
    assert penalty_cli.main(["--exp-dir", str(tmp_path), "--pair", "dev", "--system", "x"]) == 1
