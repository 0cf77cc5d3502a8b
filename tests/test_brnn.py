"""The brnn family (punctuator2): featurizer slots, forward shapes/masking, marginals,
zero-initialised fusion, stage-2 freezing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from punct.config import Config, OptimizerSection, load_config, resolve_config
from punct.errors import PunctInputError
from punct.labels import get_label_set
from punct.models import Registry
from punct.models import brnn as brnn_module
from punct.models.base import WordSeq
from punct.models.brnn import (
    IGNORE,
    BRNNFeaturizer,
    BRNNPause,
    BRNNText,
    is_numeric,
    make_model,
    marginals_to_words,
)
from punct.train.optim import make_optimizer

FULL = get_label_set("full13")
L = FULL.labels.index


def seq(words: list[str], marks: list[tuple[str, ...]], offset: int = 0,
        pauses: list[float] | None = None) -> WordSeq:
    punct = np.zeros((len(words), len(FULL.labels)), dtype=np.float32)
    for i, ms in enumerate(marks):
        for m in ms:
            punct[i, L(m)] = 1
    p = np.array(pauses if pauses is not None else [np.nan] * len(words), dtype=np.float32)
    return WordSeq("u", words, p, punct, np.zeros(len(words), dtype=np.int64), offset)


def config(**model: object) -> Config:
    return resolve_config({"family": "brnn", "label_set": "full13",
                           "featurizer": {"min_count": 1}, "model": {"hidden": 8, **model}})


@pytest.fixture()
def feat() -> BRNNFeaturizer:
    f = BRNNFeaturizer.from_config(config())
    f.fit([
        seq(["yes", "he", "said", "hello"], [("COMMA",), (), (), ("PERIOD",)]),
        seq(["so", "quote", "me", "now"], [(), ("COMMA",), ("OPEN_QUOTE",), ("QUOTE", "PERIOD")]),
        seq(["yes", "1990s", "yes"], [("COMMA",), (), ("PERIOD",)]),
    ])
    return f


def test_registered() -> None:
    assert Registry.get("brnn").make_model is make_model


def test_vocab_and_numbers(feat: BRNNFeaturizer) -> None:
    assert feat.vocab[:4] == ["<PAD>", "<UNK>", "<END>", "<NUM>"]
    assert feat.vocab[4] == "yes"  # most frequent first
    assert is_numeric("1990s") and is_numeric("3d") and not is_numeric("covid19")
    assert feat.token_id("2024") == feat.index["<NUM>"]
    assert feat.token_id("unseen") == feat.index["<UNK>"]
    counted = BRNNFeaturizer(FULL.labels, min_count=2)
    counted.fit([seq(["a", "a", "b"], [(), (), ()])])
    assert counted.vocab == ["<PAD>", "<UNK>", "<END>", "<NUM>", "a"]


def test_slot_combos_put_opening_marks_in_the_gap(feat: BRNNFeaturizer) -> None:
    s = seq(["so", "quote", "me", "now"], [(), ("COMMA",), ("OPEN_QUOTE",), ("QUOTE", "PERIOD")])
    slots = feat.slot_combos(s)
    # slot k precedes word k: slot 2 = COMMA after "quote" + OPEN_QUOTE before "me"
    assert slots == [(), (), tuple(sorted((L("COMMA"), L("OPEN_QUOTE")))), (),
                     tuple(sorted((L("PERIOD"), L("QUOTE"))))]
    names = feat.combo_names()
    assert names[0] == "O"
    assert set(names) == {"O", "COMMA", "PERIOD", "COMMA|OPEN_QUOTE", "PERIOD|QUOTE"}
    assert names.index("COMMA") == 1  # most frequent combination after O


def test_unseen_combo_maps_to_nearest(feat: BRNNFeaturizer) -> None:
    assert feat.combo_id((L("COMMA"), L("OPEN_QUES"))) == feat.combo_index[(L("COMMA"),)]
    assert feat.combo_id((L("EXCLAMATION"),)) == 0


def test_windows_tokens_targets_pauses(feat: BRNNFeaturizer) -> None:
    s = seq(["so", "quote", "me", "now"], [(), ("COMMA",), ("OPEN_QUOTE",), ("QUOTE", "PERIOD")],
            offset=10, pauses=[0.1, 0.5, 0.2, 0.9])
    wins = feat.windows([s], window=2, stride=2)
    assert len(wins) == 2
    first, second = wins
    end = feat.index["<END>"]
    ids = [feat.index[w] for w in ("so", "quote", "me", "now")]
    assert first["ids"].tolist() == [end, ids[0], ids[1], ids[2]]
    assert first["word_ids"].tolist() == [-1, 10, 11, -1]
    assert second["ids"].tolist() == [ids[1], ids[2], ids[3], end]
    assert second["word_ids"].tolist() == [-1, 12, 13, -1]
    cq = feat.combo_index[tuple(sorted((L("COMMA"), L("OPEN_QUOTE"))))]
    qp = feat.combo_index[tuple(sorted((L("PERIOD"), L("QUOTE"))))]
    assert first["target"].tolist() == [IGNORE, 0, 0, cq]
    assert second["target"].tolist() == [IGNORE, cq, 0, qp]
    np.testing.assert_allclose(first["pauses"], [0, 0, 0.1, 0.5], atol=1e-6)
    np.testing.assert_allclose(second["pauses"], [0, 0.5, 0.2, 0.9], atol=1e-6)


def test_save_load_roundtrip(feat: BRNNFeaturizer, tmp_path) -> None:
    feat.save(tmp_path)
    back = BRNNFeaturizer.load(tmp_path, config())
    assert back.vocab == feat.vocab and back.combos == feat.combos
    with pytest.raises(ValueError, match="labels"):
        BRNNFeaturizer.load(tmp_path, config().replace(label_set="iwslt4"))


def test_forward_shapes_and_masking(feat: BRNNFeaturizer) -> None:
    torch.manual_seed(0)
    model = make_model(config(), feat)
    assert isinstance(model, BRNNText)
    for p in (model.fuse_c, model.fuse_f, model.fuse_h, model.out):  # break the symmetry
        torch.nn.init.normal_(p.weight, std=0.3)
    short = seq(["yes", "he"], [("COMMA",), ("PERIOD",)])
    long = seq(["so", "quote", "me", "now", "yes", "he"], [()] * 6, offset=2)
    wins = feat.windows([short, long], window=8, stride=8)
    batch = feat.collate(wins)
    assert batch["ids"].shape == (2, 8) and batch["lengths"].tolist() == [4, 8]
    model.eval()
    pred = model.predict(batch)
    assert pred.punct.shape == (2, 8, len(FULL.labels)) and pred.cap is None
    assert pred.extra["slot_probs"].shape == (2, 7, len(feat.combos))
    loss = model.loss(batch)
    assert loss.ndim == 0 and torch.isfinite(loss)
    alone = model.predict(feat.collate(wins[:1]))
    torch.testing.assert_close(pred.punct[0, :4], alone.punct[0], atol=1e-5, rtol=1e-4)
    # edge tokens carry no prediction
    assert torch.all(pred.punct[:, 0] == 0)
    assert torch.all(pred.punct[0, 3] == 0)


def test_fusion_and_output_start_at_zero(feat: BRNNFeaturizer) -> None:
    model = make_model(config(), feat)
    for layer in (model.fuse_c, model.fuse_f, model.fuse_h, model.out):
        assert torch.count_nonzero(layer.weight) == 0
    assert torch.count_nonzero(model.out.bias) == 0
    batch = feat.collate(feat.windows([seq(["yes", "he"], [(), ()])], 8, 8))
    probs = model.predict(batch).extra["slot_probs"]
    torch.testing.assert_close(probs, torch.full_like(probs, 1 / len(feat.combos)))
    # attention and the GRUs are not zero
    assert torch.count_nonzero(model.att_c.weight) > 0


def test_marginalisation_of_combinations() -> None:
    # labels: 0 = COMMA (closing), 1 = OPEN_QUOTE (opening); combos O, COMMA, COMMA|OPEN_QUOTE
    membership = torch.tensor([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]])
    opening = torch.tensor([False, True])
    slots = torch.tensor([[[0.5, 0.2, 0.3],    # slot 1 (before word token 1)
                           [0.1, 0.6, 0.3],    # slot 2
                           [0.7, 0.1, 0.2]]])  # slot 3 (after word token 2)
    out = marginals_to_words(slots, membership, opening)
    assert out.shape == (1, 4, 2)
    # token 1: OPEN_QUOTE from slot 1 (0.3), COMMA from slot 2 (0.6 + 0.3)
    torch.testing.assert_close(out[0, 1], torch.tensor([0.9, 0.3]))
    # token 2: OPEN_QUOTE from slot 2 (0.3), COMMA from slot 3 (0.1 + 0.2)
    torch.testing.assert_close(out[0, 2], torch.tensor([0.3, 0.3]))
    assert torch.all(out[0, 0] == 0) and torch.all(out[0, 3] == 0)


def test_stage2_freezes_stage1(feat: BRNNFeaturizer) -> None:
    torch.manual_seed(0)
    stage1 = make_model(config(), feat)
    cfg = config(pause=True, pause_hidden=6)
    with pytest.raises(ValueError, match="init_from"):
        make_model(cfg, feat)
    model = make_model(cfg.replace(init_config=config()), feat)
    assert isinstance(model, BRNNPause)
    model.load_init(stage1.state_dict())
    before = {k: v.clone() for k, v in model.stage1.state_dict().items()}
    torch.testing.assert_close(before, stage1.state_dict())
    params = [p for p in model.parameters() if p.requires_grad]
    assert {id(p) for p in params} == {id(p) for n, p in model.named_parameters()
                                       if not n.startswith("stage1.")}
    opt = make_optimizer(params, OptimizerSection(name="adagrad", lr=0.1))
    new_before = model.out.weight.clone()
    model.train()
    assert not model.stage1.training
    batch = feat.collate(feat.windows([seq(["yes", "he", "said"], [("COMMA",), (), ("PERIOD",)],
                                           pauses=[0.3, 0.1, 0.8])], 8, 8))
    for _ in range(2):
        opt.zero_grad()
        model.loss(batch).backward()
        opt.step()
    for k, v in model.stage1.state_dict().items():
        assert torch.equal(v, before[k]), k
    assert not torch.equal(model.out.weight, new_before)
    assert model.predict(batch).punct.shape == (1, 5, len(FULL.labels))


def test_one_stage_pause_input_reads_the_pause_before_each_word(feat: BRNNFeaturizer) -> None:
    torch.manual_seed(0)
    model = make_model(config(pause_input=True), feat)
    assert isinstance(model, BRNNText) and model.bigru.input_size == 8 + 1
    text_only = make_model(config(), feat)
    assert text_only.bigru.input_size == 8
    words = ["yes", "he", "said"]
    marks = [("COMMA",), (), ("PERIOD",)]
    batch = feat.collate(feat.windows([seq(words, marks, pauses=[0.3, 0.0, 0.8])], 8, 8))
    # token t (1 = "yes") carries the pause before it: none for the first word
    torch.testing.assert_close(batch["pauses"][0, :4], torch.tensor([0.0, 0.0, 0.3, 0.0]))
    opt = make_optimizer(list(model.parameters()), OptimizerSection(name="adam", lr=0.05))
    pause_column = model.bigru.weight_ih_l0[:, -1].detach().clone()
    for _ in range(3):
        opt.zero_grad()
        model.loss(batch).backward()
        opt.step()
    assert not torch.equal(model.bigru.weight_ih_l0[:, -1], pause_column)  # it learns
    model.eval()
    longer = feat.collate(feat.windows([seq(words, marks, pauses=[1.5, 0.0, 0.8])], 8, 8))
    assert not torch.allclose(model.slot_logits(batch), model.slot_logits(longer))
    # the BiGRU's input is the pause in tenths of a second
    inputs = []
    handle = model.bigru.register_forward_pre_hook(lambda _m, args: inputs.append(args[0]))
    model.slot_logits(batch)
    handle.remove()
    padded, _ = torch.nn.utils.rnn.pad_packed_sequence(inputs[0], batch_first=True)
    torch.testing.assert_close(padded[0, 2, -1], torch.tensor(3.0))
    no_pauses = {k: v for k, v in batch.items() if k != "pauses"}
    with pytest.raises(ValueError, match="pause_input needs"):
        model.slot_logits(no_pauses)


def test_unknown_options_are_errors() -> None:
    with pytest.raises(PunctInputError, match=r"unknown key model\.hiden; allowed: .*hidden"):
        config(hiden=3)
    with pytest.raises(PunctInputError, match=r"featurizer\.min_cnt; allowed: .*min_count"):
        resolve_config({"family": "brnn", "featurizer": {"min_cnt": 1}})
    with pytest.raises(PunctInputError, match=r"featurizer\.tokenizer = 'bpe' is not one of"):
        resolve_config({"family": "brnn", "featurizer": {"tokenizer": "bpe"}})
    with pytest.raises(PunctInputError, match=r"featurizer\.sp_model: .*needs"):
        resolve_config({"family": "brnn", "featurizer": {"tokenizer": "sentencepiece"}})
    with pytest.raises(PunctInputError, match=r"model\.hidden = 'big' is not of type int"):
        config(hidden="big")


def test_a_wrong_key_in_a_file_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "brnn.yaml"
    path.write_text("family: brnn\nmodel:\n  hidden: 8\n  pause_hiden: 4\n")
    with pytest.raises(PunctInputError) as err:
        load_config(path)
    assert err.value.path == str(path) and err.value.line == 4
    assert "model.pause_hiden" in str(err.value) and "pause_hidden" in str(err.value)


def test_attention_chunks_and_checkpointing_do_not_change_the_maths(
        feat: BRNNFeaturizer, monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(1)
    model = make_model(config(), feat)
    for layer in (model.fuse_c, model.fuse_f, model.fuse_h, model.out):
        torch.nn.init.normal_(layer.weight, std=0.3)
    seqs = [seq(["yes", "he", "said", "hello", "so"], [("COMMA",), (), (), ("PERIOD",), ()]),
            seq(["me", "now"], [(), ("PERIOD",)], offset=5)]
    batch = feat.collate(feat.windows(seqs, 8, 8))
    recomputed = []

    def counting_checkpoint(*args, **kwargs):
        recomputed.append(1)
        return torch.utils.checkpoint.checkpoint(*args, **kwargs)

    monkeypatch.setattr(brnn_module, "checkpoint", counting_checkpoint)
    grads, outs, calls = [], [], []
    # (chunk, checkpoint_attention, recompute threshold): this small batch is recomputed
    # only under a threshold of 0; the default one keeps its activations
    for chunk, ckpt, limit in ((0, False, 0), (1, True, 0), (3, True, 0),
                               (0, True, brnn_module.RECOMPUTE_ELEMENTS)):
        monkeypatch.setattr(brnn_module, "RECOMPUTE_ELEMENTS", limit)
        model.attention_chunk, model.checkpoint_attention = chunk, ckpt
        model.zero_grad()
        recomputed.clear()
        loss = model.loss(batch)
        loss.backward()
        calls.append(len(recomputed))
        outs.append(loss.detach())
        grads.append(model.att_c.weight.grad.clone())
    assert calls[0] == 0 and calls[1] > calls[2] > 0 and calls[3] == 0
    for out, grad in zip(outs[1:], grads[1:], strict=True):
        torch.testing.assert_close(out, outs[0])
        torch.testing.assert_close(grad, grads[0], atol=1e-6, rtol=1e-5)
    assert grads[0].abs().sum() > 0
