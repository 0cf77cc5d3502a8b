"""Model families; importing this package registers every family in ``Registry``.

``brnn`` (punctuator2), ``autopunct`` (González-Docasal et al.), ``nagy`` (Nagy et al.),
``courtland`` (Courtland et al.), ``prosodic_pp`` (Moró & Szaszák), ``unipunc`` (Zhu et al.).
"""

from __future__ import annotations

from punct.models import autopunct, brnn, courtland, nagy, unipunc
from punct.models.base import Registry
from punct.models.prosodic_pp import model as prosodic_pp

__all__ = ["Registry", "autopunct", "brnn", "courtland", "nagy", "prosodic_pp", "unipunc"]
