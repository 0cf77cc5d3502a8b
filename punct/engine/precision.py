"""bf16 inference: ``on``, ``off`` or ``auto`` (on where the hardware computes bf16 natively).

``auto`` is on for CUDA devices that support bf16 (Ampere and later) and for CPUs with
AVX512-BF16 or AMX (flags ``avx512_bf16`` / ``amx_bf16`` in /proc/cpuinfo); elsewhere
bf16 autocast is emulated and slower than fp32, so ``auto`` falls back to fp32.

The environment variable ``PUNCT_NATIVE_BF16`` overrides what the CPU flags say: ``0``
makes every ``auto`` decision as on a CPU without native bf16 (to measure a recipe as it
runs on such a machine), ``1`` as on one with it.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

import torch

from punct.config import PRECISIONS
from punct.errors import PunctInputError

BF16_CPU_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
NATIVE_BF16_ENV = "PUNCT_NATIVE_BF16"
CHOICES = ("auto", "on", "off")


def cpu_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> set[str]:
    """The CPU feature flags listed in ``cpuinfo`` (empty when it cannot be read)."""
    try:
        text = Path(cpuinfo).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    flags: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            flags.update(value.split())
    return flags


def cpu_model(cpuinfo: str | Path = "/proc/cpuinfo") -> str:
    """The CPU's model name (platform's processor string when /proc is unavailable)."""
    try:
        for line in Path(cpuinfo).read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                return value.strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def bf16_supported(device: torch.device | str, cpuinfo: str | Path = "/proc/cpuinfo") -> bool:
    """Whether ``device`` computes bf16 natively."""
    device = torch.device(device)
    if device.type == "cuda":
        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    if device.type == "cpu":
        forced = os.environ.get(NATIVE_BF16_ENV, "").strip()
        if forced in ("0", "1"):
            return forced == "1"
        return bool(cpu_flags(cpuinfo) & BF16_CPU_FLAGS)
    return False


def resolve_bf16(setting: bool | str | None, device: torch.device | str,
                 cpuinfo: str | Path = "/proc/cpuinfo") -> bool:
    """Turn a config/CLI value (True/False/None, ``on``/``off``/``auto``/...) into a bool."""
    if setting is None or isinstance(setting, bool):
        return bool(setting)
    text = str(setting).strip().lower()
    if text in ("on", "true", "yes", "1"):
        return True
    if text in ("off", "false", "no", "0"):
        return False
    if text == "auto":
        return bf16_supported(device, cpuinfo)
    raise PunctInputError(f"bf16 must be one of {', '.join(CHOICES)} (or true/false), "
                          f"got {setting!r}")


AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": None}


def resolve_precision(setting: str | None, device: torch.device | str,
                      cpuinfo: str | Path = "/proc/cpuinfo") -> str:
    """``train.precision`` for ``device``: ``bf16``, ``fp16`` or ``fp32``.

    ``auto``: bf16 on CPUs with AVX512-BF16/AMX and on CUDA devices with bf16, fp16 (with
    a gradient scaler) on older CUDA devices, fp32 elsewhere (a CPU without native bf16
    runs bf16 autocast several times slower than fp32). An explicit value is obeyed.
    """
    text = "auto" if setting is None else str(setting).strip().lower()
    if text not in PRECISIONS:
        raise PunctInputError(f"precision must be one of {', '.join(PRECISIONS)}, got {setting!r}")
    if text != "auto":
        return text
    device = torch.device(device)
    if bf16_supported(device, cpuinfo):
        return "bf16"
    if device.type == "cuda" and torch.cuda.is_available():
        return "fp16"
    return "fp32"


def autocast_dtype(precision: str) -> torch.dtype | None:
    """The autocast dtype of a resolved precision (None: no autocast)."""
    return AUTOCAST_DTYPES[precision]
