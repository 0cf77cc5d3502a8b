"""Byte-mask dropout: the rate it realises, unbiasedness, reproducibility, and a BERT whose
dropout and SDPA attention are swapped computing the same thing where no dropout acts."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn
from transformers import AutoModel

from punct.config import TrainSection, load_config
from punct.errors import PunctInputError
from punct.train.byte_dropout import (
    BYTE_ATTENTION,
    ByteDropout,
    _attention,
    apply_dropout_masks,
    byte_dropout,
    byte_rate,
    install_byte_dropout,
    uses_byte_masks,
)
from tests.helpers.tinybert import build_tiny_bert


def test_rate_is_the_nearest_multiple_of_a_byte() -> None:
    assert byte_rate(0.1) == 26 / 256
    assert byte_rate(0.0) == 0.0
    assert byte_rate(0.5) == 0.5
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        byte_rate(1.0)


def test_masks_drop_at_the_rate_and_keep_the_mean() -> None:
    torch.manual_seed(3)
    x = torch.ones(400_003)
    y = byte_dropout(x, 0.1)
    dropped = float((y == 0).float().mean())
    assert abs(dropped - 26 / 256) < 0.003  # every byte, the top one included, is uniform
    assert abs(float(y.mean()) - 1.0) < 0.005
    kept = y[y != 0]
    assert torch.allclose(kept, torch.full_like(kept, 1 / (1 - 26 / 256)))


def test_masks_are_reproducible_and_identity_outside_training() -> None:
    x = torch.randn(7, 33)
    torch.manual_seed(0)
    a = byte_dropout(x, 0.3)
    torch.manual_seed(0)
    b = byte_dropout(x, 0.3)
    assert torch.equal(a, b)
    assert byte_dropout(x, 0.3, training=False) is x
    assert byte_dropout(x, 0.0) is x


def test_gradient_flows_through_kept_elements_only() -> None:
    x = torch.randn(1000, requires_grad=True)
    torch.manual_seed(1)
    y = byte_dropout(x, 0.25)
    y.sum().backward()
    assert x.grad is not None
    assert torch.equal(x.grad == 0, y.detach() == 0)


def test_bf16_input_keeps_its_dtype() -> None:
    x = torch.randn(64, 16).bfloat16()
    assert byte_dropout(x, 0.1).dtype == torch.bfloat16


def test_setting_resolution() -> None:
    assert uses_byte_masks("auto", "cpu")
    assert not uses_byte_masks("auto", "cuda")
    assert uses_byte_masks("bytes", "cuda")
    assert not uses_byte_masks("torch", "cpu")
    with pytest.raises(ValueError, match="dropout masks must be one of"):
        uses_byte_masks("fast", "cpu")
    kept = nn.Sequential(nn.Dropout(0.1))
    assert apply_dropout_masks(kept, TrainSection(dropout_masks="torch"), "cpu") == "torch"
    assert type(kept[0]) is nn.Dropout
    swapped = nn.Sequential(nn.Dropout(0.1))
    assert apply_dropout_masks(swapped, TrainSection(), "cpu") == "bytes"  # auto on the CPU
    assert type(swapped[0]) is ByteDropout and swapped[0].p == 0.1


def test_attention_math_path_matches_a_manual_product() -> None:
    q, k, v = (torch.randn(2, 3, 5, 4) for _ in range(3))
    mask = torch.ones(2, 1, 5, 5, dtype=torch.bool)
    mask[1, ..., 3:] = False  # padding in the second sequence
    module = nn.Module()
    module.train()
    torch.manual_seed(5)
    out, weights = _attention(module, q, k, v, mask, dropout=0.2, scaling=0.5)
    assert weights is None
    scores = (q @ k.transpose(2, 3) * 0.5).masked_fill(~mask, torch.finfo(q.dtype).min)
    torch.manual_seed(5)
    expected = (byte_dropout(scores.softmax(-1), 0.2) @ v).transpose(1, 2)
    assert torch.allclose(out, expected, atol=1e-6)
    # padded keys get no weight: changing them leaves the output alone
    v2 = v.clone()
    v2[1, :, 3:] = 100.0
    torch.manual_seed(5)
    out2, _ = _attention(module, q, k, v2, mask, dropout=0.2, scaling=0.5)
    assert torch.allclose(out[1], out2[1], atol=1e-5)


def test_installed_bert_matches_sdpa_without_dropout(tmp_path) -> None:
    reference = AutoModel.from_pretrained(build_tiny_bert(tmp_path / "bert"))
    model = copy.deepcopy(reference)
    wrapper = nn.Sequential(model)
    swapped = install_byte_dropout(wrapper)
    assert swapped == sum(isinstance(m, nn.Dropout) for m in reference.modules())
    assert all(type(m) is ByteDropout for m in model.modules() if isinstance(m, nn.Dropout))
    assert model.config._attn_implementation == BYTE_ATTENTION
    assert reference.config._attn_implementation != BYTE_ATTENTION
    assert set(model.state_dict()) == set(reference.state_dict())  # checkpoints unchanged
    ids = torch.randint(5, 40, (3, 12))
    att = torch.ones(3, 12, dtype=torch.long)
    att[1, 8:] = 0
    att[2, 3:] = 0
    reference.eval()
    model.eval()
    expected = reference(input_ids=ids, attention_mask=att).last_hidden_state
    assert torch.allclose(model(input_ids=ids, attention_mask=att).last_hidden_state,
                          expected, atol=1e-6)
    model.train()  # training mode with nothing dropped: the same function
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
    for layer in model.encoder.layer:
        layer.attention.self.dropout.p = 0.0
    assert torch.allclose(model(input_ids=ids, attention_mask=att).last_hidden_state,
                          expected, atol=1e-6)


def test_training_mode_drops_and_backpropagates(tmp_path) -> None:
    model = AutoModel.from_pretrained(build_tiny_bert(tmp_path / "bert"))
    install_byte_dropout(model)
    model.train()
    ids = torch.randint(5, 40, (2, 10))
    att = torch.ones(2, 10, dtype=torch.long)
    att[1, 6:] = 0
    torch.manual_seed(0)
    a = model(input_ids=ids, attention_mask=att).last_hidden_state
    torch.manual_seed(1)
    b = model(input_ids=ids, attention_mask=att).last_hidden_state
    assert not torch.allclose(a, b)  # different masks
    a.sum().backward()
    grads = [p.grad for name, p in model.named_parameters() if not name.startswith("pooler")]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)


def test_config_rejects_unknown_mask_setting(tmp_path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("family: brnn\ntrain: {dropout_masks: fast}\n", encoding="utf-8")
    with pytest.raises(PunctInputError, match="dropout_masks") as err:
        load_config(path)
    assert "bad.yaml" in str(err.value)
