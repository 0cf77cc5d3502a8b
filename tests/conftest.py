"""Shared test fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from helpers.tinybert import build_tiny_bert

# Test modules whose tiny models run far faster on one thread (no OpenMP contention
# on a busy 2-core machine).
ONE_THREAD_MODULES = {
    "test_autopunct", "test_benchmark", "test_brnn", "test_courtland", "test_ctc_align",
    "test_decode", "test_distributed", "test_lookahead", "test_nagy", "test_prosodic_pp",
    "test_restore", "test_resume", "test_sweep", "test_trainer", "test_unipunc",
}


@pytest.fixture(autouse=True, scope="module")
def one_thread(request: pytest.FixtureRequest) -> Iterator[None]:
    """Pin torch to one thread in the modules listed above, restore it afterwards."""
    if request.module.__name__.rsplit(".", 1)[-1] not in ONE_THREAD_MODULES:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tiny_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random BERT (hidden 32) whose whole words are the requesting module's VOCAB."""
    return build_tiny_bert(tmp_path_factory.mktemp("tinybert"), words=request.module.VOCAB,
                           hidden=32)
