"""punct: punctuation and capitalisation restoration recipes.

``from punct import Restorer`` gives the one-call API (``punct.api``); it is imported on
first use, so ``import punct`` stays light.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["Restorer", "Word", "__version__"]


def __getattr__(name: str) -> Any:
    if name in ("Restorer", "Word"):
        from punct import api  # heavy, not needed by every command: the API (torch)

        return getattr(api, name)
    raise AttributeError(f"module 'punct' has no attribute {name!r}")
