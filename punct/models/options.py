"""Checking a family's config sections: unknown keys are errors, the label set is named."""

from __future__ import annotations

from typing import Any

from punct.errors import PunctInputError
from punct.labels import get_label_set


def checked_options(value: Any, allowed: set[str], where: str) -> dict[str, Any]:
    """``value`` as a dict (empty when None); unknown keys are errors naming ``where``."""
    value = value or {}
    if not isinstance(value, dict):
        raise PunctInputError(f"{where} must be a mapping, got {value!r}")
    unknown = set(value) - allowed
    if unknown:
        raise PunctInputError(
            f"unknown option(s) {sorted(unknown)} in {where}; allowed: {sorted(allowed)}"
        )
    return dict(value)


def label_set_size(config: dict[str, Any]) -> tuple[str, int]:
    """The name of the config's label set and its number of marks."""
    if "label_set" not in config:
        raise PunctInputError("the config has no 'label_set'")
    name = str(config["label_set"])
    return name, len(get_label_set(name).labels)
