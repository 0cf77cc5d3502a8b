"""Import ESPnet (``espnet2``), the optional extra, with a stand-in for a broken torchaudio.

Why a stand-in: espnet2's ASR modules import ``torchaudio`` at module level (for
features this project never uses: augmentation, BEATs, a torchaudio mel frontend), and
no torchaudio build matches torch 2.13 on CPU (the only wheel fails to load). When the
real torchaudio does not import, empty ``torchaudio`` modules are put in
``sys.modules``; touching any of their attributes raises an error that says so, so
nothing silently computes with a fake. Likewise ``g2p_en`` (English phonemes for ESPnet's
TTS front end, imported by espnet2's tokenizers) downloads NLTK data from the web when
imported without it: when that data is missing, it is stood in for the same way, so
importing ESPnet never reaches for the network.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import types
from typing import Any

from punct.extras import MissingExtraError, install_hint

INSTALL_HINT = f"install the optional ESPnet extra with `{install_hint('espnet')}`"
STUB_MODULES = (
    "torchaudio",
    "torchaudio.compliance",
    "torchaudio.compliance.kaldi",
    "torchaudio.functional",
    "torchaudio.models",
    "torchaudio.transforms",
)


class EspnetMissingError(MissingExtraError):
    """The ESPnet extra is not installed or does not import (exit code 2 in the tools)."""


G2P_NLTK_DATA = ("taggers/averaged_perceptron_tagger_eng.zip", "corpora/cmudict.zip")


class TorchaudioStub(types.ModuleType):
    """A module whose every attribute lookup says that it is unavailable (and why)."""

    why = ("no torchaudio build matches this torch; punct's ESPnet support runs "
           "without it")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        raise RuntimeError(f"{self.__name__} is not usable here ({self.__name__}.{name} "
                           f"was asked for): {self.why}")


class G2pStub(TorchaudioStub):
    """Stand-in for ``g2p_en`` when its NLTK data is not installed."""

    why = ("g2p_en needs NLTK data (cmudict, averaged_perceptron_tagger_eng) that is not "
           "installed; ESPnet's ASR does not use it")


def g2p_data_missing() -> bool:
    """Whether importing ``g2p_en`` would try to download NLTK data."""
    try:
        nltk_data = importlib.import_module("nltk.data")
    except ImportError:  # no nltk: g2p_en fails to import on its own, no download
        return False
    for resource in G2P_NLTK_DATA:
        try:
            nltk_data.find(resource)
        except LookupError:
            return True
    return False


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


def install_stub(names: tuple[str, ...], kind: type[TorchaudioStub]) -> None:
    """Put stand-in modules in ``sys.modules`` (parents linked)."""
    for name in names:
        if name not in sys.modules:
            stub = kind(name)
            # a spec, so that importlib.util.find_spec (transformers probes) does not fail;
            # with no distribution metadata, such probes still find no torchaudio
            stub.__spec__ = importlib.machinery.ModuleSpec(name, None)
            sys.modules[name] = stub
    for name in names:
        parent, _, child = name.rpartition(".")
        if parent:
            object.__setattr__(sys.modules[parent], child, sys.modules[name])


def import_espnet2(module: str = "espnet2") -> Any:
    """Import ``module`` of espnet2 (e.g. ``espnet2.bin.asr_align``), stubbing torchaudio.

    Raises :class:`EspnetMissingError` naming ``./setup.sh --with-espnet`` when ESPnet or
    one of its runtime dependencies is missing.
    """
    if not torchaudio_works():
        install_stub(STUB_MODULES, TorchaudioStub)
    if "g2p_en" not in sys.modules and g2p_data_missing():
        install_stub(("g2p_en",), G2pStub)
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
