"""Nagy et al. (2021) layouts: Table 4 (P/R/F per class and overall on IWSLT 2012) and
Table 5 (the same on Hungarian, Szeged Treebank), with the published rows beside ours.

Table 5 holds our scores with the ``nagy4`` label set (Nagy's Hungarian mapping, the
Szeged recipe); Table 4 the other 3-class scores.

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


HU_LABEL_SET = "nagy4"


def table5(scores: Sequence[dict[str, Any]], doc: dict[str, Any] | None) -> Table:
    """Nagy Table 5 layout (Hungarian), our ``nagy4`` rows beside the published ones."""
    if doc:
        spec = doc["tables"]["table5"]
        doc = {**doc, "data": spec["data"], "data_note": spec.get("data_note", "")}
    frame = pr_frame(scores, doc, "table5", "Table 5")
    frame.loc[frame["Source"].str.startswith("published"), "Labels"] = HU_LABEL_SET
    return Table(
        "nagy_table5",
        "Nagy 2021 Table 5: P/R/F (%) per class and overall on Hungarian (Szeged)",
        frame,
        "Counted over word slots, 3 classes (COMMA, PERIOD, QUESTION) after Nagy's mapping "
        "(! ; -> PERIOD; : quotes and spaced dashes -> COMMA). Overall = macro average; "
        "micro F = micro-averaged F1 of our systems. Our data are the public subsets "
        "(UD_Hungarian-Szeged test, news), not the full treebank of the published rows."
        + published_note(doc),
    )


def build_tables(scores: Sequence[dict[str, Any]]) -> list[Table]:
    """Nagy Table 4 (and Table 5 when there are Hungarian ``nagy4`` scores)."""
    hu = [s for s in scores if s.get("label_set") == HU_LABEL_SET]
    other = [s for s in scores if s.get("label_set") != HU_LABEL_SET]
    tables = []
    if other or not hu:
        tables.append(table4(other, load_pr_published("nagy_2021", "table4")))
    if hu:
        tables.append(table5(hu, load_pr_published("nagy_2021", "table5")))
    return tables
