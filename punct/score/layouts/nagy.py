"""Nagy et al. (2021) layout: Table 4 (P/R/F per class and overall on IWSLT 2012), with
the published rows beside ours.

Same columns as Courtland's Table 1 (``punct.score.layouts.courtland``); Overall is the
macro average over COMMA, PERIOD and QUESTION, Nagy's headline "macro F1".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from punct.score.layouts.courtland import load_pr_published, pr_frame
from punct.score.tables import Table, published_note


def table4(scores: Sequence[dict[str, Any]], doc: dict[str, Any] | None) -> Table:
    """Nagy Table 4 layout."""
    return Table(
        "nagy_table4",
        "Nagy 2021 Table 4: P/R/F (%) per class and overall on IWSLT test2011",
        pr_frame(scores, doc, "table4", "Table 4"),
        "Counted over word slots, 3 classes (COMMA, PERIOD, QUESTION). Overall = macro "
        "average (mean of the three classes; Nagy's macro F1). micro F = micro-averaged "
        "F1 of our systems. Published rows: checkpoints chosen on validation loss or "
        "macro F1 (\"by loss\", \"by F1-score\"), trained on train2012."
        + published_note(doc),
    )


def build_tables(scores: Sequence[dict[str, Any]]) -> list[Table]:
    """Nagy Table 4 with the published figures."""
    return [table4(scores, load_pr_published("nagy_2021", "table4"))]
