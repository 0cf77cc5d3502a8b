"""system_info: the recipe driver's questions answered from the families' declarations."""

from __future__ import annotations

from pathlib import Path

import pytest

from punct.bin import system_info

TINY = Path(__file__).resolve().parents[1] / "conf" / "model" / "tiny"
SYSTEMS = ["brnn_text", "prosodic_pp", "unipunc"]


def ask(query: str, capsys: pytest.CaptureFixture[str], systems=SYSTEMS) -> list[str]:
    argv = ["--query", query]
    for name in systems:
        argv += ["--config", str(TINY / f"{name}.yaml")]
    assert system_info.main(argv) == 0
    return capsys.readouterr().out.splitlines()


def test_queries(capsys: pytest.CaptureFixture[str]) -> None:
    assert ask("family", capsys) == ["brnn_text brnn", "prosodic_pp prosodic_pp",
                                     "unipunc unipunc"]
    # prosody from prosodic_pp (its config and its family), fbank from unipunc's config
    assert ask("streams", capsys) == ["prosody fbank"]
    assert ask("streams", capsys, ["brnn_text"]) == [""]
    assert ask("decodes_mixed_sets", capsys) == ["brnn_text", "unipunc"]
    assert ask("pr_curves", capsys) == ["prosodic_pp"]


def test_all_queries_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    """``all``: each query's lines, prefixed by its name (the driver asks once per run)."""
    systems = ["brnn_pause", "brnn_text", "prosodic_pp", "unipunc"]
    expected = [f"{query} {line}".rstrip() for query in system_info.QUERIES
                for line in ask(query, capsys, systems)]
    assert ask("all", capsys, systems) == expected
    assert "streams prosody fbank" in expected and "waves brnn_pause" in expected
    assert ask("all", capsys, ["brnn_text"])[:2] == ["family brnn_text brnn", "streams"]


def test_unknown_family_names_the_config(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "x.yaml"
    bad.write_text("family: nope\nlabel_set: iwslt4\n", encoding="utf-8")
    assert system_info.main(["--query", "family", "--config", str(bad)]) == 1
    assert str(bad) in capsys.readouterr().err


def test_waves_order_systems_after_the_one_they_start_from(
        capsys: pytest.CaptureFixture[str]) -> None:
    # tiny brnn_pause starts from exp/brnn_text: a later wave; prosodic_pp has no init_from
    assert ask("waves", capsys, ["brnn_pause", "prosodic_pp", "brnn_text"]) == [
        "prosodic_pp brnn_text", "brnn_pause"]
    # the system it starts from is not in this run (trained in an earlier stage): one wave
    assert ask("waves", capsys, ["brnn_pause", "prosodic_pp"]) == ["brnn_pause prosodic_pp"]


def test_waves_chain_and_cycle() -> None:
    starts = {"c": ["exp/b"], "b": ["exp/a"], "a": [], "d": ["/elsewhere/model"]}
    assert system_info.training_waves(starts) == [["a", "d"], ["b"], ["c"]]
    with pytest.raises(system_info.PunctInputError, match="cycle among x, y"):
        system_info.training_waves({"x": ["exp/y"], "y": ["exp/x"]})


def test_waves_put_a_soup_after_all_its_systems() -> None:
    # the soup waits for the last of its ingredients, whichever wave that is in
    starts = {"soup": ["exp/a", "exp/ft", "/elsewhere/x"], "a": [], "ft": ["exp/a"]}
    assert system_info.training_waves(starts) == [["a"], ["ft"], ["soup"]]
