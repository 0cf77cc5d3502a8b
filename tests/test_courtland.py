"""Courtland family: fixed windows, window layer, masking, freezing schedule, training."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.tiny import MARKS, VOCAB, P, seq
from torch import nn

from punct.config import Config, OptimizerSection, deep_merge, load_config, resolve_config
from punct.engine.decode import predict_words
from punct.errors import PunctInputError
from punct.models.base import Registry
from punct.models.courtland import (
    CourtlandFeaturizer,
    CourtlandModel,
    make_featurizer,
    make_model,
)
from punct.models.encoders import load_encoder
from punct.train.lookahead import LookAhead
from punct.train.optim import build_optimizer
from punct.train.trainer import train_experiment
from punct.wordtable import WordRow, write_word_table

ROOT = Path(__file__).resolve().parents[1]
WINDOW = 16


def raw(encoder: Path, window: int = WINDOW, decode_window: int | None = None,
        **model: object) -> dict:
    """The plain config data of a small courtland system."""
    return {
        "family": "courtland", "label_set": "iwslt4",
        "featurizer": {"encoder": str(encoder)},
        "model": {"hidden": 8, "dropout": 0.0, **model},
        "train": {"window": window, "stride": window // 2},
        "decode": {"window": decode_window, "aggregate": "sum"},
    }


def config(encoder: Path, window: int = WINDOW, decode_window: int | None = None,
           **model: object) -> Config:
    """A resolved config (as the trainer receives it)."""
    return resolve_config(raw(encoder, window, decode_window, **model))


def write_set(path: Path, n: int, seed: int) -> None:
    """yes -> COMMA, stop -> PERIOD, huh -> QUESTION (stop/huh are several pieces); long
    utterances, so that sliding windows show each word at many window positions (the
    window layer has separate weights per position)."""
    rng = random.Random(seed)
    utts = {}
    for u in range(n):
        uid = f"{path.name}{u:04d}"
        words = [rng.choice([*VOCAB, "stop", "huh", "zebra"])
                 for _ in range(rng.randint(30, 50))]
        utts[uid] = [WordRow(uid, i, w, w, MARKS.get(w, ()), "O", None, None, None)
                     for i, w in enumerate(words)]
    path.mkdir(parents=True, exist_ok=True)
    write_word_table(path / "words.tsv", utts)


def test_windows_padded_to_fixed_length(tiny_dir: Path, tmp_path: Path) -> None:
    assert Registry.get("courtland").make_model is make_model
    feat = make_featurizer(config(tiny_dir))
    assert feat.fixed_window == WINDOW and feat.label_position == "last"
    wins = feat.windows([seq("the zebra yes huh".split()), seq(["go"], offset=4)], WINDOW, 8)
    batch = feat.collate(wins)
    assert all(v.shape[:2] == (2, WINDOW) for v in batch.values())
    # [CLS] the z e b r a yes h u h [SEP] + 4 pads; slots on last pieces 1, 6, 7, 10
    assert batch["word_ids"][0].tolist() == [-1, 0, -1, -1, -1, -1, 1, 2, -1, -1, 3, -1,
                                             -1, -1, -1, -1]
    assert batch["attention_mask"][0].tolist() == [1] * 12 + [0] * 4
    assert batch["attention_mask"][1].tolist() == [1] * 3 + [0] * 13
    assert batch["input_ids"][1, 3:].eq(feat.tokenizer.pad_token_id).all()
    assert batch["punct"][0, 10].tolist() == [0.0, 0.0, 1.0]
    feat.save(tmp_path / "feat")
    back = Registry.get("courtland").load_featurizer(tmp_path / "feat", config(tiny_dir))
    assert isinstance(back, CourtlandFeaturizer) and back.fixed_window == WINDOW
    assert back.label_position == "last"


def test_decoder_window_must_equal_training_window(tiny_dir: Path) -> None:
    feat = make_featurizer(config(tiny_dir))
    with pytest.raises(PunctInputError, match=r"train\.window=16"):
        feat.windows([seq(["the"])], 24, 8)
    with pytest.raises(PunctInputError, match=r"decode\.window: 24 differs from "
                                              r"train\.window=16"):
        config(tiny_dir, decode_window=24)
    assert make_model(config(tiny_dir, decode_window=WINDOW), feat).window == WINDOW


def test_head_geometry_shapes_and_padding_independence(tiny_dir: Path) -> None:
    feat = make_featurizer(config(tiny_dir))
    model = make_model(config(tiny_dir, hidden=8, dropout=0.2), feat).eval()
    assert (model.token_layer.in_features, model.token_layer.out_features) == (32, 8)
    assert model.window_layer.in_features == WINDOW * 8
    assert model.window_layer.out_features == WINDOW * P
    assert isinstance(model.norm, nn.BatchNorm1d) and model.norm.num_features == WINDOW * 8
    assert model.dropout.p == 0.2
    batch = feat.collate(feat.windows([seq("the zebra yes".split()), seq(["huh"])], WINDOW, 8))
    pred = model.predict(batch)
    assert pred.punct.shape == (2, WINDOW, P) and pred.cap is None
    with_o = nn.functional.pad(pred.extra["punct_logits"], (1, 0))  # iwslt4: softmax
    assert torch.allclose(pred.punct, torch.softmax(with_o, dim=-1)[..., 1:])
    # whatever sits in the padded positions (masked for attention) changes nothing
    noisy = dict(batch, input_ids=batch["input_ids"].clone())
    pad = batch["attention_mask"] == 0
    noisy["input_ids"][pad] = 7
    assert torch.allclose(model.predict(noisy).punct, pred.punct, atol=1e-6)
    # a window that is not train.window long is refused
    short = {k: v[:, : WINDOW - 1] for k, v in batch.items()}
    with pytest.raises(PunctInputError, match="16 positions"):
        model(short)


def test_window_layer_bias_starts_at_mark_log_odds(tiny_dir: Path) -> None:
    feat = make_featurizer(config(tiny_dir))
    assert torch.equal(make_model(config(tiny_dir), feat).window_layer.bias,
                       torch.zeros(WINDOW * P))  # not fitted: no prior
    feat.fit([seq("the yes we go".split()), seq("it is huh yes".split())])  # 8 words
    bias = make_model(config(tiny_dir), feat).window_layer.bias.view(WINDOW, P)
    # iwslt4 is exclusive: log(rate / rate of O); COMMA 2/8, PERIOD 0/8 -> clipped to 1e-4,
    # QUESTION 1/8, O 5/8 (less the clipped PERIOD)
    rates = np.array([2 / 8, 1e-4, 1 / 8])
    expected = torch.tensor(np.log(rates) - np.log(1 - rates.sum()))
    assert torch.allclose(bias, expected.float().expand(WINDOW, P), atol=1e-5)


def test_loss_only_on_word_slots(tiny_dir: Path) -> None:
    feat = make_featurizer(config(tiny_dir))
    model = make_model(config(tiny_dir), feat).eval()
    batch = feat.collate(feat.windows([seq("the zebra yes huh".split())], WINDOW, 8))
    slots = batch["word_ids"] >= 0
    assert int(slots.sum()) == 4
    with torch.no_grad():
        loss = model.loss(batch)
        logits = model(batch)
        target = batch["punct"][slots]  # iwslt4: one class of [O, marks] per slot
        index = torch.where(target.sum(-1) > 0, target.argmax(-1) + 1, 0)
        manual = nn.functional.cross_entropy(nn.functional.pad(logits[slots], (1, 0)), index)
        assert loss.item() == pytest.approx(manual.item(), rel=1e-6)
        noisy = dict(batch, punct=batch["punct"].clone())
        noisy["punct"][~slots] = 1.0
        assert model.loss(noisy).item() == pytest.approx(loss.item(), rel=1e-6)


def test_single_window_batch_trains(tiny_dir: Path) -> None:
    """Batch norm has no batch statistics for one window: running statistics are used."""
    feat = make_featurizer(config(tiny_dir))
    model = make_model(config(tiny_dir), feat).train()
    batch = feat.collate(feat.windows([seq("the yes huh".split())], WINDOW, 8))
    loss = model.loss(batch)
    loss.backward()
    assert torch.isfinite(loss) and model.window_layer.weight.grad is not None
    assert model.norm.num_batches_tracked.item() == 0


def test_frozen_then_unfrozen_encoder(tiny_dir: Path) -> None:
    feat = make_featurizer(config(tiny_dir))
    model = make_model(config(tiny_dir, freeze_encoder_epochs=2), feat)
    opt = build_optimizer(model, OptimizerSection(name="lookahead_radam", lr=1e-3))
    assert isinstance(opt, LookAhead)
    in_groups = {id(p) for g in opt.param_groups for p in g["params"]}
    assert {id(p) for p in model.parameters()} <= in_groups  # frozen ones too
    batch = feat.collate(feat.windows([seq("the zebra yes".split()), seq(["huh"])], WINDOW, 8))
    for epoch in (1, 2):
        model.on_epoch_start(epoch)
        model.train()
        assert not model.encoder.training
        assert not any(p.requires_grad for p in model.encoder.parameters())
        cached = model.encode(batch)
        with torch.no_grad():
            direct = model.encoder(input_ids=batch["input_ids"],
                                   attention_mask=batch["attention_mask"]).last_hidden_state
        real = batch["attention_mask"].bool()
        assert torch.allclose(cached[real], direct[real], atol=1e-6)
        assert len(model.state_cache)
    model.on_epoch_start(3)
    model.train()
    assert model.encoder.training and not model.state_cache.states
    embeddings = model.encoder.embeddings.word_embeddings.weight
    assert embeddings.requires_grad
    model.loss(batch).backward()
    assert embeddings.grad is not None and embeddings.grad.abs().sum() > 0


def test_shipped_configs(tiny_dir: Path) -> None:
    def resolved(name: str) -> Config:
        return load_config(ROOT / name)  # validated, lookahead_radam included

    cpu = resolved("conf/model/courtland.yaml")
    assert cpu.family == "courtland" and cpu.decode.aggregate == "sum"
    assert cpu.decode.window == cpu.train.window
    assert cpu.train.optimizer.name == "lookahead_radam"
    assert (cpu.train.optimizer.k, cpu.train.optimizer.alpha) == (6, 0.5)
    paper = resolved("conf/model/paper/courtland_roberta_base.yaml")
    assert paper.featurizer.encoder == "roberta-base" and paper.label_set == "iwslt4"
    assert paper.model.hidden == 1500 and paper.model.freeze_encoder_epochs == 9
    assert paper.train.optimizer.lr == 1e-5 and paper.train.window == 100
    tiny = resolved("conf/model/tiny/courtland.yaml")
    for cfg in (cpu, paper, tiny):  # every key is accepted (tiny encoder, small window)
        cfg = resolve_config(cfg, [
            "label_set=iwslt4", "model.hidden=4", "model.loss.pos_weight=null",
            "model.loss.class_weight=auto", f"featurizer.encoder={tiny_dir}",
            "featurizer.prefix_space=false", f"train.window={WINDOW}",
            f"train.stride={WINDOW // 2}", f"decode.window={WINDOW}", "decode.stride=null"])
        feat = make_featurizer(cfg)
        feat.fit([seq("the yes huh".split())])
        model = make_model(cfg, feat)
        assert isinstance(model, CourtlandModel)
        assert isinstance(build_optimizer(model, cfg.train.optimizer), torch.optim.Optimizer)


def test_option_errors_name_the_key_and_the_allowed_keys(tiny_dir: Path) -> None:
    with pytest.raises(PunctInputError, match=r"unknown key model\.window_rate; allowed: "
                                              r".*token_residual, window_lr"):
        config(tiny_dir, window_rate=1e-5)
    with pytest.raises(PunctInputError, match=r"unknown key model\.loss\.class_wieght; "
                                              r"allowed: class_weight"):
        config(tiny_dir, loss={"class_wieght": "auto"})
    with pytest.raises(PunctInputError, match=r"model\.hidden_activation = 'relu6' is not "
                                              r"one of: none, relu, gelu, tanh"):
        config(tiny_dir, hidden_activation="relu6")
    with pytest.raises(PunctInputError, match=r"model\.freeze_encoder_epochs = -1 is outside"):
        config(tiny_dir, freeze_encoder_epochs=-1)


def test_training_learns_pattern_with_lookahead(tiny_dir: Path, tmp_path: Path) -> None:
    write_set(tmp_path / "train", 20, 1)
    write_set(tmp_path / "dev", 5, 2)
    cfg = resolve_config(deep_merge(raw(tiny_dir, hidden=16, dropout=0.1,
                                        freeze_encoder_epochs=2, encoder_lr=1e-3), {
        "train": {"epochs": 7, "batch_size": 16, "window": 24, "stride": 2, "patience": 7,
                  "optimizer": {"name": "lookahead_radam", "lr": 3e-2, "k": 6, "alpha": 0.5},
                  "seed": 3},
        "decode": {"window": 24, "stride": 8, "aggregate": "sum"},
    }))
    summary = train_experiment(cfg, tmp_path / "train", tmp_path / "dev", tmp_path / "exp",
                               threads=1, quiet=True)
    assert summary["dev_micro_f1"] > 0.9  # all-O gives 0
    family = Registry.get("courtland")
    feat = family.load_featurizer(tmp_path / "exp" / "featurizer", cfg)
    model = family.make_model(cfg, feat)
    model.load_state_dict(torch.load(tmp_path / "exp" / "best.pt", weights_only=True)["model"])
    last = torch.load(tmp_path / "exp" / "last.pt", weights_only=True)
    assert last["optimizer"]["k"] == 6 and last["optimizer"]["fast_steps"] > 0
    initial = load_encoder(tiny_dir).embeddings.word_embeddings.weight
    trained = last["model"]["encoder.embeddings.word_embeddings.weight"]
    assert not torch.allclose(initial, trained)  # unfrozen after epoch 2
    seqs = [seq("we go huh the yes it stop zebra a of yes to is stop huh it we".split())]
    pred = predict_words(model, feat, seqs, 24, 8, aggregate="sum")
    assert pred.n_windows >= 3 and pred.counts.max() >= 2
    assert (pred.punct >= 0.5).tolist() == (seqs[0].punct > 0.5).tolist()


def test_token_residual_starts_per_token_and_learns_across_positions(tiny_dir: Path) -> None:
    """``token_residual``: the window layer starts at zero, so at first each position's
    logits are the prior plus the shared classifier of its own state; both paths train."""
    feat = make_featurizer(config(tiny_dir))
    model = make_model(config(tiny_dir, token_residual=True), feat).eval()
    assert torch.count_nonzero(model.window_layer.weight) == 0
    assert model.token_classifier is not None and model.token_classifier.in_features == 8
    batch = feat.collate(feat.windows([seq("the zebra yes huh we go".split())], WINDOW, 8))
    with torch.no_grad():
        logits = model(batch)
        changed = dict(batch, input_ids=batch["input_ids"].clone())
        changed["input_ids"][0, 5] = 9  # another word at position 5 ...
        other = model(changed)
    # ... changes nothing at position 1 beyond what the encoder's attention carries: with
    # the encoder's output fixed, the head is position-wise
    states = model.token_layer(model.encode(batch))
    states = states * batch["attention_mask"].unsqueeze(-1).to(states.dtype)
    normed = model.norm(states.reshape(1, -1)).view(1, WINDOW, -1)
    expected = model.window_layer.bias.view(WINDOW, P) + model.token_classifier(normed)
    assert torch.allclose(logits, expected, atol=1e-5)
    assert not torch.allclose(logits[0, 5], other[0, 5])
    model.train()
    loss = model.loss(feat.collate(feat.windows(
        [seq("the yes huh".split()), seq("we stop it".split())], WINDOW, 8)))
    loss.backward()
    assert model.token_classifier.weight.grad is not None
    assert torch.count_nonzero(model.window_layer.weight.grad) > 0
    plain = make_model(config(tiny_dir), feat)
    assert plain.token_classifier is None and torch.count_nonzero(plain.window_layer.weight) > 0


def test_window_lr_puts_the_window_layer_in_its_own_group(tiny_dir: Path) -> None:
    feat = make_featurizer(config(tiny_dir))
    model = make_model(config(tiny_dir, token_residual=True, window_lr=1e-5,
                              encoder_lr=1e-4), feat)
    opt = build_optimizer(model, OptimizerSection(name="lookahead_radam", lr=1e-3))
    lrs = [g["lr"] for g in opt.param_groups]
    assert lrs == [1e-4, 1e-3, 1e-5]
    window = {id(p) for p in model.window_layer.parameters()}
    assert {id(p) for p in opt.param_groups[2]["params"]} == window
    assert not window & {id(p) for p in opt.param_groups[1]["params"]}
    seen = [id(p) for g in opt.param_groups for p in g["params"]]
    assert sorted(seen) == sorted(id(p) for p in model.parameters())
