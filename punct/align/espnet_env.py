"""Import ESPnet (``espnet2``), the optional extra, with a stand-in for a broken torchaudio.

Why a stand-in: espnet2's ASR modules import ``torchaudio`` at module level (for
features this project never uses: augmentation, BEATs, a torchaudio mel frontend), and
no torchaudio build matches torch 2.13 on CPU (the only wheel fails to load). When the
real torchaudio does not import, empty ``torchaudio`` modules are put in
``sys.modules``; touching any of their attributes raises an error that says so, so
nothing silently computes with a fake.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import types
from typing import Any

from punct.errors import MissingDataError

INSTALL_HINT = "install the optional ESPnet extra with `./setup.sh --with-espnet`"
STUB_MODULES = (
    "torchaudio",
    "torchaudio.compliance",
    "torchaudio.compliance.kaldi",
    "torchaudio.functional",
    "torchaudio.models",
    "torchaudio.transforms",
)


class EspnetMissingError(MissingDataError):
    """The ESPnet extra is not installed or does not import (exit code 2 in the tools)."""


class TorchaudioStub(types.ModuleType):
    """A module whose every attribute lookup says that torchaudio is unavailable."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        raise RuntimeError(
            f"torchaudio is not usable here ({self.__name__}.{name} was asked for): no "
            "torchaudio build matches this torch; punct's ESPnet support runs without it"
        )


def torchaudio_works() -> bool:
    """Whether a real torchaudio imports (a stand-in already installed counts as no)."""
    if isinstance(sys.modules.get("torchaudio"), TorchaudioStub):
        return False
    try:
        importlib.import_module("torchaudio")
    except Exception:  # a broken wheel raises OSError, ImportError or RuntimeError
        for name in [m for m in sys.modules if m == "torchaudio" or m.startswith("torchaudio.")]:
            del sys.modules[name]
        return False
    return True


def install_torchaudio_stub() -> None:
    """Put the stand-in ``torchaudio`` modules in ``sys.modules`` (parents linked)."""
    for name in STUB_MODULES:
        if name not in sys.modules:
            stub = TorchaudioStub(name)
            # a spec, so that importlib.util.find_spec (transformers probes) does not fail;
            # with no distribution metadata, such probes still find no torchaudio
            stub.__spec__ = importlib.machinery.ModuleSpec(name, None)
            sys.modules[name] = stub
    for name in STUB_MODULES:
        parent, _, child = name.rpartition(".")
        if parent:
            object.__setattr__(sys.modules[parent], child, sys.modules[name])


def import_espnet2(module: str = "espnet2") -> Any:
    """Import ``module`` of espnet2 (e.g. ``espnet2.bin.asr_align``), stubbing torchaudio.

    Raises :class:`EspnetMissingError` naming ``./setup.sh --with-espnet`` when ESPnet or
    one of its runtime dependencies is missing.
    """
    if not torchaudio_works():
        install_torchaudio_stub()
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise EspnetMissingError(
            f"ESPnet is not available ({module}: {exc}); {INSTALL_HINT}"
        ) from exc


def espnet_available() -> bool:
    """Whether espnet2's ASR inference and CTC segmentation import (for test skips)."""
    try:
        import_espnet2("espnet2.bin.asr_align")
        import_espnet2("espnet2.bin.asr_inference")
    except EspnetMissingError:
        return False
    return True
