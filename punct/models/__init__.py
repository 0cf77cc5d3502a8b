"""Model families, looked up by name in the ``family`` table of :mod:`punct.registry`.

``brnn`` (punctuator2), ``autopunct`` (González-Docasal et al.), ``nagy`` (Nagy et al.),
``courtland`` (Courtland et al.), ``prosodic_pp`` (Moró & Szaszák), ``unipunc`` (Zhu et al.).
``Registry.get(name)`` imports the family's module on first use.
"""

from __future__ import annotations

from punct.models.base import Registry

__all__ = ["Registry"]
