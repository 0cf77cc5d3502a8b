"""Model families; importing this package registers every family in ``Registry``."""

from __future__ import annotations

import importlib

from punct.models import brnn
from punct.models.base import Registry

__all__ = ["Registry", "brnn"]

try:  # registers "autopunct"; a missing module (partial checkout) is tolerated
    importlib.import_module("punct.models.autopunct")
except ModuleNotFoundError as err:
    if err.name != "punct.models.autopunct":
        raise
