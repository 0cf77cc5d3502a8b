"""Scoring and reporting: metrics over word slots, scores JSON, comparison tables, plots.

- ``punct.score.metrics``: per-class P/R/F1, micro/macro F1, capitalisation F1, SER.
- ``punct.score.tables``: comparison tables (ours beside the published figures).
- ``punct.score.published``: the papers' published figures (``published/*.yaml``).
- ``punct.score.plots``: PNG plots; ``punct.score.results_md``: the generated RESULTS.md.
"""

from __future__ import annotations

from punct.score.metrics import check_aligned, score_tables

__all__ = ["check_aligned", "score_tables"]
