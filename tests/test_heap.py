"""punct.engine.heap: glibc keeps the memory tensors free, so batches stop page-faulting."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

from punct.engine.heap import USER_SETTINGS, why_not

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"

#: allocates and frees a 40 MiB tensor (above glibc's largest mmap threshold) 20 times
#: after setup_compute and 3 warm-up rounds, and prints the page faults those 20 took and
#: the heap state
FAULTS = """
import json, resource, torch
from punct.train.env import collect_env, setup_compute
setup_compute(1)
for _ in range(3):
    torch.ones(10_000_000)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    x = torch.ones(10_000_000)
    del x
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
print(json.dumps({"faults": faults, "heap": collect_env()["heap"]}))
"""


def run_faults(**env: str) -> dict:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith("MALLOC_")
             and k not in ("PUNCT_KEEP_HEAP", "LD_PRELOAD", "GLIBC_TUNABLES")}
    out = subprocess.run([sys.executable, "-c", FAULTS], env={**clean, **env},
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.skipif(not GLIBC, reason="glibc's allocator only")
def test_freed_memory_is_kept_so_repeated_batches_do_not_fault() -> None:
    kept = run_faults()
    default = run_faults(PUNCT_KEEP_HEAP="0")
    assert kept["heap"] == "kept"
    assert default["heap"] == "left (PUNCT_KEEP_HEAP=0)"
    # 20 x 40 MiB is 195k pages of 4 KiB: glibc's defaults map and fault them every time;
    # kept, at most a few of the 20 land where the heap had not yet been (9.8k each)
    assert default["faults"] > 150_000
    assert kept["faults"] < 5 * 9_766


@pytest.mark.skipif(not GLIBC, reason="glibc's allocator only")
def test_the_users_malloc_settings_win() -> None:
    # a trim threshold of their own also fixes glibc's mmap threshold at 128 KiB
    mine = run_faults(MALLOC_TRIM_THRESHOLD_="134217728")
    assert mine["heap"] == "left (the user's MALLOC_TRIM_THRESHOLD_)"
    assert mine["faults"] > 150_000
    # an arena count (containers often set one) is not a choice about freed memory
    arenas = run_faults(MALLOC_ARENA_MAX="2")
    assert arenas["heap"] == "kept"
    assert arenas["faults"] < 5 * 9_766


@pytest.mark.parametrize(("env", "reason"), [
    ({"PUNCT_KEEP_HEAP": "0"}, "PUNCT_KEEP_HEAP=0"),
    ({"MALLOC_TRIM_THRESHOLD_": "0", "MALLOC_MMAP_MAX_": "0"},
     "the user's MALLOC_MMAP_MAX_ MALLOC_TRIM_THRESHOLD_"),
    ({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=0"}, "the user's GLIBC_TUNABLES"),
    ({"LD_PRELOAD": "/usr/lib/libjemalloc.so.2"}, "jemalloc preloaded"),
])
def test_why_the_allocator_is_left(monkeypatch: pytest.MonkeyPatch, env: dict[str, str],
                                   reason: str) -> None:
    monkeypatch.setattr(platform, "system", lambda: "Linux")
    monkeypatch.setattr(platform, "libc_ver", lambda: ("glibc", "2.36"))
    for key in (*USER_SETTINGS, "GLIBC_TUNABLES", "LD_PRELOAD", "PUNCT_KEEP_HEAP"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("MALLOC_ARENA_MAX", "2")  # not one of the settings it makes
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2")
    assert why_not() is None
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert why_not() == reason


def test_not_glibc_is_left(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PUNCT_KEEP_HEAP", raising=False)
    monkeypatch.setattr(platform, "system", lambda: "Darwin")
    assert why_not() == "not glibc"
    monkeypatch.setattr(platform, "system", lambda: "Linux")
    monkeypatch.setattr(platform, "libc_ver", lambda: ("", ""))
    assert why_not() == "not glibc"
