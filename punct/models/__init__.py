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

for _family in ("nagy", "courtland"):  # same rule for the nagy and courtland families
    try:
        importlib.import_module(f"punct.models.{_family}")
    except ModuleNotFoundError as err:
        if err.name != f"punct.models.{_family}":
            raise

try:  # registers "unipunc" (same rule)
    importlib.import_module("punct.models.unipunc")
except ModuleNotFoundError as err:
    if err.name != "punct.models.unipunc":
        raise

try:  # registers "prosodic_pp" (same rule)
    importlib.import_module("punct.models.prosodic_pp.model")
except ModuleNotFoundError as err:
    if err.name not in ("punct.models.prosodic_pp", "punct.models.prosodic_pp.model"):
        raise
