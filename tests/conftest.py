"""Shared test fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

# Test modules whose tiny models run far faster on one thread (no OpenMP contention
# on a busy 2-core machine).
ONE_THREAD_MODULES = {
    "test_autopunct", "test_brnn", "test_decode", "test_trainer", "test_nagy", "test_courtland",
    "test_lookahead", "test_prosodic_pp", "test_restore", "test_benchmark", "test_sweep",
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
