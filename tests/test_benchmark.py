"""The HF pipeline adapter (same weights, same decisions) and the speed benchmark script."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers.tiny import save_untrained
from helpers.tinybert import build_tiny_bert

from punct.bin import benchmark as bench_cli
from punct.data.sequences import table_to_seqs
from punct.engine.decode import decide, keep_best_mark, load_experiment, predict_words
from punct.engine.hf_adapter import (
    find_encoder,
    make_pipeline,
    pair_labels,
    pair_logits,
    pipeline_decode,
    word_start_table,
)
from punct.labels import get_label_set
from punct.wordtable import WordRow, write_word_table

IWSLT = get_label_set("iwslt4")
VOCAB = ("hello", "world", "what", "is", "it", "yes", "no")


def _utts(n: int, length: int, seed: int) -> dict[str, list[WordRow]]:
    rng = np.random.default_rng(seed)
    utts = {}
    for u in range(n):
        words = [VOCAB[k] for k in rng.integers(0, len(VOCAB), length)]
        utts[f"u{u}"] = [WordRow(f"u{u}", i, w, w, ("PERIOD",) if i == length - 1 else (),
                                 "FIRST_CAP" if i == 0 else "O", None, None, None)
                         for i, w in enumerate(words)]
    return utts


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("bench")
    enc = build_tiny_bert(root / "enc", words=VOCAB)
    exp = save_untrained({
        "family": "autopunct", "label_set": "iwslt4", "featurizer": {"encoder": str(enc)},
        "model": {"encoder_train_layers": 0, "head": {"hidden": 16}, "cap_head": {"hidden": 16}},
        "train": {"window": 16, "stride": 8},
        "decode": {"window": 16, "stride": 8, "batch_size": 4, "bf16": "off"},
    }, root / "exp", seed=3)
    data = root / "test"
    data.mkdir()
    utts = _utts(6, 9, 1)
    utts["long"] = [WordRow("long", r.idx, r.word, r.form, r.punct, r.cap, None, None, None)
                    for r in _utts(1, 40, 2)["u0"]]
    write_word_table(data / "words.tsv", utts)
    return exp, data


def test_pair_logits_pick_best_mark_over_half_and_best_cap() -> None:
    names = pair_labels(IWSLT.labels)
    assert names[:4] == ["B-O+O", "B-O+FIRST_CAP", "B-O+ALL_CAPS", "B-COMMA+O"]
    assert len(names) == 4 * 3
    punct = np.array([[0.7, 0.2, 0.6], [0.4, 0.3, 0.49], [0.1, 0.9, 0.95]])
    cap = np.array([[0.1, 0.8, 0.1], [0.5, 0.2, 0.3], [0.2, 0.3, 0.5]])
    best = [names[k] for k in pair_logits(punct, cap).argmax(axis=1)]
    assert best == ["B-COMMA+FIRST_CAP", "B-O+O", "B-QUESTION+ALL_CAPS"]
    # casing not modelled: always O (the rule decides afterwards)
    assert [names[k] for k in pair_logits(punct, None).argmax(axis=1)] == [
        "B-COMMA+O", "B-O+O", "B-QUESTION+O"]


def test_word_start_table_wordpiece(tiny: tuple[Path, Path]) -> None:
    tok = load_experiment(tiny[0]).featurizer.tokenizer
    starts = word_start_table(tok)
    vocab = tok.get_vocab()
    assert starts[vocab["hello"]] and starts[vocab["a"]]
    assert not starts[vocab["##a"]] and not starts[vocab["[CLS]"]] and not starts[vocab["[PAD]"]]


def test_keep_best_mark_hand_checked() -> None:
    marks = np.array([[True, False, True], [False, False, False], [False, True, False]])
    probs = np.array([[0.6, 0.1, 0.7], [0.4, 0.4, 0.4], [0.2, 0.9, 0.95]])
    assert keep_best_mark(marks, probs).tolist() == [[False, False, True],
                                                     [False, False, False],
                                                     [False, True, False]]


def test_pipeline_runs_the_same_weights_as_the_engine(tiny: tuple[Path, Path]) -> None:
    from punct.data.sequences import load_data_dir

    exp = load_experiment(tiny[0])
    _, seqs = load_data_dir(tiny[1], IWSLT)
    short = [s for s in seqs if s.utt_id != "long"]  # 9 one-piece words: one window each
    pred = predict_words(exp.model, exp.featurizer, short, 16, 16, batch_size=4)
    marks, caps = decide(pred, short, IWSLT.labels, exclusive=True,  # iwslt4: argmax
                         constraints=False)  # the pipeline decides word by word
    assert marks.any() and (~marks).any()  # the random model makes both decisions
    assert (marks.sum(axis=1) <= 1).all()
    pipe, wrapper = make_pipeline(exp.model, exp.featurizer, IWSLT, max_length=16)
    p_marks, p_caps = pipeline_decode(pipe, short, IWSLT.labels, overlap=0, batch_size=2)
    np.testing.assert_array_equal(p_marks, keep_best_mark(marks, pred.punct))
    np.testing.assert_array_equal(p_marks, marks)
    np.testing.assert_array_equal(p_caps, caps)
    assert wrapper.calls == 3 and wrapper.overhead_seconds > 0  # 6 short texts, 2 per batch


def test_pipeline_with_stride_covers_every_word(tiny: tuple[Path, Path]) -> None:
    from punct.data.sequences import load_data_dir

    exp = load_experiment(tiny[0])
    _, seqs = load_data_dir(tiny[1], IWSLT)
    long = [s for s in seqs if s.utt_id == "long"]
    long[0].offset = 0
    pipe, wrapper = make_pipeline(exp.model, exp.featurizer, IWSLT, max_length=16)
    marks, caps = pipeline_decode(pipe, long, IWSLT.labels, overlap=6)
    assert marks.shape == (40, 3) and caps.shape == (40,)
    assert wrapper.calls >= 4  # 40 pieces in chunks of 14 with 6 overlapping: several chunks
    assert find_encoder(exp.model) is exp.model.encoder


def test_benchmark_cli_rows_and_ratios(tiny: tuple[Path, Path], tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    exp, data = tiny
    out = tmp_path / "bench"
    rc = bench_cli.main(["--exp-dir", str(exp), "--data-dir", str(data), "--out-dir", str(out),
                         "--reps", "1", "--num-threads", "1", "--profile-engine"])
    assert rc == 0
    assert "engine_vs_encoder" in capsys.readouterr().out
    report = json.loads((out / "benchmark.json").read_text())
    system = report["systems"][0]
    methods = system["methods"]
    assert set(methods) == {"engine", "engine_default", "engine_text", "pipeline_b1",
                            "pipeline_b4", "pipeline_b1_no_overhead", "pipeline_b4_no_overhead",
                            "encoder", "plan"}
    assert system["words"] == 6 * 9 + 40 and system["window"] == 16
    for name, row in methods.items():
        assert row["words_per_s"] == pytest.approx(system["words"] / row["seconds"], rel=1e-2)
        if name not in ("encoder", "plan"):
            assert 0.0 <= row["micro_f1"] <= 1.0
        assert ("micro_f1_one_mark" in row) == name.startswith("engine")
        # an engine row's parts: predict (plan, batches, model) and decide, within its time
        assert ("predict_seconds" in row) == ("decide_seconds" in row) == name.startswith(
            "engine")
        if name.startswith("engine"):
            assert 0 < row["predict_seconds"] and 0 < row["decide_seconds"]
            assert row["predict_seconds"] + row["decide_seconds"] < 1.5 * row["seconds"]
    assert methods["pipeline_b1_no_overhead"]["seconds"] < methods["pipeline_b1"]["seconds"]
    ratios = system["ratios"]
    assert ratios["engine_vs_encoder"] == pytest.approx(
        methods["engine"]["words_per_s"] / methods["encoder"]["words_per_s"], rel=1e-2)
    assert ratios["engine_text_vs_pipeline_b4"] == pytest.approx(
        methods["engine_text"]["words_per_s"] / methods["pipeline_b4"]["words_per_s"], rel=1e-2)
    md = (out / "benchmark.md").read_text()
    assert "| engine_text_vs_pipeline_b1 |" in md and "best of 1 runs" in md
    assert "- engine: " in md and "decide" in md
    profile = (out / f"engine_profile_{exp.name}.txt").read_text()
    assert "Self CPU" in profile and "aten::" in profile


def test_benchmark_word_level_family_has_engine_rows_only(tmp_path: Path) -> None:
    data = tmp_path / "test"
    data.mkdir()
    utts = _utts(4, 7, 5)
    write_word_table(data / "words.tsv", utts)
    exp = save_untrained({
        "family": "brnn", "label_set": "iwslt4", "featurizer": {"min_count": 1},
        "model": {"hidden": 8}, "train": {"window": 6, "stride": 3},
    }, tmp_path / "exp", seed=3, train_seqs=table_to_seqs(utts, IWSLT))
    out = tmp_path / "bench"
    assert bench_cli.main(["--exp-dir", str(exp), "--data-dir", str(data), "--out-dir",
                           str(out), "--reps", "1"]) == 0
    system = json.loads((out / "benchmark.json").read_text())["systems"][0]
    assert set(system["methods"]) == {"engine", "engine_default", "engine_text", "plan"}
    assert any("no HF pipeline" in n for n in system["notes"])
    assert any("no bare-encoder" in n for n in system["notes"])
    assert bench_cli.main(["--exp-dir", str(exp), "--data-dir", str(data), "--out-dir",
                           str(out), "--reps", "0"]) == 1
