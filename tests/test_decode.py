"""The shared decoder: window cutting, aggregation, decisions, hypothesis tables, CLI."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from punct.bin import decode as decode_cli
from punct.config import resolve_config
from punct.data.sequences import load_data_dir, table_to_seqs
from punct.data.windows import batched, coverage, window_spans
from punct.engine.aggregate import Aggregator
from punct.engine.decode import (
    decide,
    hypothesis_rows,
    ordered_marks,
    predict_words,
    rule_caps,
)
from punct.labels import get_label_set
from punct.models.base import Featurizer, Prediction, PunctModel, Window, WordSeq
from punct.train.trainer import train_experiment
from punct.wordtable import WordRow, read_word_table, write_word_table

IWSLT = get_label_set("iwslt4")


def test_window_spans_small_case() -> None:
    assert window_spans(10, 4, 2) == [(0, 4), (2, 6), (4, 8), (6, 10)]
    assert window_spans(9, 4, 2) == [(0, 4), (2, 6), (4, 8), (6, 9)]
    assert window_spans(3, 4, 2) == [(0, 3)]
    assert window_spans(0, 4, 2) == []
    assert coverage(10, 4, 2) == [1, 1, 2, 2, 2, 2, 2, 2, 1, 1]
    with pytest.raises(ValueError):
        window_spans(5, 2, 3)


@pytest.mark.parametrize(("n", "window", "stride"),
                         [(50, 8, 2), (51, 8, 4), (64, 16, 16), (100, 12, 3), (37, 6, 1)])
def test_every_word_predicted_window_over_stride_times(n: int, window: int, stride: int) -> None:
    counts = coverage(n, window, stride)
    per_token = window // stride
    assert min(counts) >= 1 and max(counts) == per_token
    # away from the edges exactly window/stride predictions
    assert all(c == per_token for c in counts[window - stride: n - window])
    spans = window_spans(n, window, stride)
    assert all(e - s == window for s, e in spans[:-1]) and spans[-1][1] == n


def test_batched() -> None:
    assert list(batched([1, 2, 3, 4, 5], 2)) == [[1, 2], [3, 4], [5]]


def test_mean_aggregation_hand_checked() -> None:
    agg = Aggregator(n_words=3, n_punct=2, with_cap=True, mode="mean")
    ids = np.array([[0, 1, -1], [1, 2, 2]])
    punct = np.array([[[0.2, 0.9], [0.4, 0.1], [9.0, 9.0]],
                      [[0.8, 0.3], [0.6, 0.0], [0.2, 0.4]]])
    cap = np.array([[[1, 0, 0], [0.5, 0.5, 0], [0, 0, 1]],
                    [[0, 1, 0], [0.2, 0.8, 0], [0.4, 0.6, 0]]], dtype=float)
    agg.add(ids, punct, cap)
    p, c, counts = agg.result()
    assert counts.tolist() == [1, 2, 2]
    np.testing.assert_allclose(p, [[0.2, 0.9], [0.6, 0.2], [0.4, 0.2]])
    np.testing.assert_allclose(c, [[1, 0, 0], [0.25, 0.75, 0], [0.3, 0.7, 0]])


def test_sum_aggregation_hand_checked() -> None:
    agg = Aggregator(n_words=2, n_punct=1, with_cap=False, mode="sum")
    ids = np.array([[0, 1], [1, -1]])
    logits = np.array([[[2.0], [-1.0]], [[3.0], [50.0]]])
    probs = 1 / (1 + np.exp(-logits))
    agg.add(ids, probs, punct_logits=logits)
    p, c, counts = agg.result()
    assert c is None and counts.tolist() == [1, 2]
    np.testing.assert_allclose(p[:, 0], 1 / (1 + np.exp(-np.array([2.0, 2.0]))))
    # without raw activations, logit(p) is summed: same numbers
    agg2 = Aggregator(2, 1, False, "sum")
    agg2.add(ids, probs)
    np.testing.assert_allclose(agg2.result()[0], p, rtol=1e-6)
    # sum and mean can disagree: 0.9 + 0.2 + 0.2 -> mean 0.433 (no), logit sum +0.03 (yes)
    ids3 = np.array([[0, 0, 0]])
    pr = np.array([[[0.9], [0.2], [0.2]]])
    m, s = Aggregator(1, 1, False, "mean"), Aggregator(1, 1, False, "sum")
    m.add(ids3, pr)
    s.add(ids3, pr)
    assert m.result()[0][0, 0] == pytest.approx(1.3 / 3)
    assert s.result()[0][0, 0] == pytest.approx(1 / (1 + np.exp(-(np.log(9) - 2 * np.log(4)))))


def test_unpredicted_word_is_an_error() -> None:
    agg = Aggregator(3, 1, False)
    agg.add(np.array([[0, 2]]), np.zeros((1, 2, 1)))
    with pytest.raises(ValueError, match="never predicted"):
        agg.result()


class PositionFeaturizer(Featurizer):
    """Word-level windows; feature = position inside the window (for a fake model)."""

    def fit(self, train: list[WordSeq]) -> None:
        pass

    def windows(self, seqs: list[WordSeq], window: int, stride: int) -> list[Window]:
        out = []
        for s in seqs:
            for a, b in window_spans(len(s), window, stride):
                out.append({"word_ids": np.arange(s.offset + a, s.offset + b),
                            "pos": np.arange(b - a, dtype=np.float32)})
        return out

    def collate(self, windows: list[Window]) -> dict[str, torch.Tensor]:
        t = max(len(w["word_ids"]) for w in windows)
        ids = torch.full((len(windows), t), -1, dtype=torch.long)
        pos = torch.zeros(len(windows), t)
        for i, w in enumerate(windows):
            ids[i, :len(w["word_ids"])] = torch.from_numpy(w["word_ids"])
            pos[i, :len(w["pos"])] = torch.from_numpy(w["pos"])
        return {"word_ids": ids, "pos": pos}

    def save(self, directory: Path) -> None:
        pass

    @classmethod
    def load(cls, directory: Path, config: dict[str, Any]) -> Featurizer:
        return cls()


class PositionModel(PunctModel):
    """P(COMMA) = 0.1 * position in window; cap: FIRST_CAP for position 0, else O."""

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return torch.zeros(())

    def predict(self, batch: dict[str, torch.Tensor]) -> Prediction:
        pos = batch["pos"]
        punct = torch.zeros(*pos.shape, 3)
        punct[..., 0] = 0.1 * pos
        cap = torch.zeros(*pos.shape, 3)
        cap[..., 0] = (pos > 0).float()
        cap[..., 1] = (pos == 0).float()
        return Prediction(punct, cap)


def test_predict_words_end_to_end_mean() -> None:
    seqs = [WordSeq("a", ["w"] * 6, np.full(6, np.nan), np.zeros((6, 3)), np.zeros(6, int), 0),
            WordSeq("b", ["w"] * 3, np.full(3, np.nan), np.zeros((3, 3)), np.zeros(3, int), 6)]
    pred = predict_words(PositionModel(), PositionFeaturizer(), seqs, window=4, stride=2,
                         batch_size=2)
    # utterance a: windows [0,4) [2,6): positions of word k: 0 ->(0) 1 ->(1) 2 ->(2,0)
    # 3 ->(3,1) 4 ->(2) 5 ->(3); utterance b: one window [0,3)
    assert pred.counts.tolist() == [1, 1, 2, 2, 1, 1, 1, 1, 1]
    np.testing.assert_allclose(pred.punct[:, 0], [0, 0.1, 0.1, 0.2, 0.2, 0.3, 0, 0.1, 0.2],
                               atol=1e-6)
    marks, caps = decide(pred, seqs, IWSLT.labels, threshold=0.15)
    assert marks[:, 0].tolist() == [False, False, False, True, True, True, False, False, True]
    # word 2 is FIRST_CAP in one window, O in the other: mean 0.5/0.5 -> argmax picks O
    assert caps.tolist() == [1, 0, 0, 0, 0, 0, 1, 0, 0]


def test_rule_caps_and_mark_order() -> None:
    seqs = [WordSeq("a", ["x"] * 4, np.zeros(4), np.zeros((4, 3)), np.zeros(4, int), 0),
            WordSeq("b", ["x"] * 2, np.zeros(2), np.zeros((2, 3)), np.zeros(2, int), 4)]
    marks = np.zeros((6, 3), dtype=bool)
    marks[1, IWSLT.index("PERIOD")] = True
    marks[2, IWSLT.index("COMMA")] = True
    marks[3, IWSLT.index("QUESTION")] = True  # end of utterance a
    assert rule_caps(marks, seqs, IWSLT.labels).tolist() == [1, 0, 1, 0, 1, 0]
    full = get_label_set("full13").labels
    flags = np.array([lab in ("PERIOD", "OPEN_QUOTE", "QUOTE") for lab in full])
    assert ordered_marks(flags, full) == ("OPEN_QUOTE", "PERIOD", "QUOTE")


def test_hypothesis_rows_copy_timings_and_apply_cap() -> None:
    utts = {"u1": [WordRow("u1", 0, "hello", "Hello", ("COMMA",), "FIRST_CAP", 0.0, 0.5, 0.1),
                   WordRow("u1", 1, "nasa", "NASA", ("PERIOD",), "ALL_CAPS", 0.6, 0.9, None)]}
    seqs = table_to_seqs(utts, IWSLT)
    marks = np.array([[False, True, False], [False, False, True]])
    caps = np.array([2, 1])
    hyp = hypothesis_rows(utts, seqs, marks, caps, IWSLT.labels)["u1"]
    assert hyp[0] == WordRow("u1", 0, "hello", "HELLO", ("PERIOD",), "ALL_CAPS", 0.0, 0.5, 0.1)
    assert hyp[1] == WordRow("u1", 1, "nasa", "Nasa", ("QUESTION",), "FIRST_CAP", 0.6, 0.9, None)


def _write_set(path: Path, n: int, seed: int) -> None:
    rng = random.Random(seed)
    utts = {}
    for u in range(n):
        words = [rng.choice(["a", "b", "c", "yes", "stop"]) for _ in range(rng.randint(3, 9))]
        rows = []
        for i, w in enumerate(words):
            marks = ("COMMA",) if w == "yes" else ("PERIOD",) if w == "stop" else ()
            if i == len(words) - 1 and not marks:
                marks = ("PERIOD",)
            rows.append(WordRow(f"u{u:03d}", i, w, w.upper() if i == 0 else w, marks,
                                "ALL_CAPS" if i == 0 and len(w) > 1 else
                                "FIRST_CAP" if i == 0 else "O", None, None, None))
        utts[f"u{u:03d}"] = rows
    path.mkdir(parents=True, exist_ok=True)
    write_word_table(path / "words.tsv", utts)


@pytest.fixture(scope="module")
def tiny_exp(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("dec")
    _write_set(root / "train", 40, 1)
    _write_set(root / "test", 12, 2)
    config = resolve_config({
        "family": "brnn", "label_set": "iwslt4", "featurizer": {"min_count": 1},
        "model": {"hidden": 8},
        "train": {"epochs": 1, "batch_size": 8, "window": 6, "stride": 6,
                  "optimizer": {"name": "adam", "lr": 0.01}},
        "decode": {"window": 4, "stride": 2, "batch_size": 5},
    })
    train_experiment(config, root / "train", root / "test", root / "exp", quiet=True)
    return root / "exp", root / "test"


def test_decode_cli_writes_hypothesis_and_record(tiny_exp: tuple[Path, Path], tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    exp, data = tiny_exp
    out = tmp_path / "dec"
    rc = decode_cli.main(["--exp-dir", str(exp), "--data-dir", str(data), "--out-dir", str(out),
                          "--num-threads", "1", "--quiet", "--aggregate", "sum"])
    assert rc == 0
    assert "words/s" in capsys.readouterr().out
    ref = read_word_table(data / "words.tsv")
    hyp = read_word_table(out / "words.tsv")
    assert list(hyp) == list(ref)
    for utt, rows in ref.items():
        assert [r.word for r in hyp[utt]] == [r.word for r in rows]
        assert hyp[utt][0].cap == "FIRST_CAP"  # rule: utterance start
        assert all(set(h.punct) <= set(IWSLT.labels) for h in hyp[utt])
    info = json.loads((out / "decode.json").read_text())
    n_words = sum(len(r) for r in ref.values())
    assert info["words"] == n_words and info["utterances"] == len(ref)
    assert info["cap_modelled"] is False and info["device"] == "cpu"
    assert info["window"] == 4 and info["stride"] == 2 and info["batch_size"] == 5
    assert info["aggregate"] == "sum" and info["threads"] == 1 and info["words_per_s"] > 0
    assert 1.0 < info["predictions_per_word"] <= 2.0
    probs = np.load(out / "probs.npz")
    assert probs["punct"].shape == (n_words, 3) and "cap" not in probs
    assert len((out / "text").read_text().splitlines()) == len(ref)


def test_decode_cli_several_sets_in_one_call(tiny_exp: tuple[Path, Path], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """One process decodes each --data-dir into its --out-dir, each as a call of its own."""
    exp, data = tiny_exp
    half = tmp_path / "half"
    rows = read_word_table(data / "words.tsv")
    write_word_table(half / "words.tsv", dict(list(rows.items())[: len(rows) // 2]))
    common = ["--exp-dir", str(exp), "--num-threads", "1", "--quiet"]
    assert decode_cli.main([*common, "--data-dir", str(data), "--out-dir", str(tmp_path / "a"),
                            "--data-dir", str(half), "--out-dir", str(tmp_path / "b")]) == 0
    assert decode_cli.main([*common, "--data-dir", str(half),
                            "--out-dir", str(tmp_path / "b1")]) == 0
    assert capsys.readouterr().out.count("words/s") == 3
    assert (tmp_path / "b" / "words.tsv").read_text() == (tmp_path / "b1" / "words.tsv").read_text()
    both = json.loads((tmp_path / "a" / "decode.json").read_text())
    one = json.loads((tmp_path / "b" / "decode.json").read_text())
    assert both["data_dir"] == str(data) and one["data_dir"] == str(half)
    assert both["words"] == sum(len(r) for r in rows.values()) > one["words"]
    assert decode_cli.main([*common, "--data-dir", str(data), "--data-dir", str(half),
                            "--out-dir", str(tmp_path / "c")]) == 1
    assert "2 --data-dir but 1 --out-dir" in capsys.readouterr().err


def test_decode_matches_python_api(tiny_exp: tuple[Path, Path], tmp_path: Path) -> None:
    from punct.engine.decode import load_experiment

    exp_dir, data = tiny_exp
    exp = load_experiment(exp_dir)
    _, seqs = load_data_dir(data, IWSLT)
    a = predict_words(exp.model, exp.featurizer, seqs, 4, 2, batch_size=3)
    b = predict_words(exp.model, exp.featurizer, seqs, 4, 2, batch_size=64)
    np.testing.assert_allclose(a.punct, b.punct, atol=1e-5)  # batching does not matter
    c = predict_words(exp.model, exp.featurizer, seqs, 4, 2, batch_size=8, bf16=True)
    np.testing.assert_allclose(a.punct, c.punct, atol=0.05)


def test_decode_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = decode_cli.main(["--exp-dir", str(tmp_path / "nope"), "--data-dir", str(tmp_path),
                          "--out-dir", str(tmp_path / "o")])
    assert rc == 2
    assert "config.yaml" in capsys.readouterr().err


def test_stride_for_maps_predictions_per_token_to_stride() -> None:
    from punct.data.windows import stride_for

    assert [stride_for(96, n) for n in (1, 2, 3, 6, 9)] == [96, 48, 32, 16, 10]
    assert stride_for(5, 5) == 1
    for n in (1, 2, 3, 4, 6):
        counts = coverage(200, 12, stride_for(12, n))
        assert set(counts[12:-12]) == {n}  # every interior word predicted exactly n times
    for bad in (0, 97):
        with pytest.raises(ValueError, match="predictions per token"):
            stride_for(96, bad)


def test_bf16_auto_detection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from punct.engine.precision import bf16_supported, cpu_flags, resolve_bf16, resolve_precision

    monkeypatch.delenv("PUNCT_NATIVE_BF16", raising=False)

    with_bf16 = tmp_path / "cpuinfo_bf16"
    with_bf16.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx512f avx512_bf16\n\n"
                         "processor\t: 1\nflags\t\t: fpu sse2 avx512f avx512_bf16\n")
    without = tmp_path / "cpuinfo_plain"
    without.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2\n")
    assert "avx512_bf16" in cpu_flags(with_bf16) and cpu_flags(tmp_path / "none") == set()
    assert bf16_supported("cpu", with_bf16) and not bf16_supported("cpu", without)
    assert resolve_bf16("auto", "cpu", with_bf16) is True
    assert resolve_bf16("auto", "cpu", without) is False
    assert resolve_bf16("on", "cpu", without) is True and resolve_bf16(False, "cpu") is False
    assert resolve_bf16(None, "cpu") is False and resolve_bf16("off", "cpu", with_bf16) is False
    with pytest.raises(ValueError, match="bf16 must be one of"):
        resolve_bf16("maybe", "cpu")
    # PUNCT_NATIVE_BF16 overrides the flags: a recipe measured as on another CPU
    monkeypatch.setenv("PUNCT_NATIVE_BF16", "0")
    assert not bf16_supported("cpu", with_bf16)
    assert resolve_precision("auto", "cpu", with_bf16) == "fp32"
    monkeypatch.setenv("PUNCT_NATIVE_BF16", "1")
    assert bf16_supported("cpu", without) and resolve_bf16("auto", "cpu", without) is True


def test_decode_settings_per_token_and_overrides() -> None:
    from punct.engine.decode import decode_settings

    config = resolve_config({"family": "brnn", "train": {"window": 96, "stride": 48},
                             "decode": {"stride": 32, "batch_size": 8, "bf16": "off"}})
    st = decode_settings(config)
    assert (st.window, st.stride, st.batch_size, st.bf16, st.aggregate) == (96, 32, 8, False,
                                                                             "mean")
    assert decode_settings(config, per_token=1).stride == 96
    assert decode_settings(config, per_token=6, window=48).stride == 8
    assert decode_settings(config, per_token=3).per_token == 3.0
    with pytest.raises(ValueError, match="not both"):
        decode_settings(config, per_token=2, stride=10)
    with pytest.raises(ValueError, match="stride <= window"):
        decode_settings(config, stride=100)


def test_decode_cli_per_token(tiny_exp: tuple[Path, Path], tmp_path: Path) -> None:
    exp, data = tiny_exp
    out = tmp_path / "dec"
    rc = decode_cli.main(["--exp-dir", str(exp), "--data-dir", str(data), "--out-dir", str(out),
                          "--quiet", "--window", "6", "--per-token", "3", "--bf16", "off"])
    assert rc == 0
    info = json.loads((out / "decode.json").read_text())
    assert info["window"] == 6 and info["stride"] == 2 and info["bf16"] is False


def test_mid_stream_sets_need_no_final_mark(tiny_exp: tuple[Path, Path], tmp_path: Path) -> None:
    """A data dir cut out of a stream (``mid_stream``, e.g. IWSLT's 1000-word blocks):
    an utterance's end is no document's end, so no final mark is forced there."""
    import shutil

    from punct.kaldi import ends_mid_stream, mark_mid_stream

    exp, data = tiny_exp
    cut = tmp_path / "cut"
    shutil.copytree(data, cut)
    mark_mid_stream(cut, "blocks of a stream")
    assert ends_mid_stream(cut) and not ends_mid_stream(data)
    runs = {}
    for name, where, extra in (("whole", data, []), ("cut", cut, []),
                               ("free", data, ["--no-constraints"])):
        out = tmp_path / name
        assert decode_cli.main(["--exp-dir", str(exp), "--data-dir", str(where), "--out-dir",
                                str(out), "--num-threads", "1", "--quiet", *extra]) == 0
        runs[name] = (read_word_table(out / "words.tsv"),
                      json.loads((out / "decode.json").read_text()))
    final = {"PERIOD", "QUESTION"}
    whole, cut_rows, free = runs["whole"][0], runs["cut"][0], runs["free"][0]
    assert all(final & set(rows[-1].punct) for rows in whole.values())
    assert cut_rows == free  # iwslt4, casing by rule: only the final-mark rule applied
    assert any(not final & set(rows[-1].punct) for rows in free.values())
    assert runs["cut"][1]["mid_stream"] and not runs["whole"][1]["mid_stream"]
    assert runs["cut"][1]["violations"]["no_final_mark"] == 0
    assert runs["free"][1]["violations"]["no_final_mark"] > 0


def test_decode_cli_scores_each_set_as_the_score_tool(tiny_exp: tuple[Path, Path],
                                                      tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    """``--score`` writes the scores ``punct.bin.score`` writes for the stage driver's
    arguments: against ``ref_words.tsv`` where the set has one, with its
    ``score_label_set``; ``.done`` (written last) is the checkpoint's checksum line."""
    import shutil

    from punct.bin import score as score_cli

    exp, data = tiny_exp
    twin = tmp_path / "twin"  # an "ASR twin": its own words, scored against ref_words.tsv
    shutil.copytree(data, twin)
    rows = read_word_table(data / "words.tsv")
    first = next(iter(rows))
    shorter = {**rows, first: rows[first][:-1]}
    write_word_table(twin / "words.tsv", shorter)
    shutil.copy(data / "words.tsv", twin / "ref_words.tsv")
    (twin / "score_label_set").write_text("iwslt4\n")
    out_a, out_b = tmp_path / "a", tmp_path / "b"
    assert decode_cli.main(["--exp-dir", str(exp), "--num-threads", "1", "--quiet", "--score",
                            "--data-dir", str(data), "--out-dir", str(out_a),
                            "--data-dir", str(twin), "--out-dir", str(out_b)]) == 0
    printed = capsys.readouterr().out
    assert printed.count("BLEU") == 2 and printed.count("words/s") == 2
    stamp = (exp / "best.pt.sha256").read_text()
    for out, ref, extra in ((out_a, data / "words.tsv", []),
                            (out_b, twin / "ref_words.tsv", ["--label-set", "iwslt4"])):
        assert (out / ".done").read_text() == stamp
        direct = tmp_path / f"{out.name}.json"
        assert score_cli.main(["--ref", str(ref), "--hyp", str(out / "words.tsv"),
                               "--decode-info", str(out / "decode.json"), "--system",
                               exp.name, "--test-set", ref.parent.name, "--out", str(direct),
                               *extra]) == 0
        mine = json.loads((out / "scores.json").read_text())
        theirs = json.loads(direct.read_text())
        for doc in (mine, theirs):
            doc.pop("created")
        assert mine == theirs
    twin_scores = json.loads((out_b / "scores.json").read_text())
    assert twin_scores["ref"].endswith("ref_words.tsv")
    assert twin_scores["metrics"]["all"]["asr"]["wer"] > 0  # a deleted word, aligned
    assert twin_scores["test_set"] == "twin" and twin_scores["system"] == exp.name


def test_train_cli_decodes_and_scores_after_training(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    """``--decode-data-dir``/``--decode-out-dir``: the trained system decodes and scores
    the sets in the training process, as ``punct.bin.decode --score`` does afterwards; a
    failing decode leaves the set without ``.done`` and the training counted."""
    import yaml

    from punct.bin import train as train_cli

    _write_set(tmp_path / "train", 30, 1)
    _write_set(tmp_path / "test", 6, 2)
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({
        "family": "brnn", "label_set": "iwslt4", "featurizer": {"min_count": 1},
        "model": {"hidden": 8},
        "train": {"epochs": 1, "batch_size": 8, "window": 6, "stride": 6,
                  "optimizer": {"name": "adam", "lr": 0.01}},
        "decode": {"window": 4, "stride": 2, "batch_size": 5}}))
    exp = tmp_path / "exp"
    common = ["--config", str(config), "--train-dir", str(tmp_path / "train"),
              "--dev-dir", str(tmp_path / "test"), "--exp-dir", str(exp),
              "--num-threads", "1", "--quiet"]
    rc = train_cli.main([*common, "--decode-data-dir", str(tmp_path / "test"),
                         "--decode-out-dir", str(exp / "decode_test"),
                         "--decode-data-dir", str(tmp_path / "missing"),
                         "--decode-out-dir", str(exp / "decode_missing")])
    captured = capsys.readouterr()
    assert rc == 0
    assert "decoding after training failed" in captured.err and "missing" in captured.err
    assert not (exp / "decode_missing" / ".done").exists()
    stamp = (exp / "best.pt.sha256").read_text()
    assert (exp / "decode_test" / ".done").read_text() == stamp  # decoded before the failure
    rc = train_cli.main([*common, "--decode-data-dir", str(tmp_path / "test"),
                         "--decode-out-dir", str(exp / "decode_test")])
    assert rc == 0 and "micro-F1" in capsys.readouterr().out
    assert (exp / "decode_test" / ".done").read_text() == (exp / "best.pt.sha256").read_text()
    again = tmp_path / "again"
    assert decode_cli.main(["--exp-dir", str(exp), "--data-dir", str(tmp_path / "test"),
                            "--out-dir", str(again), "--num-threads", "1", "--quiet",
                            "--score"]) == 0
    assert (again / "words.tsv").read_text() == (exp / "decode_test" / "words.tsv").read_text()
    mine = json.loads((exp / "decode_test" / "scores.json").read_text())
    theirs = json.loads((again / "scores.json").read_text())
    assert mine["metrics"] == theirs["metrics"]
    assert train_cli.main([*common, "--decode-data-dir", str(tmp_path / "test")]) == 1
    assert "1 --decode-data-dir but 0 --decode-out-dir" in capsys.readouterr().err
