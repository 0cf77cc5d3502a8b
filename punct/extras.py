"""Optional dependencies (the extras of pyproject.toml): import one, or say which extra.

The core (restore, the API, export without ONNX) needs only the ``dependencies`` of
pyproject.toml. Everything else is imported through :func:`require` where it is used, so
a missing extra ends in one line naming it, e.g. ``pip install 'punct-recipes[align]'``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from punct.errors import MissingDataError


class MissingExtraError(MissingDataError):
    """An optional dependency is not installed (exit code 2 in the command-line tools)."""


def install_hint(extra: str) -> str:
    """How to install ``extra`` (ESPnet cannot come from pip alone: setup.sh adds it)."""
    if extra == "espnet":
        return "./setup.sh --with-espnet"
    return f"pip install 'punct-recipes[{extra}]'"


def require(module: str, extra: str, what: str) -> ModuleType:
    """Import ``module``; if it (or one of its own dependencies) is not installed, a
    MissingExtraError: ``<what> needs '<module>', which is not installed: <how>``."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        missing = getattr(err, "name", None) or module
        raise MissingExtraError(f"{what} needs {missing!r}, which is not installed: "
                                f"{install_hint(extra)}") from err
