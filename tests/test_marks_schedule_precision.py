"""The training recipe: the loss per label set, decisions, learning-rate schedules,
mixed precision (bf16, and fp16 with a gradient scaler, run on CPU) and dev-tuned
per-mark thresholds."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from torch.nn import functional as F

import punct.train.compiled as compiled
from punct.bin import train_benchmark
from punct.config import (
    DecodeSection,
    load_config,
    resolve_config,
)
from punct.engine.aggregate import Aggregator
from punct.engine.combinations import combination_matrix
from punct.engine.decode import decode_settings, exclusive_marks, load_experiment
from punct.engine.precision import resolve_precision
from punct.errors import PunctInputError
from punct.kaldi import mark_mid_stream
from punct.labels import get_label_set
from punct.models.marks import LossOptions, MarkObjective, class_weights
from punct.train.optim import lr_factor
from punct.train.thresholds import (
    GRID,
    band_distance,
    band_thresholds,
    calibrated_defaults,
    critical_thresholds,
    scored_decisions,
    tune_thresholds,
)
from punct.train.trainer import train_experiment
from punct.wordtable import WordRow, write_word_table

IWSLT4 = get_label_set("iwslt4")


# -- loss and probabilities ---------------------------------------------------------------
def test_exclusive_objective_is_a_softmax_over_o_and_the_marks() -> None:
    obj = MarkObjective(IWSLT4, LossOptions(class_weight=[1.0, 2.0, 2.0, 3.0]), np.zeros(3), 0)
    logits = torch.tensor([[0.5, -1.0, 2.0], [-3.0, -3.0, -3.0]])
    targets = torch.tensor([[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])  # QUESTION, O
    full = torch.tensor([[0.0, 0.5, -1.0, 2.0], [0.0, -3.0, -3.0, -3.0]])
    expected = F.cross_entropy(full, torch.tensor([3, 0]),
                               weight=torch.tensor([1.0, 2.0, 2.0, 3.0]))
    assert obj.loss(logits, targets).item() == pytest.approx(expected.item(), rel=1e-6)
    probs = obj.probs(logits)
    assert torch.allclose(probs, torch.softmax(full, -1)[:, 1:])
    assert exclusive_marks(probs.numpy()).tolist() == [[False, False, True],
                                                       [False, False, False]]


def test_class_weights_auto_from_counts() -> None:
    # 1000 words: 80 commas, 60 periods, 5 questions, 855 without a mark
    weights = class_weights(LossOptions(class_weight="auto"), np.array([80, 60, 5]), 1000)
    expected = [1.0, (855 / 80) ** 0.25, (855 / 60) ** 0.25, (855 / 5) ** 0.25]
    assert weights.tolist() == pytest.approx(expected, rel=1e-6)
    capped = class_weights(LossOptions(class_weight="auto", class_weight_max=2.0),
                           np.array([80, 60, 5]), 1000)
    assert capped.tolist() == pytest.approx([1.0, expected[1], 1.94299, 2.0], rel=1e-4)


def test_loss_options_fit_the_label_set() -> None:
    with pytest.raises(PunctInputError, match="pos_weight: does not apply"):
        MarkObjective(IWSLT4, LossOptions(pos_weight="auto"), np.ones(3), 10)
    with pytest.raises(PunctInputError, match="class_weight: does not apply"):
        MarkObjective(get_label_set("full13"), LossOptions(class_weight="auto"), np.ones(13),
                      100)
    with pytest.raises(PunctInputError, match="4 numbers"):
        MarkObjective(IWSLT4, LossOptions(class_weight=[1, 2, 3]), np.ones(3), 10)
    multi = MarkObjective(get_label_set("full13"), LossOptions(), np.ones(13), 100)
    # the same checks run when the config is read, naming the key
    with pytest.raises(PunctInputError, match=r"model\.loss\.class_weight: does not apply to "
                                              r"the multi-label label set full13"):
        resolve_config({"family": "nagy", "label_set": "full13",
                        "model": {"loss": {"class_weight": "auto"}}})
    with pytest.raises(PunctInputError, match=r"model\.loss\.pos_weight: values must be "
                                              r"positive"):
        resolve_config({"family": "nagy", "label_set": "full13",
                        "model": {"loss": {"pos_weight": [0.0] * 13}}})
    assert torch.allclose(multi.probs(torch.zeros(2, 13)), torch.full((2, 13), 0.5))


def test_summed_activations_of_an_exclusive_set_use_the_softmax() -> None:
    agg = Aggregator(1, 3, False, "sum", exclusive=True)
    for logits in ([1.0, 0.0, -1.0], [0.5, 1.0, -1.0]):
        p = torch.softmax(torch.tensor([0.0, *logits]), -1)[1:].numpy()
        agg.add(np.array([[0]]), p[None, None], punct_logits=np.array([[logits]]))
    punct, _, counts = agg.result()
    expected = torch.softmax(torch.tensor([0.0, 1.5, 1.0, -2.0]), -1)[1:].numpy()
    assert counts.tolist() == [2] and np.allclose(punct[0], expected)
    # without raw activations, log(p / p_O) recovers them
    again = Aggregator(1, 3, False, "sum", exclusive=True)
    p = torch.softmax(torch.tensor([0.0, 1.0, 0.0, -1.0]), -1)[1:].numpy()
    again.add(np.array([[0]]), p[None, None])
    assert np.allclose(again.result()[0][0], p, atol=1e-6)


# -- schedules ------------------------------------------------------------------------------
def test_lr_factor_warmup_decay_and_restart() -> None:
    assert [lr_factor(s, 100, 4) for s in range(5)] == [0.25, 0.5, 0.75, 1.0, 1.0]
    assert lr_factor(50, 100, 0, "linear") == pytest.approx(0.5)
    assert lr_factor(100, 100, 0, "linear") == 0.0
    assert lr_factor(25, 100, 0, "cosine") == pytest.approx(0.5 * (1 + math.cos(math.pi / 4)))
    # the encoder unfreezes at step 40: warm-up starts again there, decay goes on
    assert lr_factor(40, 100, 10, "linear", restart_step=40) == pytest.approx(0.1 * 0.6)
    assert lr_factor(49, 100, 10, "linear", restart_step=40) == pytest.approx(1.0 * 0.51)
    assert lr_factor(39, 100, 10, "none", restart_step=40) == 1.0
    with pytest.raises(ValueError, match="unknown lr decay"):
        lr_factor(0, 10, 0, "step")


# -- precision --------------------------------------------------------------------------------
@pytest.mark.parametrize(("flags", "expected"), [
    ("fpu avx2 avx512f avx512_bf16 amx_bf16", "bf16"),
    ("fpu avx2 fma", "fp32"),
])
def test_auto_precision_follows_the_cpu(tmp_path: Path, flags: str, expected: str,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PUNCT_NATIVE_BF16", raising=False)  # the flags alone decide here
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nflags\t\t: {flags}\n", encoding="utf-8")
    assert resolve_precision("auto", "cpu", cpuinfo) == expected
    assert resolve_precision("fp32", "cpu", cpuinfo) == "fp32"
    assert resolve_precision("BF16", "cpu", cpuinfo) == "bf16"
    with pytest.raises(ValueError, match="precision must be one of"):
        resolve_precision("half", "cpu", cpuinfo)


def test_auto_precision_on_cuda_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert resolve_precision("auto", "cuda") == "bf16"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert resolve_precision("auto", "cuda") == "fp16"  # with a gradient scaler


# -- training ------------------------------------------------------------------------------
FILLERS = [f"w{i}" for i in range(12)]


def make_set(path: Path, n: int, seed: int) -> None:
    """yes -> COMMA, stop -> PERIOD, huh -> QUESTION; QUOTE on hola (multi-label)."""
    rng = random.Random(seed)
    utts = {}
    for u in range(n):
        words = [rng.choice([*FILLERS, "yes", "stop", "huh", "hola"])
                 for _ in range(rng.randint(4, 10))]
        uid = f"{path.name}{u:04d}"
        rows = []
        for i, w in enumerate(words):
            marks = {"yes": ("COMMA",), "stop": ("PERIOD",), "huh": ("QUESTION",),
                     "hola": ("QUOTE", "COMMA")}.get(w, ())
            rows.append(WordRow(uid, i, w, w, marks, "O", float(i), i + 0.5, 0.5))
        utts[uid] = rows
    path.mkdir(parents=True, exist_ok=True)
    write_word_table(path / "words.tsv", utts)
    # random word strings whose last word has no final mark: blocks cut out of a stream
    mark_mid_stream(path, "random word strings, not whole documents")


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("recipe")
    make_set(root / "train", 200, 1)
    make_set(root / "dev", 30, 2)
    return root


def tiny(label_set: str, precision: str, **train: object) -> dict:
    return resolve_config({
        "family": "brnn", "label_set": label_set, "featurizer": {"min_count": 1},
        "model": {"hidden": 12},
        "train": {"epochs": 6, "batch_size": 8, "window": 12, "stride": 12, "seed": 3,
                  "optimizer": {"name": "adam", "lr": 0.02}, "precision": precision,
                  "grad_clip": 1.0, "lr_decay": "linear", "warmup_steps": 3, **train},
        "decode": {"window": 12, "stride": 6},
    })


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_mixed_precision_training_runs_on_cpu(data: Path, tmp_path: Path,
                                              precision: str) -> None:
    torch.set_num_threads(1)
    exp = tmp_path / precision
    summary = train_experiment(tiny("iwslt4", precision), data / "train", data / "dev", exp,
                               threads=1, quiet=True)
    assert summary["precision"] == precision
    history = json.loads((exp / "history.json").read_text())
    assert all(math.isfinite(h["train_loss"]) for h in history)
    assert max(h["dev_micro_f1"] for h in history) > 0.8  # fp32 reaches 0.98
    assert history[-1]["lr"] == pytest.approx(0.0, abs=1e-12)  # linear decay to 0
    ckpt = torch.load(exp / "last.pt", map_location="cpu", weights_only=False)
    if precision == "fp16":  # the gradient scaler's state is checkpointed for --resume
        assert ckpt["scaler"] and ckpt["scaler"]["scale"] > 0
    else:
        assert ckpt["scaler"] is None
    assert not (exp / "thresholds.json").exists()  # iwslt4 decodes by argmax
    assert decode_settings(load_experiment(exp).config).exclusive


def test_multilabel_thresholds_are_tuned_on_dev_and_used(data: Path, tmp_path: Path) -> None:
    torch.set_num_threads(1)
    exp = tmp_path / "full13"
    train_experiment(tiny("full13", "fp32"), data / "train", data / "dev", exp, threads=1,
                     quiet=True)
    saved = json.loads((exp / "thresholds.json").read_text())
    assert saved["label_set"] == "full13" and len(saved["thresholds"]) == 13
    assert saved["dev_micro_f1_tuned"] >= saved["dev_micro_f1_default"]
    st = decode_settings(load_experiment(exp).config)
    labels = get_label_set("full13").labels
    assert st.threshold == tuple(saved["thresholds"][lab] for lab in labels)
    assert not st.exclusive


def test_tune_thresholds_maximises_micro_f1_and_spares_rare_marks() -> None:
    probs = np.array([[0.3, 0.9], [0.35, 0.2], [0.1, 0.6], [0.05, 0.55]])
    ref = np.array([[1, 1], [1, 0], [0, 1], [0, 0]], dtype=bool)
    tuned = tune_thresholds(probs, ref, ["A", "B"], min_support=1)
    assert tuned.thresholds["A"] == pytest.approx(0.15)  # catches both at 0.3 and 0.35
    assert tuned.thresholds["B"] == pytest.approx(0.6)   # drops the 0.55 false alarm
    assert tuned.f1_after == pytest.approx(1.0) and tuned.f1_before < 1.0
    # with too few dev occurrences a mark keeps the default threshold (where the ratio
    # band does not apply: at 0.5, A would never fire)
    rare = tune_thresholds(probs, ref, ["A", "B"], min_support=3, band=(0.0, np.inf))
    assert rare.thresholds == {"A": 0.5, "B": 0.5} and rare.f1_after == rare.f1_before
    # a low threshold that adds more false alarms than hits is not taken
    noisy = np.array([[0.4, 0.0]] * 2 + [[0.3, 0.0]] * 6 + [[0.9, 0.0]] * 2)
    truth = np.zeros((10, 2), dtype=bool)
    truth[:2, 0] = truth[8:, 0] = True
    assert tune_thresholds(noisy, truth, ["A", "B"], min_support=1).thresholds["A"] >= 0.35


def test_rare_weighted_marks_keep_a_calibrated_default() -> None:
    # pos_weight w lifts a sigmoid by log(w): 0.5 of the unweighted model is w / (1 + w)
    assert calibrated_defaults(0.5, 3, [1.0, 3.0, 9.0]).tolist() == pytest.approx(
        [0.5, 0.75, 0.9])
    assert calibrated_defaults(0.4, 2, None).tolist() == [0.4, 0.4]
    with pytest.raises(ValueError, match="positive"):
        calibrated_defaults(0.5, 2, [1.0, 0.0])
    # B is rare in dev (untuned) and weighted 9: at 0.6 it is no longer a false alarm
    probs = np.array([[0.9, 0.6], [0.8, 0.1], [0.2, 0.95], [0.1, 0.2]])
    ref = np.array([[1, 0], [1, 0], [0, 1], [0, 0]], dtype=bool)
    plain = tune_thresholds(probs, ref, ["A", "B"], min_support=2)
    weighted = tune_thresholds(probs, ref, ["A", "B"], min_support=2, pos_weight=[2.0, 9.0])
    assert plain.thresholds["B"] == 0.5 and weighted.thresholds["B"] == pytest.approx(0.9)
    assert weighted.thresholds["A"] == plain.thresholds["A"]  # tuned marks: as before
    assert weighted.f1_after == pytest.approx(1.0)
    assert plain.f1_after < 1.0
    assert weighted.f1_before == plain.f1_before  # the score at the plain default
    # the same under a restriction to sets of marks (decode.combinations: seen)
    allowed = combination_matrix([["A"], ["B"]], ["A", "B"])
    constrained = tune_thresholds(probs, ref, ["A", "B"], min_support=2, allowed=allowed,
                                  pos_weight=[2.0, 9.0])
    assert constrained.thresholds["B"] == pytest.approx(0.9)


# -- configs -----------------------------------------------------------------------------------
def test_unknown_train_and_decode_keys_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "sys.yaml"
    path.write_text(yaml.safe_dump({"family": "brnn", "train": {"epoch": 3}}))
    with pytest.raises(PunctInputError, match=r"train\.epoch\b") as err:
        load_config(path)
    assert str(path) in str(err.value)
    path.write_text(yaml.safe_dump({"family": "brnn", "decode": {"treshold": 0.4}}))
    with pytest.raises(PunctInputError, match=r"decode\.treshold"):
        load_config(path)
    path.write_text(yaml.safe_dump({"family": "brnn", "train": {"precision": "half"}}))
    with pytest.raises(PunctInputError, match=r"train\.precision"):
        load_config(path)


def test_train_benchmark_reports_each_precision(data: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "brnn.yaml"
    cfg.write_text(yaml.safe_dump({
        "family": "brnn", "label_set": "iwslt4", "featurizer": {"min_count": 1},
        "model": {"hidden": 8}, "train": {"batch_size": 4, "window": 12, "stride": 12}}))
    out = tmp_path / "bench"
    assert train_benchmark.main(["--config", str(cfg), "--data-dir", str(data / "train"),
                                 "--out-dir", str(out), "--steps", "3", "--reps", "1",
                                 "--num-threads", "1", "--precisions", "fp32,bf16,fp16"]) == 0
    report = json.loads((out / "train_benchmark.json").read_text())
    assert [r["precision"] for r in report["rows"]] == ["fp32", "bf16", "fp16"]
    assert report["tokens"] > 0 and all(r["tokens_per_s"] > 0 for r in report["rows"])
    assert report["rows"][0]["speedup_vs_fp32"] == 1.0
    assert report["auto_precision"] in ("bf16", "fp32")
    assert "picks **" in (out / "train_benchmark.md").read_text()
    assert report["dropout_masks"] == "bytes"  # auto on the CPU
    assert "dropout masks: bytes" in (out / "train_benchmark.md").read_text()
    assert train_benchmark.main(["--config", str(cfg), "--data-dir", str(data / "train"),
                                 "--out-dir", str(out), "--steps", "2", "--reps", "1",
                                 "--num-threads", "1", "--precisions", "fp32",
                                 "--set", "train.dropout_masks=torch"]) == 0
    assert json.loads((out / "train_benchmark.json").read_text())["dropout_masks"] == "torch"
    too_many = ["--config", str(cfg), "--data-dir", str(data / "dev"), "--out-dir", str(out),
                "--steps", "1000"]
    assert train_benchmark.main(too_many) == 1


def test_train_benchmark_compile_modes_extras_and_profile(
        data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiled, "BACKEND", "aot_eager")  # no code generation (minutes)
    cfg = tmp_path / "brnn.yaml"
    cfg.write_text(yaml.safe_dump({
        "family": "brnn", "label_set": "iwslt4", "featurizer": {"min_count": 1},
        "model": {"hidden": 8},
        "train": {"batch_size": 4, "window": 12, "stride": 12, "grad_clip": 1.0}}))
    out, profile = tmp_path / "bench", tmp_path / "prof" / "steps.txt"
    common = ["--config", str(cfg), "--data-dir", str(data / "train"), "--out-dir", str(out),
              "--steps", "3", "--reps", "1", "--num-threads", "1", "--precisions", "fp32"]
    assert train_benchmark.main([*common, "--compile", "off,default", "--trainer-extras",
                                 "--warmup", "2", "--profile", str(profile),
                                 "--profile-steps", "2"]) == 0
    report = json.loads((out / "train_benchmark.json").read_text())
    assert [(r["precision"], r["compile"]) for r in report["rows"]] == [
        ("fp32", "off"), ("fp32", "default")]
    assert report["device"] == "cpu" and report["trainer_extras"] is True
    assert all(r["ms_per_step"] == pytest.approx(1000 * r["seconds"] / 3, abs=0.2)
               for r in report["rows"])
    table = profile.read_text()
    assert "Self CPU" in table and "aten::" in table  # torch.profiler's table of the steps
    step_rows = [line.split() for line in table.splitlines() if "Optimizer.step#" in line]
    assert [row[-1] for row in step_rows] == ["2"]  # --profile-steps 2 optimizer steps
    assert "| fp32 | default |" in (out / "train_benchmark.md").read_text()
    assert train_benchmark.main([*common, "--compile", "fastest"]) == 1


def test_typed_sections_check_types_and_family_model_keys(tmp_path: Path) -> None:
    path = tmp_path / "sys.yaml"
    path.write_text(yaml.safe_dump({"family": "brnn", "train": {"epochs": "three"}}))
    with pytest.raises(PunctInputError, match=r"train\.epochs = 'three' is not of type int"):
        load_config(path)
    path.write_text(yaml.safe_dump({"family": "nagy", "model": {"hiden": 64}}))
    with pytest.raises(PunctInputError, match=r"unknown key model\.hiden; allowed: .*hidden"
                       ) as err:
        load_config(path)
    assert str(path) in str(err.value)
    cfg = resolve_config({"family": "brnn", "train": {"warmup_epochs": 1, "grad_clip": 2}})
    assert cfg.train.warmup_epochs == 1 and cfg.decode.threshold == 0.5
    assert cfg.decode == DecodeSection()  # one place for the defaults


def test_thresholds_do_not_buy_f1_with_a_flood_of_a_mark() -> None:
    # A is mediocre (F1 0.4); B has 20 dev occurrences, 12 caught above 0.7 and 8 in a
    # low-probability cloud with 37 negatives: at a low B threshold micro-F1 rises
    # (0.421 -> 0.425) while B is predicted 2.25 times as often as the reference has it
    n = 600
    ref = np.zeros((n, 2), dtype=bool)
    ref[:200, 0] = True
    ref[200:220, 1] = True
    probs = np.zeros((n, 2))
    probs[:100, 0] = probs[400:, 0] = 0.9
    probs[100:200, 0] = 0.0  # missed at any threshold
    probs[200:212, 1] = 0.8
    probs[212:245, 1] = 0.12  # 8 missed B and 25 false alarms
    free = tune_thresholds(probs, ref, ["A", "B"], min_support=1, band=(0.0, np.inf))
    banded = tune_thresholds(probs, ref, ["A", "B"], min_support=1)
    assert free.thresholds["B"] <= 0.1 and free.ratios["B"] == pytest.approx(2.25)
    assert banded.thresholds["B"] > 0.12 and banded.ratios["B"] == pytest.approx(0.6)
    assert free.f1_after > banded.f1_after


def test_ratio_band_moves_a_starved_rare_mark_and_reports_ratios() -> None:
    # a rare mark (below min_support) whose default never fires is moved into the band;
    # a mark absent from dev has no ratio
    probs = np.array([[0.9, 0.3, 0.0], [0.1, 0.35, 0.0], [0.8, 0.05, 0.0], [0.2, 0.1, 0.0]])
    ref = np.array([[1, 1, 0], [0, 1, 0], [1, 0, 0], [0, 0, 0]], dtype=bool)
    tuned = tune_thresholds(probs, ref, ["A", "B", "C"], min_support=3)
    assert tuned.thresholds["A"] == 0.5 and tuned.thresholds["C"] == 0.5
    assert tuned.thresholds["B"] <= 0.3 and tuned.ratios["B"] == pytest.approx(1.0)
    assert tuned.ratios["A"] == pytest.approx(1.0) and tuned.ratios["C"] is None
    assert band_distance(np.array([1, 2, 4, 8]), 2).tolist() == pytest.approx(
        [0.0, 0.0, 0.0, np.log(2)])


def test_marks_outside_the_band_on_the_grid_try_tails_and_their_own_probabilities() -> None:
    # B: the model rates it at most 0.02 (never above 0.05); C: 9 negatives at 0.96 flood
    # it at every grid value up to 0.95. The tails bring both into the band.
    n = 40
    probs = np.zeros((n, 3))
    ref = np.zeros((n, 3), dtype=bool)
    probs[:20, 0], ref[:20, 0] = 0.9, True  # A: a well-behaved mark
    probs[20:24, 1], ref[20:24, 1] = 0.02, True
    probs[24:28, 1] = 0.004
    probs[28:32, 2], ref[28:32, 2] = 0.99, True
    probs[32:, 2] = 0.96
    tuned = tune_thresholds(probs, ref, ["A", "B", "C"], min_support=3)
    assert tuned.thresholds["B"] in (0.005, 0.01, 0.02)
    assert tuned.thresholds["C"] in (0.97, 0.98, 0.99)
    assert tuned.ratios["B"] == pytest.approx(1.0) and tuned.ratios["C"] == pytest.approx(1.0)
    assert tuned.thresholds["A"] == 0.5  # a mark inside the band keeps the main grid
    # D: 10 negatives at 0.12 between the grid's 0.1 (15 predictions for 5 references)
    # and 0.15 (2): its own probability 0.125 gives 5
    probs = np.zeros((20, 1))
    ref = np.zeros((20, 1), dtype=bool)
    probs[:2, 0], probs[2:5, 0], probs[5:15, 0] = 0.5, 0.125, 0.12
    ref[:5, 0] = True
    tuned = tune_thresholds(probs, ref, ["D"], min_support=3)
    assert tuned.thresholds["D"] == pytest.approx(0.125) and tuned.ratios["D"] == 1.0


def test_critical_thresholds_are_where_a_word_gets_the_mark() -> None:
    # just below a word's critical threshold of mark k it gets k, just above it does not,
    # with plain thresholding and with allowed sets of marks
    rng = np.random.default_rng(7)
    probs = rng.uniform(0.01, 0.99, size=(300, 3))
    thresholds = np.array([0.4, 0.5, 0.6])
    allowed = combination_matrix([["A"], ["B"], ["C"], ["A", "C"]], ["A", "B", "C"])
    for sets in (None, allowed):
        for k in range(3):
            crit = critical_thresholds(probs, thresholds, k, sets)
            for factor, expected in ((0.999, True), (1.001, False)):
                for w in range(0, 300, 7):
                    trial = thresholds.copy()
                    trial[k] = crit[w] * factor
                    hyp, _ = scored_decisions(probs[w:w + 1], probs[w:w + 1] > 2, trial, sets)
                    assert bool(hyp[0, k]) is expected, (sets is None, k, w)


def test_band_thresholds_under_allowed_sets_use_where_the_mark_wins() -> None:
    # Only {P} or {Q} may be chosen. Q's 5 dev words have p_Q 0.8 but P at 0.89 beside it,
    # so Q wins there only below threshold 0.33; 20 other words have p_Q 0.60-0.70 with P
    # just as strong, so Q wins there below 0.310-0.320. Q's own probabilities give no
    # count in the 0.5-2 band (0 predictions at each); where Q wins gives exactly 5.
    def logit(p: float) -> float:
        return math.log(p / (1 - p))

    def p_beside(p_q: float, critical: float) -> float:  # the P that puts Q's win there
        return 1 / (1 + math.exp(-(logit(p_q) - logit(critical))))

    probs = np.zeros((25, 2))
    probs[:5, 1] = 0.8
    probs[:5, 0] = p_beside(0.8, 0.33)
    for i, (p_q, crit) in enumerate(zip(np.linspace(0.6, 0.7, 20),
                                        np.linspace(0.3101, 0.3199, 20), strict=True)):
        probs[5 + i] = p_beside(p_q, crit), p_q
    allowed = combination_matrix([["P"], ["Q"]], ["P", "Q"])
    thresholds = np.array([0.5, 0.5])

    def count(t: float) -> int:
        hyp, _ = scored_decisions(probs, probs > 2, np.array([0.5, t]), allowed)
        return int(hyp[:, 1].sum())

    assert count(0.30) == 25 and count(0.35) == 0  # the grid floods or starves Q
    assert not any(2.5 <= count(t) <= 10 for t in band_thresholds(probs, 5, k=1))  # plain
    tried = band_thresholds(probs, 5, k=1, thresholds=thresholds, allowed=allowed)
    assert sorted({count(t) for t in tried if 0.3 < t < 0.34}) == [5, 10]  # c-th gives c


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_no_mark_ends_outside_the_band_where_its_own_threshold_could_bring_it_in(
        seed: int) -> None:
    # with allowed sets the decisions interact: after tuning, a mark outside the band is
    # one that no threshold of its own (the others fixed) brings into the band
    rng = np.random.default_rng(seed)
    labels = ["A", "B", "C", "D"]
    ref = rng.random((400, 4)) < [0.15, 0.08, 0.05, 0.03]
    probs = np.clip(0.5 * ref + rng.beta(1, 4, size=(400, 4)), 0.0, 1.0)
    allowed = combination_matrix([["A"], ["B"], ["C"], ["D"], ["A", "D"]], labels)
    tuned = tune_thresholds(probs, ref, labels, min_support=15, allowed=allowed)
    chosen = np.array([tuned.thresholds[m] for m in labels])
    support = ref.sum(axis=0)
    for k, mark in enumerate(labels):
        if band_distance(np.array(tuned.ratios[mark] * support[k]), int(support[k])) == 0:
            continue
        tried = np.concatenate([GRID, band_thresholds(probs, int(support[k]), k=k,
                                                      thresholds=chosen, allowed=allowed)])
        for t in tried:
            trial = chosen.copy()
            trial[k] = t
            hyp, _ = scored_decisions(probs, ref, trial, allowed)
            assert band_distance(np.array(hyp[:, k].sum()), int(support[k])) > 0, (mark, t)
    assert sum(0.5 <= r <= 2 for r in tuned.ratios.values()) >= 3
