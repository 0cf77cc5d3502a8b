"""Published figures of the papers, kept as YAML next to this module (``published/``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from punct.errors import MissingDataError, PunctInputError
from punct.extras import require

pd = require("pandas", "report", "score tables")  # optional extra: the report tables

PUBLISHED_DIR = Path(__file__).with_name("published")
SCALAR_TABLES = ("table4", "table6", "table7")


def load_published(name: str = "autopunct_2021") -> dict[str, Any]:
    """The raw published-figures document ``published/<name>.yaml``."""
    path = PUBLISHED_DIR / f"{name}.yaml"
    if not path.is_file():
        raise MissingDataError(f"no published figures called {name!r}", path)
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    for table in SCALAR_TABLES:
        spec = doc["tables"][table]
        for row, values in spec["rows"].items():
            if len(values) != len(spec["columns"]):
                raise PunctInputError(f"{table} row {row!r}: {len(values)} values for "
                                      f"{len(spec['columns'])} columns", path)
    spec5 = doc["tables"]["table5"]
    for lang, rows in spec5["by_language"].items():
        for row, values in rows.items():
            if len(values) != len(spec5["columns"]):
                raise PunctInputError(f"table5 {lang} row {row!r}: wrong number of values", path)
    return doc


def published_scalar(doc: dict[str, Any], table: str) -> pd.DataFrame:
    """Rows = published systems, columns = the paper's data columns (e.g. EU, ES, ES+EU)."""
    spec = doc["tables"][table]
    frame = pd.DataFrame.from_dict(spec["rows"], orient="index", columns=spec["columns"])
    frame.index.name = "system"
    return frame


def published_class_f1(doc: dict[str, Any]) -> pd.DataFrame:
    """Table 5 in long form: columns system, language, label, f1 (percent)."""
    spec = doc["tables"]["table5"]
    records = []
    for lang, rows in spec["by_language"].items():
        for system, values in rows.items():
            for label, value in zip(spec["columns"], values, strict=True):
                records.append({"system": system, "language": lang, "label": label, "f1": value})
    return pd.DataFrame.from_records(records, columns=["system", "language", "label", "f1"])


def published_value(doc: dict[str, Any], table: str, system: str, column: str) -> float:
    """One published number, e.g. ``published_value(doc, "table4", "S D G B", "ES+EU")``."""
    if table == "table5":
        raise KeyError("use published_class_f1 for table5")
    return float(published_scalar(doc, table).loc[system, column])
