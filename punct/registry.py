"""The one registry of pluggable parts: a table name -> ``"module:attribute"``.

Model families, aligners, report layouts and launcher backends are all looked up here.
The table names where each part lives as a string and the module is imported only on
lookup, so this module imports nothing of the package and no part imports the code that
chooses it (no import circle). A new part is one line in :data:`TABLE`.
"""

from __future__ import annotations

import importlib
from typing import Any

TABLE: dict[str, dict[str, str]] = {
    # Model families (punct.models.base.Family objects).
    "family": {
        "autopunct": "punct.models.autopunct:FAMILY",
        "brnn": "punct.models.brnn:FAMILY",
        "courtland": "punct.models.courtland:FAMILY",
        "nagy": "punct.models.nagy:FAMILY",
        "prosodic_pp": "punct.models.prosodic_pp.model:FAMILY",
        "unipunc": "punct.models.unipunc:FAMILY",
    },
    # Aligner classes (punct.align.base.Aligner subclasses, built with keyword options).
    "aligner": {
        "auto": "punct.align.auto:AutoAligner",
        "ctc": "punct.align.ctc_aligner:CtcAligner",
        "ctm": "punct.align.ctm:CtmAligner",
        "dtw": "punct.align.dtw_aligner:DtwAligner",
        "espnet_ctc": "punct.align.espnet_ctc_aligner:EspnetCtcAligner",
        "pocketsphinx": "punct.align.pocketsphinx_aligner:PocketsphinxAligner",
        "reference": "punct.align.ctm:ReferenceAligner",
        "textgrid": "punct.align.textgrid:TextGridAligner",
        "vad": "punct.align.vad_aligner:VadAligner",
    },
    # Report table layouts (modules with build_tables and optionally make_plots);
    # ``autopunct`` is built into punct.score.tables (report handles it).
    "layout": {
        "courtland": "punct.score.layouts.courtland",
        "moro": "punct.score.layouts.moro",
        "nagy": "punct.score.layouts.nagy",
        "unipunc": "punct.score.layouts.unipunc",
    },
    # Launcher backends (punct.launch.backend.Backend subclasses).
    "backend": {
        "local": "punct.launch.local:LocalBackend",
        "slurm": "punct.launch.slurm:SlurmBackend",
    },
}


class UnknownNameError(ValueError):
    """A name that is not in its table; the message lists the known names."""


def names(kind: str) -> list[str]:
    """The registered names of one kind (``family``, ``aligner``, ``layout``, ``backend``)."""
    if kind not in TABLE:
        raise KeyError(f"no registry table {kind!r} (known: {', '.join(sorted(TABLE))})")
    return sorted(TABLE[kind])


def lookup(kind: str, name: str) -> Any:
    """Import and return the part registered as ``name`` in table ``kind``.

    ``"pkg.mod:attr"`` gives the attribute, ``"pkg.mod"`` the module itself.
    Raises :class:`UnknownNameError` naming the known entries for an unknown ``name``.
    """
    known = names(kind)
    if name not in TABLE[kind]:
        raise UnknownNameError(f"unknown {kind} {name!r} (known: {', '.join(known)})")
    module_name, _, attribute = TABLE[kind][name].partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute) if attribute else module
