"""Nagy family: last-piece slots, loss masking, head geometry, learning rates, training."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.tiny import VOCAB, P, seq  # noqa: F401  (tiny_dir reads the module's VOCAB)
from helpers.tiny import nagy_raw as raw
from helpers.tiny import write_marked_set as write_set
from torch import nn

from punct.config import Config, OptimizerSection, load_config, resolve_config
from punct.engine.decode import load_experiment, predict_words
from punct.errors import PunctInputError
from punct.models.base import Registry
from punct.models.nagy import NagyModel, make_featurizer, make_model
from punct.models.subword.featurizer import SubwordFeaturizer
from punct.train.optim import build_optimizer
from punct.train.trainer import train_experiment

ROOT = Path(__file__).resolve().parents[1]


def config(encoder: Path, **model: object) -> Config:
    return resolve_config(raw(encoder, **model))


def test_registered_and_slot_on_last_piece(tiny_dir: Path, tmp_path: Path) -> None:
    assert Registry.get("nagy").make_model is make_model
    feat = make_featurizer(config(tiny_dir))
    assert feat.label_position == "last"
    words = ["the", "zebra", "yes", "huh"]
    pieces = feat.word_pieces(words)
    assert [len(p) for p in pieces] == [1, 5, 1, 3]  # z ##e ##b ##r ##a, h ##u ##h
    (win,) = feat.windows([seq(words, offset=7)], window=16, stride=16)
    # [CLS] the z e b r a yes h u h [SEP]: slots at 1, 6, 7, 10
    assert win["word_ids"].tolist() == [-1, 7, -1, -1, -1, -1, 8, 9, -1, -1, 10, -1]
    assert win["punct"][7].tolist() == [1.0, 0.0, 0.0]  # yes -> COMMA
    assert win["punct"][10].tolist() == [0.0, 0.0, 1.0]  # huh -> QUESTION on its last piece
    assert win["punct"][8:10].sum() == 0 and win["punct"][2:6].sum() == 0
    assert win["prev_pos"][10] == 7
    feat.save(tmp_path / "feat")
    back = Registry.get("nagy").load_featurizer(tmp_path / "feat", config(tiny_dir))
    assert back.label_position == "last"
    first = SubwordFeaturizer(resolve_config({  # autopunct's default is unchanged
        "family": "autopunct", "label_set": "iwslt4", "featurizer": {"encoder": str(tiny_dir)}}))
    (win0,) = first.windows([seq(words)], window=16, stride=16)
    assert np.flatnonzero(win0["word_ids"] >= 0).tolist() == [1, 2, 7, 8]


def test_head_geometry_and_shapes(tiny_dir: Path) -> None:
    model = make_model(config(tiny_dir, hidden=1568, dropout=0.2), make_featurizer(
        config(tiny_dir)))
    kinds = [type(m) for m in model.head]
    assert kinds == [nn.Dropout, nn.Linear, nn.ReLU, nn.Dropout, nn.Linear]
    assert model.head[0].p == 0.2 and model.head[3].p == 0.2
    assert (model.head[1].in_features, model.head[1].out_features) == (32, 1568)
    assert (model.head[4].in_features, model.head[4].out_features) == (1568, P)
    feat = make_featurizer(config(tiny_dir))
    batch = feat.collate(feat.windows([seq("the zebra yes".split()), seq(["huh"])], 16, 16))
    assert batch["input_ids"].shape == (2, 9)
    model.eval()
    pred = model.predict(batch)
    assert pred.punct.shape == (2, 9, P) and pred.cap is None
    # iwslt4 is exclusive: a softmax over O (logit 0) and the marks
    with_o = nn.functional.pad(pred.extra["punct_logits"], (1, 0))
    assert torch.allclose(pred.punct, torch.softmax(with_o, dim=-1)[..., 1:])
    assert bool((pred.punct.sum(dim=-1) < 1).all())
    assert model.loss(batch).ndim == 0


def test_loss_only_on_last_piece_slots(tiny_dir: Path) -> None:
    feat = make_featurizer(config(tiny_dir))
    model = make_model(config(tiny_dir), feat).eval()
    batch = feat.collate(feat.windows([seq("the zebra yes huh".split())], 16, 16))
    slots = batch["word_ids"] >= 0
    with torch.no_grad():
        loss = model.loss(batch)
        logits = model(batch)
    target = batch["punct"][slots]
    index = torch.where(target.sum(-1) > 0, target.argmax(-1) + 1, 0)
    manual = nn.functional.cross_entropy(nn.functional.pad(logits[slots], (1, 0)), index)
    assert loss.item() == pytest.approx(manual.item(), rel=1e-6)
    noisy = dict(batch, punct=batch["punct"].clone())
    noisy["punct"][~slots] = 1.0  # targets off the slots must not matter
    with torch.no_grad():
        assert model.loss(noisy).item() == pytest.approx(loss.item(), rel=1e-6)
    moved = dict(batch, punct=batch["punct"].clone())
    moved["punct"][0, 8, 2] = 1.0  # first piece of huh is not a slot
    moved["punct"][0, 10, 2] = 0.0  # its last piece is
    moved_target = moved["punct"][slots]
    moved_index = torch.where(moved_target.sum(-1) > 0, moved_target.argmax(-1) + 1, 0)
    assert moved_index.tolist() != index.tolist()
    with torch.no_grad():
        moved_loss = model.loss(moved).item()
    expected = nn.functional.cross_entropy(nn.functional.pad(logits[slots], (1, 0)), moved_index)
    assert moved_loss == pytest.approx(expected.item(), rel=1e-6)
    assert abs(moved_loss - loss.item()) > 1e-5


def test_learning_rates_per_group(tiny_dir: Path) -> None:
    feat = make_featurizer(config(tiny_dir))
    model = make_model(config(tiny_dir, encoder_lr=3e-5), feat)
    opt = build_optimizer(model, OptimizerSection(name="adamw", lr=1e-4, weight_decay=0.01))
    enc, head = opt.param_groups
    assert enc["lr"] == 3e-5 and head["lr"] == 1e-4
    assert {id(p) for p in enc["params"]} == {id(p) for p in model.encoder.parameters()}
    assert {id(p) for p in head["params"]} == {id(p) for p in model.head.parameters()}


def test_layerwise_lr_decay_groups(tiny_dir: Path) -> None:
    feat = make_featurizer(config(tiny_dir))
    model = make_model(config(tiny_dir, encoder_lr=1e-3, encoder_lr_decay=0.5), feat)
    opt = build_optimizer(model, OptimizerSection(name="adamw", lr=1e-2))
    *encoder, head = opt.param_groups
    n = len(model.encoder.encoder.layer)  # the tiny BERT has 2 layers
    assert [g["lr"] for g in encoder] == [1e-3 * 0.5 ** n, *(1e-3 * 0.5 ** (n - 1 - i)
                                                            for i in range(n))]
    assert head["lr"] == 1e-2
    top = {id(p) for p in model.encoder.encoder.layer[-1].parameters()}
    assert {id(p) for p in encoder[-1]["params"]} == top
    embeddings = {id(p) for p in model.encoder.embeddings.parameters()}
    assert embeddings <= {id(p) for p in encoder[0]["params"]}
    grouped = [id(p) for g in opt.param_groups for p in g["params"]]
    assert sorted(grouped) == sorted(id(p) for p in model.parameters())  # each once
    # without model.encoder_lr the base is the optimizer's lr
    plain = make_model(config(tiny_dir, encoder_lr_decay=0.5), feat)
    optimizer = build_optimizer(plain, OptimizerSection(name="adamw", lr=1e-2))
    lrs = [g["lr"] for g in optimizer.param_groups]
    assert lrs[n] == 1e-2 and lrs[0] == 1e-2 * 0.5 ** n
    with pytest.raises(PunctInputError, match=r"model\.encoder_lr_decay = 1\.5 is outside"):
        config(tiny_dir, encoder_lr_decay=1.5)
    with pytest.raises(PunctInputError, match=r"model\.encoder_lr_decay: must be in \(0, 1\]"):
        config(tiny_dir, encoder_lr_decay=0.0)


def test_shipped_configs(tiny_dir: Path) -> None:
    cpu = load_config(ROOT / "conf/model/nagy.yaml")
    assert cpu.family == "nagy" and cpu.featurizer.label_position == "last"
    assert cpu.model.hidden == 1568 and cpu.model.dropout == 0.2
    assert cpu.model.encoder_lr == 3e-5 and cpu.train.optimizer.lr == 1e-4
    assert cpu.train.grad_clip == 1.5 and cpu.decode.aggregate == "mean"
    paper = load_config(ROOT / "conf/model/paper/nagy_bert_base.yaml")
    assert paper.featurizer.encoder == "bert-base-uncased"
    assert paper.label_set == "iwslt4" and paper.train.batch_size == 4
    assert paper.train.window == 512 and paper.decode.stride == 8
    tiny = load_config(ROOT / "conf/model/tiny/nagy.yaml")
    for cfg in (cpu, paper, tiny):  # every model key is accepted (tiny encoder swapped in)
        cfg = resolve_config(cfg, ["label_set=iwslt4", f"featurizer.encoder={tiny_dir}",
                                   "featurizer.prefix_space=false",
                                   "model.loss={class_weight: auto}"])
        feat = make_featurizer(cfg)
        feat.fit([seq("the yes huh".split())])
        assert isinstance(make_model(cfg, feat), NagyModel)


def test_option_errors_name_the_key_and_the_allowed_keys(tiny_dir: Path) -> None:
    with pytest.raises(PunctInputError, match=r"unknown key model\.loss\.pos_wieght; "
                                              r"allowed: class_weight, .*pos_weight_max"):
        config(tiny_dir, loss={"pos_wieght": "auto"})
    with pytest.raises(PunctInputError, match=r"unknown key model\.head; allowed: "
                                              r"activation, dropout, encoder_lr"):
        config(tiny_dir, head={"hidden": 3})
    with pytest.raises(PunctInputError, match=r"model\.activation = 'swish' is not one of: "
                                              r"none, relu, gelu, tanh"):
        config(tiny_dir, activation="swish")
    with pytest.raises(PunctInputError, match=r"featurizer\.label_position = 'middle'"):
        resolve_config({**raw(tiny_dir), "featurizer": {"label_position": "middle"}})
    with pytest.raises(PunctInputError, match=r"model\.loss\.pos_weight: does not apply to "
                                              r"the exclusive label set iwslt4"):
        config(tiny_dir, loss={"pos_weight": "auto"})
    with pytest.raises(PunctInputError, match=r"model\.loss\.class_weight: must be null, "
                                              r"'auto' or 4 numbers"):
        config(tiny_dir, loss={"class_weight": [1, 2]})
    with pytest.raises(PunctInputError, match=r"class_weight: 'often': expected null, auto"):
        config(tiny_dir, loss={"class_weight": "often"})


def test_training_learns_pattern_and_decodes(tiny_dir: Path, tmp_path: Path) -> None:
    write_set(tmp_path / "train", 160, 1)
    write_set(tmp_path / "dev", 30, 2)
    cfg = resolve_config({
        **raw(tiny_dir, hidden=32, dropout=0.1, encoder_lr=1e-3),
        "train": {"epochs": 6, "batch_size": 16, "window": 24, "stride": 12, "patience": 6,
                  "optimizer": {"name": "adamw", "lr": 3e-3}, "warmup_epochs": 1,
                  "grad_clip": 1.5, "seed": 3},
        "decode": {"window": 24, "stride": 8, "aggregate": "mean"},
    })
    summary = train_experiment(cfg, tmp_path / "train", tmp_path / "dev", tmp_path / "exp",
                               threads=1, quiet=True)
    assert summary["dev_micro_f1"] > 0.9  # all-O gives 0
    exp = load_experiment(tmp_path / "exp")
    assert isinstance(exp.model, NagyModel) and exp.featurizer.label_position == "last"
    seqs = [seq("we go huh the yes it stop zebra".split())]
    pred = predict_words(exp.model, exp.featurizer, seqs, 24, 8, aggregate="mean")
    decided = pred.punct >= 0.5
    assert decided.tolist() == (seqs[0].punct > 0.5).tolist()
