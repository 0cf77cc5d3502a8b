"""The one registry: every entry resolves to its kind of part, unknown names list the known."""

from __future__ import annotations

import pytest

from punct.align.base import Aligner, available_aligners, get_aligner
from punct.launch.backend import Backend, get_backend
from punct.launch.jobs import LaunchError, Resources
from punct.models.base import Family, Registry
from punct.registry import TABLE, UnknownNameError, lookup, names
from punct.score.layouts import available_layouts, load_layout


def test_every_entry_resolves_to_its_kind() -> None:
    for name in names("family"):
        family = lookup("family", name)
        assert isinstance(family, Family) and family.name == name
    for name in names("aligner"):
        aligner = lookup("aligner", name)
        assert issubclass(aligner, Aligner) and aligner.name == name
    for name in names("layout"):
        assert callable(lookup("layout", name).build_tables)
    for name in names("backend"):
        backend = lookup("backend", name)
        assert issubclass(backend, Backend) and backend.name == name


def test_names_are_the_sorted_table_keys() -> None:
    assert names("aligner") == sorted(TABLE["aligner"]) == available_aligners()
    assert names("layout") == available_layouts()
    assert Registry.names() == ["autopunct", "brnn", "courtland", "nagy", "prosodic_pp",
                                "unipunc"]
    with pytest.raises(KeyError, match="no registry table 'nope'"):
        names("nope")


def test_unknown_names_list_the_known_ones_in_each_callers_error_type() -> None:
    with pytest.raises(UnknownNameError, match=r"unknown family 'x' \(known: autopunct, "):
        lookup("family", "x")
    with pytest.raises(KeyError, match="unknown family 'x'"):
        Registry.get("x")
    with pytest.raises(ValueError, match=r"unknown aligner 'x'.*dtw"):
        get_aligner("x")
    with pytest.raises(ValueError, match="unknown table layout 'x'"):
        load_layout("x")
    with pytest.raises(LaunchError, match=r"unknown backend 'x' \(known: local, slurm\)"):
        get_backend("x", Resources())


def test_families_declare_what_the_recipe_prepares() -> None:
    pp = Registry.get("prosodic_pp")
    assert pp.needs_streams == ("prosody",) and not pp.decodes_mixed_sets and pp.pr_curves
    for name in ("brnn", "autopunct", "unipunc"):
        family = Registry.get(name)
        assert family.needs_streams == () and family.decodes_mixed_sets
