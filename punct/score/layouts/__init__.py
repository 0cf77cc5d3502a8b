"""Table layouts of the papers we reproduce, chosen with ``report --layouts``.

A layout is a module ``punct.score.layouts.<name>``, named in the ``layout`` table of
:mod:`punct.registry`, with
``build_tables(scores) -> list[Table]`` (published figures beside ours) and optionally
``make_plots(scores, out_dir) -> list[Path]``. ``autopunct`` (AutoPunct Tables 4-7) is
built into ``punct.score.tables``; the others live in their own modules.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from punct.errors import PunctInputError
from punct.registry import UnknownNameError, lookup, names
from punct.score.tables import Table


def available_layouts() -> list[str]:
    """Names of the registered layout modules."""
    return names("layout")


def load_layout(name: str) -> ModuleType:
    """The layout module called ``name`` (ValueError naming the known ones otherwise)."""
    try:
        return lookup("layout", name)
    except UnknownNameError:
        raise PunctInputError(f"unknown table layout {name!r} "
                              f"(known: autopunct, {', '.join(available_layouts())})") from None


def layout_tables(name: str, scores: Sequence[dict[str, Any]]) -> list[Table]:
    """Tables of one layout module."""
    return list(load_layout(name).build_tables(scores))


def layout_plots(name: str, scores: Sequence[dict[str, Any]], out_dir: Path) -> list[Path]:
    """Plots of one layout module (none when it has no ``make_plots``)."""
    module = load_layout(name)
    make = getattr(module, "make_plots", None)
    return list(make(scores, out_dir)) if make else []
