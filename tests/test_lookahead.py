"""LookAhead: hand-checked steps, shared parameter groups under LambdaLR, resumable state."""

from __future__ import annotations

import io

import pytest
import torch

from punct.config import OptimizerSection, resolve_config
from punct.errors import PunctInputError
from punct.train.lookahead import LookAhead
from punct.train.optim import make_optimizer, warmup_factor


def quadratic_step(opt: torch.optim.Optimizer, w: torch.nn.Parameter) -> None:
    """One step on 0.5 * |w|^2 (gradient = w)."""
    opt.zero_grad()
    (0.5 * (w**2).sum()).backward()
    opt.step()


def test_hand_checked_sgd_k2_alpha_half() -> None:
    # SGD lr 0.1 on 0.5 w^2: w <- 0.9 w. From w = 1:
    # step 1: fast 0.9; step 2: fast 0.81 -> slow = 1 + 0.5 (0.81 - 1) = 0.905 = fast;
    # step 3: fast 0.8145; step 4: fast 0.73305 -> slow = 0.905 + 0.5 (0.73305 - 0.905)
    # = 0.819025 = fast. The problem is linear, so w = -2 gives -2 times these values.
    w = torch.nn.Parameter(torch.tensor([1.0, -2.0], dtype=torch.float64))
    opt = LookAhead(torch.optim.SGD([w], lr=0.1), k=2, alpha=0.5)
    expected_fast = [0.9, 0.905, 0.8145, 0.819025]
    expected_slow = [1.0, 0.905, 0.905, 0.819025]
    for fast, slow in zip(expected_fast, expected_slow, strict=True):
        quadratic_step(opt, w)
        assert w.detach().tolist() == pytest.approx([fast, -2 * fast], abs=1e-12)
        assert opt.slow[w].tolist() == pytest.approx([slow, -2 * slow], abs=1e-12)
    assert opt.fast_steps == 4


def test_k1_alpha1_is_the_inner_optimizer() -> None:
    torch.manual_seed(0)
    a = torch.nn.Parameter(torch.randn(5))
    b = torch.nn.Parameter(a.detach().clone())
    plain = torch.optim.RAdam([a], lr=0.05)
    wrapped = LookAhead(torch.optim.RAdam([b], lr=0.05), k=1, alpha=1.0)
    for _ in range(7):
        quadratic_step(plain, a)
        quadratic_step(wrapped, b)
    assert torch.equal(a, b)


def test_param_groups_shared_and_lambdalr_warmup() -> None:
    # Constant gradient 1, lr 0.1 with warm-up factors 0.5, 1, 1, ... and k = 3:
    # fast 1 -> 0.95 -> 0.85 -> 0.75, sync: slow = 1 + 0.5 (0.75 - 1) = 0.875.
    w = torch.nn.Parameter(torch.tensor([1.0], dtype=torch.float64))
    opt = LookAhead(torch.optim.SGD([w], lr=0.1), k=3, alpha=0.5)
    assert opt.param_groups is opt.inner.param_groups
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: warmup_factor(step, 2))
    lrs, values = [], []
    for _ in range(3):
        lrs.append(opt.inner.param_groups[0]["lr"])
        opt.zero_grad()
        w.sum().backward()
        opt.step()
        sched.step()
        values.append(w.item())
    assert lrs == pytest.approx([0.05, 0.1, 0.1])
    assert values == pytest.approx([0.95, 0.85, 0.875])
    assert opt.param_groups[0]["initial_lr"] == 0.1


def _train(model: torch.nn.Module, opt: torch.optim.Optimizer, sched: object,
           steps: int, start: int) -> None:
    for step in range(start, start + steps):
        gen = torch.Generator().manual_seed(step)
        x = torch.randn(8, 4, generator=gen)
        y = torch.randn(8, 3, generator=gen)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        sched.step()  # type: ignore[attr-defined]


def _build(seed: int) -> tuple[torch.nn.Module, LookAhead, object]:
    torch.manual_seed(seed)
    model = torch.nn.Linear(4, 3)
    groups = [{"params": [model.weight], "lr": 0.02}, {"params": [model.bias]}]
    opt = make_optimizer(groups, OptimizerSection(name="lookahead_radam", lr=0.01, k=6,
                                                  alpha=0.5, weight_decay=0.0))
    assert isinstance(opt, LookAhead) and isinstance(opt.inner, torch.optim.RAdam)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: warmup_factor(step, 3))
    return model, opt, sched


def test_state_dict_round_trip_continues_identically() -> None:
    model, opt, sched = _build(seed=1)
    _train(model, opt, sched, 4, 0)
    buffer = io.BytesIO()
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                "scheduler": sched.state_dict()}, buffer)  # type: ignore[attr-defined]
    _train(model, opt, sched, 5, 4)  # crosses the sync at step 6
    assert opt.fast_steps == 9
    reference = [p.detach().clone() for p in model.parameters()]

    buffer.seek(0)
    saved = torch.load(buffer, weights_only=True)
    model2, opt2, sched2 = _build(seed=99)  # other initial weights, overwritten below
    model2.load_state_dict(saved["model"])
    opt2.load_state_dict(saved["optimizer"])
    sched2.load_state_dict(saved["scheduler"])  # type: ignore[attr-defined]
    assert opt2.fast_steps == 4 and opt2.param_groups is opt2.inner.param_groups
    _train(model2, opt2, sched2, 5, 4)
    for p, q in zip(reference, model2.parameters(), strict=True):
        assert torch.equal(p, q)
    assert [g["lr"] for g in opt2.param_groups] == [g["lr"] for g in opt.param_groups]
    # without the slow weights the continuation differs (the state matters)
    model3, opt3, sched3 = _build(seed=99)
    model3.load_state_dict(saved["model"])
    opt3.inner.load_state_dict(saved["optimizer"]["inner"])
    opt3.fast_steps = 4
    sched3.load_state_dict(saved["scheduler"])  # type: ignore[attr-defined]
    _train(model3, opt3, sched3, 5, 4)
    assert not torch.equal(reference[0], model3.weight)


def test_bad_settings_and_state() -> None:
    w = torch.nn.Parameter(torch.zeros(2))
    sgd = torch.optim.SGD([w], lr=0.1)
    with pytest.raises(ValueError, match="k"):
        LookAhead(sgd, k=0)
    with pytest.raises(ValueError, match="alpha"):
        LookAhead(sgd, alpha=0.0)
    with pytest.raises(ValueError, match="alpha"):
        LookAhead(sgd, alpha=1.5)
    with pytest.raises(TypeError):
        LookAhead("sgd")  # type: ignore[arg-type]
    with pytest.raises(PunctInputError, match=r"train\.optimizer\.k: only a lookahead"):
        resolve_config({"family": "brnn", "train": {"optimizer": {"name": "sgd", "k": 2}}})
    with pytest.raises(PunctInputError, match=r"train\.optimizer\.name = 'lookahead_nope'"):
        resolve_config({"family": "brnn", "train": {"optimizer": {"name": "lookahead_nope"}}})
    with pytest.raises(PunctInputError, match=r"train\.optimizer\.alpha: 0\.0 is outside"):
        resolve_config({"family": "brnn", "train": {"optimizer": {"name": "lookahead_sgd",
                                                                  "alpha": 0.0}}})
    other = LookAhead(torch.optim.SGD([torch.nn.Parameter(torch.zeros(3))], lr=0.1))
    with pytest.raises(ValueError, match="shape"):
        other.load_state_dict(LookAhead(torch.optim.SGD([w], lr=0.1)).state_dict())
    with pytest.raises(ValueError, match="LookAhead state"):
        other.load_state_dict(sgd.state_dict())
