"""glibc's allocator set for tensor work: memory a batch frees stays for the next batch.

By default glibc serves a large allocation with a fresh ``mmap`` and unmaps it on free
(above a threshold that adapts between 128 KiB and 32 MiB), and gives the top of its heap
back to the kernel once it holds a few free MiB. A forward or backward pass allocates and
frees activations of tens of MiB, so batch after batch every 4 KiB page it writes is
a new page fault, served by the kernel. ``keep_freed_memory`` makes glibc take every
allocation from its heap and keep what is freed there (up to ``TRIM_BYTES`` at its top),
as jemalloc or tcmalloc would with their caches: the process stays at its peak size
instead of mapping and faulting the same memory in again.

Measured on 2 cores of an AMD EPYC (Zen 4): a fresh ``./run.sh`` of the mini recipe took
31.9M page faults and 68 s in the kernel with glibc's defaults, 5.9M and 27 s kept (352 s
of wall time against 293, the same scores; docs/TRAINING.md); ``punct-restore`` of IWSLT
nagy over 42k words 0.9M-2.5M page faults against 0.18M (docs/RESTORE.md).

``PUNCT_KEEP_HEAP=0`` leaves the allocator as it is; so do the user's own settings of
what it would set (``MALLOC_MMAP_MAX_``, ``MALLOC_MMAP_THRESHOLD_``,
``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_TOP_PAD_``, or their ``GLIBC_TUNABLES``) and another
allocator preloaded (``LD_PRELOAD``). Elsewhere than glibc (macOS, musl) nothing changes.
"""

from __future__ import annotations

import ctypes
import os
import platform

#: mallopt parameters (glibc's malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
#: free memory at the top of the heap beyond this goes back to the kernel
TRIM_BYTES = 1 << 30
#: the user's own choice, in the environment, of what ``keep_freed_memory`` would set (an
#: arena count, ``MALLOC_ARENA_MAX``, as containers often set, is another matter)
USER_SETTINGS = ("MALLOC_MMAP_MAX_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
                 "MALLOC_TOP_PAD_")
#: the same, as glibc tunables (``GLIBC_TUNABLES=glibc.malloc.trim_threshold=...``)
USER_TUNABLES = ("glibc.malloc.mmap_max", "glibc.malloc.mmap_threshold",
                 "glibc.malloc.trim_threshold", "glibc.malloc.top_pad")
#: allocators that replace glibc's when preloaded
OTHER_ALLOCATORS = ("jemalloc", "tcmalloc", "mimalloc")

_state: str | None = None


def why_not() -> str | None:
    """Why the allocator is to be left as it is here, or None when it may be set."""
    if os.environ.get("PUNCT_KEEP_HEAP", "1").strip() == "0":
        return "PUNCT_KEEP_HEAP=0"
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return "not glibc"
    named = [name for name in USER_SETTINGS if name in os.environ]
    if any(name in os.environ.get("GLIBC_TUNABLES", "") for name in USER_TUNABLES):
        named.append("GLIBC_TUNABLES")
    if named:
        return f"the user's {' '.join(named)}"
    preload = os.environ.get("LD_PRELOAD", "")
    for name in OTHER_ALLOCATORS:
        if name in preload:
            return f"{name} preloaded"
    return None


def heap_state() -> str:
    """What ``keep_freed_memory`` did in this process (``default`` before any call)."""
    return _state or "default"


def keep_freed_memory() -> str:
    """Make glibc serve every allocation from its heap and keep freed memory there (once
    per process); return the state: ``kept``, or ``left (REASON)``."""
    global _state
    if _state is None:
        reason = why_not()
        if reason is None:
            mallopt = ctypes.CDLL(None).mallopt
            mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
            ok = mallopt(M_MMAP_MAX, 0) == 1 and mallopt(M_TRIM_THRESHOLD, TRIM_BYTES) == 1
            reason = None if ok else "mallopt refused"
        _state = "kept" if reason is None else f"left ({reason})"
    return _state
