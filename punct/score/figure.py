"""Figures for PNG plots: matplotlib (the ``report`` extra) on the Agg canvas, no display."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from punct.extras import require


def new_figure(figsize: tuple[float, float]) -> Any:
    """A ``matplotlib.figure.Figure`` of ``figsize`` inches, drawn on an Agg canvas."""
    # optional extra: matplotlib is imported only when a plot is drawn
    figure = require("matplotlib.figure", "report", "plotting")
    backend = require("matplotlib.backends.backend_agg", "report", "plotting")
    fig = figure.Figure(figsize=figsize)
    backend.FigureCanvasAgg(fig)
    return fig


def save_png(fig: Any, path: Path, dpi: int = 110) -> Path:
    """Write ``fig`` to ``path`` as PNG (parent directories made); return ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=dpi)
    return path
