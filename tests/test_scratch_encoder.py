"""From-scratch BERT over a sentencepiece model: build, load, train (nagy, courtland),
MLM pre-training, export round trip, and the errors."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from punct.bin import export as export_cli
from punct.bin import pretrain_encoder as pretrain_cli
from punct.bin import scratch_encoder as scratch_cli
from punct.config import resolve_config
from punct.data.tokens import WordPieces, train_sentencepiece
from punct.engine.decode import predict_words
from punct.errors import MissingDataError, PunctInputError
from punct.export.system import load_system
from punct.kaldi import mark_mid_stream
from punct.labels import get_label_set
from punct.models.base import WordSeq
from punct.models.encoders import load_encoder, load_tokenizer
from punct.models.scratch import GEOMETRY_FILE, SPECIALS, Geometry, build_scratch_encoder
from punct.train.mlm import MlmOptions, pretrain_mlm
from punct.train.trainer import train_experiment
from punct.wordtable import WordRow, write_word_table

WORDS = ("ház", "házban", "kert", "kertben", "megy", "mentünk", "szép", "nagyon", "és",
         "de", "hogy", "nem", "igen", "mikor", "talán", "asztal", "asztalon", "könyv")
MARKS = {"de": ("COMMA",), "igen": ("PERIOD",), "mikor": ("QUESTION",)}
TINY = Geometry(hidden=32, layers=2, heads=2, ffn=64, max_positions=64, dropout=0.0)
LABELS = get_label_set("iwslt4").labels


def lines(n: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    return [[rng.choice(WORDS) for _ in range(rng.randint(4, 10))] for _ in range(n)]


@pytest.fixture(scope="module")
def sp_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    text = [" ".join(words) for words in lines(300, 0)]
    return train_sentencepiece(text, tmp_path_factory.mktemp("sp"), 40, "unigram")


@pytest.fixture(scope="module")
def encoder(sp_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_scratch_encoder(sp_model, tmp_path_factory.mktemp("enc") / "bert", TINY, 5)


def write_set(path: Path, n: int, seed: int) -> None:
    """de -> COMMA, igen -> PERIOD, mikor -> QUESTION, nothing elsewhere."""
    utts = {}
    for u, words in enumerate(lines(n, seed)):
        uid = f"{path.name}{u:04d}"
        utts[uid] = [WordRow(uid, i, w, w, MARKS.get(w, ()), "O", None, None, None)
                     for i, w in enumerate(words)]
    path.mkdir(parents=True, exist_ok=True)
    write_word_table(path / "words.tsv", utts)
    # random word strings whose last word has no final mark: blocks cut out of a stream
    mark_mid_stream(path, "random word strings, not whole documents")


def word_seq(words: list[str]) -> WordSeq:
    n = len(words)
    punct = np.zeros((n, len(LABELS)), dtype=np.float32)
    for i, w in enumerate(words):
        for mark in MARKS.get(w, ()):
            punct[i, LABELS.index(mark)] = 1.0
    return WordSeq("u", words, np.full(n, np.nan, np.float32), punct, np.zeros(n, np.int64))


def test_tokenizer_segments_as_sentencepiece(sp_model: Path, encoder: Path) -> None:
    pieces = WordPieces(sp_model.read_bytes())
    tok = load_tokenizer(encoder)
    n = len(pieces)
    words = [*WORDS, "kertházban", "xylofon"]  # unseen words; x and y are unknown letters
    ids = tok(words, add_special_tokens=False)["input_ids"]
    assert [tuple(i) for i in ids] == [pieces.ids(w) for w in words]
    assert pieces.unk_id in pieces.ids("xylofon") and max(len(i) for i in ids) > 1
    assert [tok.pad_token_id, tok.cls_token_id, tok.sep_token_id, tok.mask_token_id] == [
        n, n + 1, n + 2, n + 3]
    assert tok.unk_token_id == pieces.unk_id and len(tok) == n + len(SPECIALS)
    assert tok("ház és kert")["input_ids"] == [n + 1, *pieces.ids("ház"), *pieces.ids("és"),
                                             *pieces.ids("kert"), n + 2]
    config = json.loads((encoder / "config.json").read_text())
    assert (config["vocab_size"], config["hidden_size"], config["num_hidden_layers"],
            config["num_attention_heads"], config["intermediate_size"],
            config["max_position_embeddings"]) == (n + 4, 32, 2, 2, 64, 64)
    assert json.loads((encoder / GEOMETRY_FILE).read_text())["seed"] == 5


def test_weights_follow_the_seed(sp_model: Path, encoder: Path, tmp_path: Path) -> None:
    same = build_scratch_encoder(sp_model, tmp_path / "same", TINY, 5)
    other = build_scratch_encoder(sp_model, tmp_path / "other", TINY, 6)
    a, b, c = (load_file(str(d / "model.safetensors")) for d in (encoder, same, other))
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not torch.equal(a["embeddings.word_embeddings.weight"],
                           c["embeddings.word_embeddings.weight"])
    model = load_encoder(encoder)
    ids = torch.tensor([[1, 2, 3]])
    assert model(input_ids=ids).last_hidden_state.shape == (1, 3, 32)


def test_errors(sp_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(MissingDataError, match="sentencepiece model not found"):
        build_scratch_encoder(tmp_path / "none.model", tmp_path / "x")
    with pytest.raises(PunctInputError, match="heads=3 does not divide hidden=32"):
        build_scratch_encoder(sp_model, tmp_path / "x", Geometry(hidden=32, heads=3))
    bpe = train_sentencepiece([" ".join(w) for w in lines(200, 1)], tmp_path / "bpe", 40, "bpe")
    with pytest.raises(PunctInputError, match="needs a unigram sentencepiece model, got BPE"):
        build_scratch_encoder(bpe, tmp_path / "x")
    assert not (tmp_path / "x").exists()
    assert scratch_cli.main(["--sp-model", str(tmp_path / "none.model"),
                             "--out-dir", str(tmp_path / "y")]) == 2
    assert "none.model" in capsys.readouterr().err
    assert scratch_cli.main(["--sp-model", str(sp_model), "--out-dir", str(tmp_path / "z"),
                             "--hidden", "16", "--layers", "1", "--heads", "2", "--ffn", "32",
                             "--max-positions", "32"]) == 0
    assert json.loads((tmp_path / "z" / "config.json").read_text())["hidden_size"] == 16


# Per family: model options, optimizer, training utterances, stride, lowest best dev F1.
# The marks follow the words alone, so a family that learns reaches dev F1 1.0 here.
# Courtland's paper head (weights per window position, no shared path) does not learn
# that from a random encoder in 8 short epochs: its best dev F1 swung between 0.57 and
# 0.61 with the CPU's kernels (AVX2 or AVX-512, same seed), so it sat on any bound a
# test could set. With ``token_residual`` (a classifier shared by the positions) it
# reaches 1.0 by epoch 3 under AVX-512, AVX2 and scalar kernels alike
# (ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA, MKL_ENABLE_INSTRUCTIONS); the paper head's
# own learning is tested in tests/test_courtland.py.
SETTINGS = {
    "nagy": ({"hidden": 32, "dropout": 0.0, "encoder_lr": 3e-3},
             {"name": "adamw", "lr": 3e-3}, 160, 12, "mean", 0.9),
    "courtland": ({"hidden": 16, "dropout": 0.2, "encoder_lr": 3e-3, "freeze_encoder_epochs": 0,
                   "token_residual": True},
                  {"name": "lookahead_radam", "lr": 1e-2, "k": 6, "alpha": 0.5}, 400, 4, "sum",
                  0.9),
}


@pytest.mark.parametrize("family", ["nagy", "courtland"])
def test_family_trains_over_scratch_encoder_and_exports(family: str, encoder: Path,
                                                        tmp_path: Path) -> None:
    model, optimizer, n_train, stride, aggregate, min_f1 = SETTINGS[family]
    write_set(tmp_path / "train", n_train, 1)
    write_set(tmp_path / "dev", 30, 2)
    cfg = resolve_config({
        "family": family, "label_set": "iwslt4", "featurizer": {"encoder": str(encoder)},
        "model": model,
        "train": {"epochs": 8, "batch_size": 16, "window": 24, "stride": stride, "patience": 8,
                  "optimizer": optimizer, "warmup_epochs": 0, "grad_clip": 1.5, "seed": 3},
        "decode": {"window": 24, "stride": 8, "aggregate": aggregate},
    })
    exp = tmp_path / "exp"
    summary = train_experiment(cfg, tmp_path / "train", tmp_path / "dev", exp, threads=1,
                               quiet=True)
    history = json.loads((exp / "history.json").read_text())
    assert history[-1]["train_loss"] < 0.5 * history[0]["train_loss"]
    assert summary["dev_micro_f1"] > min_f1  # all-O gives 0
    out = tmp_path / "export"
    assert export_cli.main(["--exp-dir", str(exp), "--out", str(out)]) == 0
    a, b = load_system(exp), load_system(out)
    test = [word_seq("ház de kert igen szép mikor nem asztalon".split())]
    pa = predict_words(a.model, a.featurizer, test, 24, 8, aggregate=aggregate)
    pb = predict_words(b.model, b.featurizer, test, 24, 8, aggregate=aggregate)
    np.testing.assert_array_equal(pa.punct, pb.punct)
    if family == "nagy":
        assert ((pa.punct >= 0.5) == (test[0].punct > 0.5)).all()


def cyclic_lines(n: int, seed: int) -> list[str]:
    """Lines in which each word is followed by the next one of ``WORDS`` (cyclically):
    a masked word is predictable from its neighbours, not only from word frequencies."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        start, length = rng.randrange(len(WORDS)), rng.randint(4, 10)
        out.append(" ".join(WORDS[(start + i) % len(WORDS)] for i in range(length)))
    return out


def test_mlm_pretraining_lowers_dev_loss(encoder: Path, tmp_path: Path) -> None:
    report = pretrain_mlm(encoder, cyclic_lines(200, 3), tmp_path / "mlm",
                          MlmOptions(epochs=8, batch_size=8, block=32, lr=3e-3),
                          cyclic_lines(40, 4))
    assert len(report["epochs"]) == 8 and report["steps"] == 8 * math.ceil(
        report["train_blocks"] / 8)
    # the random encoder is at ln(#pieces) = 3.8 nats; 88 small steps take it down clearly
    assert report["dev_loss_before"] > 3.7
    assert report["epochs"][-1]["dev_loss"] < report["dev_loss_before"] - 0.3
    assert report["epochs"][-1]["train_loss"] < report["epochs"][0]["train_loss"]
    assert json.loads((tmp_path / "mlm" / "mlm.json").read_text())["steps"] == report["steps"]
    before, after = load_encoder(encoder), load_encoder(tmp_path / "mlm")
    assert not torch.equal(before.embeddings.word_embeddings.weight,
                           after.embeddings.word_embeddings.weight)
    assert load_tokenizer(tmp_path / "mlm")("ház")["input_ids"] == load_tokenizer(encoder)(
        "ház")["input_ids"]


def test_pretrain_cli(encoder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
                      ) -> None:
    write_set(tmp_path / "train", 20, 5)
    args = ["--encoder", str(encoder), "--train-dir", str(tmp_path / "train"),
            "--out-dir", str(tmp_path / "out"), "--epochs", "1", "--batch-size", "4",
            "--block", "16", "--max-steps", "3"]
    assert pretrain_cli.main(args) == 0
    assert json.loads((tmp_path / "out" / "mlm.json").read_text())["steps"] == 3
    bad = ["--encoder", str(encoder), "--train-dir", str(tmp_path / "missing"),
           "--out-dir", str(tmp_path / "o2")]
    assert pretrain_cli.main(bad) == 2
    assert "words.tsv" in capsys.readouterr().err


def test_mlm_precision_is_resolved_and_recorded(encoder: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    lines = cyclic_lines(20, 5)
    report = pretrain_mlm(encoder, lines, tmp_path / "fp32",
                          MlmOptions(epochs=1, batch_size=8, block=16, precision="fp32"))
    assert report["precision"] == "fp32"
    report = pretrain_mlm(encoder, lines, tmp_path / "bf16",
                          MlmOptions(epochs=1, batch_size=8, block=16, precision="bf16"))
    assert report["precision"] == "bf16" and report["epochs"][0]["train_loss"] > 0
    # auto follows the CPU: fp32 where it lacks native bf16
    monkeypatch.setattr("punct.engine.precision.cpu_flags", lambda *a, **k: set())
    report = pretrain_mlm(encoder, lines, tmp_path / "auto", MlmOptions(epochs=1, block=16))
    assert report["precision"] == "fp32"
    with pytest.raises(PunctInputError, match="precision"):
        pretrain_mlm(encoder, lines, tmp_path / "bad", MlmOptions(precision="fp8"))
