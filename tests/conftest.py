"""Shared test fixtures."""

from __future__ import annotations

import platform
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from helpers.tinybert import build_tiny_bert

from punct.engine.precision import BF16_CPU_FLAGS, cpu_flags


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The CPU the suite runs on and whether it computes bf16 natively: tolerances and
    times differ between CPU kinds (Intel with AVX512-BF16/AMX, AMD EPYC without), and
    the SIMD level of torch's own kernels (lowered with ATEN_CPU_CAPABILITY=avx2 or
    default to run the suite as on another CPU)."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = line.partition(":")[2].strip()
                break
    except OSError:
        pass
    native = sorted(cpu_flags() & BF16_CPU_FLAGS)
    bf16 = f"native ({', '.join(native)})" if native else "emulated (no AVX512-BF16/AMX)"
    return [f"cpu: {model} ({platform.machine()}), {torch.get_num_threads()} threads; "
            f"bf16 {bf16}; torch kernels {torch.backends.cpu.get_cpu_capability()}"]

# The slowest modules, slowest first (their module fixtures run whole recipes; seconds of
# one worker under AVX2 kernels at 18ce429: mini 500, iwslt 200, mintzai 190, slurm 100,
# szeged 80, wheel 80, distributed 70, mtedx 60, babel 45, resume 40). They start first:
# xdist otherwise hands out the modules with the most tests first, and the mini recipe,
# begun late, kept one worker busy while the other sat idle.
SLOWEST_FIRST = ("test_mini_recipe", "test_iwslt_recipe", "test_mintzai_recipe",
                 "test_slurm", "test_szeged_recipe", "test_wheel", "test_distributed",
                 "test_mtedx_recipe", "test_babel_recipe", "test_resume")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The slowest modules first, in that order; the rest as collected (``./test.sh``
    keeps this order for xdist with ``--no-loadscope-reorder``)."""
    rank = {name: k for k, name in enumerate(SLOWEST_FIRST)}

    def key(item: pytest.Item) -> int:
        module = item.nodeid.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py")
        return rank.get(module, len(rank))

    items.sort(key=key)  # stable: the collected order within each rank


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
