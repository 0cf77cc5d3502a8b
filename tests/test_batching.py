"""Batches collated ahead in a thread; the batch size and learning rates per device."""

from __future__ import annotations

import threading
import time

import pytest

from punct.train.batching import device_batch, prefetch_depth, prefetched


def test_prefetched_yields_everything_in_order_from_another_thread() -> None:
    seen_threads: set[str] = set()

    def items():
        for i in range(50):
            seen_threads.add(threading.current_thread().name)
            yield i

    assert list(prefetched(items(), depth=3)) == list(range(50))
    assert seen_threads == {"batch-prefetch"}
    assert list(prefetched(iter(range(5)), depth=0)) == [0, 1, 2, 3, 4]  # in this thread


def test_prefetched_stays_at_most_depth_ahead_and_stops_when_left() -> None:
    made: list[int] = []

    def items():
        for i in range(1000):
            made.append(i)
            yield i

    gen = prefetched(items(), depth=2)
    assert next(gen) == 0
    time.sleep(0.3)
    assert len(made) <= 4  # the one consumed, two queued, one waiting to be queued
    gen.close()  # leaving the loop early (pre-emption) stops the producer
    time.sleep(0.3)
    assert len(made) <= 4
    assert not [t for t in threading.enumerate() if t.name == "batch-prefetch"]


def test_prefetched_raises_the_producers_error_in_the_loop() -> None:
    def items():
        yield 1
        raise ValueError("bad window")

    gen = prefetched(items(), depth=2)
    assert next(gen) == 1
    with pytest.raises(ValueError, match="bad window"):
        next(gen)


def test_device_batch_scales_learning_rates_linearly_on_cuda_only() -> None:
    assert device_batch(8, 64, "cuda") == (64, 8.0)
    assert device_batch(8, 64, "cpu") == (8, 1.0)
    assert device_batch(8, None, "cuda") == (8, 1.0)
    assert device_batch(32, 16, "cuda") == (16, 0.5)


def test_prefetch_by_default_where_the_device_would_wait() -> None:
    assert prefetch_depth(None, "cuda") == 2 and prefetch_depth(None, "cpu") == 0
    assert prefetch_depth(3, "cpu") == 3 and prefetch_depth(-1, "cuda") == 0


def test_seeded_training_is_the_same_with_and_without_prefetching(tmp_path) -> None:
    import torch
    from helpers.trainset import TINY, make_set

    from punct.config import resolve_config
    from punct.train.trainer import train_experiment

    make_set(tmp_path / "train", 60, 1)
    make_set(tmp_path / "dev", 10, 2)
    states = []
    for depth in (0, 2):
        cfg = resolve_config(TINY, [f"train.prefetch_batches={depth}", "train.epochs=2"])
        exp = tmp_path / f"exp{depth}"
        train_experiment(cfg, tmp_path / "train", tmp_path / "dev", exp, threads=1, quiet=True)
        states.append(torch.load(exp / "last.pt", weights_only=False)["model"])
    assert states[0].keys() == states[1].keys()
    assert all(torch.equal(states[0][k], states[1][k]) for k in states[0])
