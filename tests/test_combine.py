"""The combined report of all recipes (punct/score/combine.py, python -m punct.bin.results_all)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from punct.bin import results_all
from punct.errors import PunctInputError
from punct.score.combine import (
    RecipeStatus,
    combine_results,
    find_recipes,
    read_status,
    relative_links,
    results_sections,
)

RESULTS = """# Results: {name}

| | |
|---|---|
| generated | 2026-11-24 06:10:08 UTC |
| git commit | abc123 (clean) |

## Systems scored

| system | scores |
|---|---|
| brnn | exp/brnn/decode_test/scores.json |

## Tables

### Table 4: micro-F1 (%) on {name}

| System | F1 |
|---|---|
| brnn | 51.2 |

Files: [csv](results/table4.csv), [web](https://example.org/t.csv)

## Plots

![f1](results/f1.png)

## run_time

### seconds_per_stage
"""


def make_egs(root: Path, names: tuple[str, ...] = ("alpha", "beta", "gamma")) -> Path:
    egs = root / "egs"
    for name in names:
        (egs / name / "punct1").mkdir(parents=True)
    (egs / "alpha" / "punct1" / "RESULTS.md").write_text(RESULTS.format(name="alpha"))
    (egs / "beta" / "punct1" / "RESULTS.md").write_text(RESULTS.format(name="beta"))
    (egs / "README.md").write_text("not a recipe\n")
    return egs


def test_results_sections_keep_tables_and_plots_one_level_down() -> None:
    meta, body = results_sections(RESULTS.format(name="x"))
    assert meta == {"generated": "2026-11-24 06:10:08 UTC", "git commit": "abc123 (clean)"}
    lines = body.splitlines()
    assert lines[0] == "### Tables" and "#### Table 4: micro-F1 (%) on x" in lines
    assert "### Plots" in lines and "| brnn | 51.2 |" in lines
    assert "Systems scored" not in body and "run_time" not in body
    assert "seconds_per_stage" not in body


def test_relative_links_follow_the_report(tmp_path: Path) -> None:
    text = "[csv](results/t.csv) [web](https://e.org/x) [abs](/a/b) [anchor](#top)"
    moved = relative_links(text, tmp_path / "egs" / "a" / "punct1", tmp_path)
    assert moved == ("[csv](egs/a/punct1/results/t.csv) [web](https://e.org/x) [abs](/a/b) "
                     "[anchor](#top)")


def test_read_status(tmp_path: Path) -> None:
    (tmp_path / "a.status").write_text("ran 0\n")
    (tmp_path / "a.check").write_text("a: using /data/a\n")
    (tmp_path / "b.status").write_text("missing\n")
    (tmp_path / "c.status").write_text("check-failed 7\n")
    assert read_status(tmp_path, "a") == RecipeStatus("a", "ran", 0, "a: using /data/a")
    assert read_status(tmp_path, "a").succeeded
    assert read_status(tmp_path, "b") == RecipeStatus("b", "missing", None, "")
    assert read_status(tmp_path, "c").exit_code == 7 and not read_status(tmp_path, "c").succeeded
    assert read_status(tmp_path, "d") == RecipeStatus("d")  # no status file: not run


@pytest.mark.parametrize("line", ["ran", "ran x", "missing 2", "done 0", ""])
def test_read_status_rejects_bad_lines(tmp_path: Path, line: str) -> None:
    (tmp_path / "a.status").write_text(line + "\n")
    with pytest.raises(PunctInputError, match=r"a\.status:1: "):
        read_status(tmp_path, "a")


def test_combined_report(tmp_path: Path) -> None:
    egs = make_egs(tmp_path)
    assert find_recipes(egs) == ["alpha", "beta", "gamma"]
    statuses = [RecipeStatus("alpha", "ran", 0), RecipeStatus("beta", "ran", 3),
                RecipeStatus("gamma", "missing", None, "gamma: set GAMMA to your copy")]
    text = combine_results(egs, tmp_path / "RESULTS_ALL.md", statuses,
                           generated=dt.datetime(2026, 11, 24, 7, 0, tzinfo=dt.UTC),
                           commit="c0ffee (clean)", command="./run.sh --corpus all --nj 1")
    assert "Generated 2026-11-24 07:00:00 UTC, git commit c0ffee (clean)." in text
    assert "Recipes run by `./run.sh --corpus all --nj 1`." in text
    link = "[RESULTS.md](egs/{0}/punct1/RESULTS.md), generated 2026-11-24 06:10:08 UTC at abc123"
    assert f"| alpha | present | exit 0 | {link.format('alpha')} (clean) |" in text
    assert f"| beta | present | **failed (exit 3)** | {link.format('beta')} (clean) |" in text
    assert "| gamma | **missing** | not run | none |" in text
    assert "## Recipes not run\n\n### gamma\n\n```\ngamma: set GAMMA to your copy\n```" in text
    # Only the recipe that ran through has its tables in the report, links rewritten.
    assert "## alpha\n\nFrom [egs/alpha/punct1/RESULTS.md](egs/alpha/punct1/RESULTS.md), " \
        "generated 2026-11-24 06:10:08 UTC." in text
    assert "## beta" not in text
    assert "#### Table 4: micro-F1 (%) on alpha" in text and "on beta" not in text
    assert "![f1](egs/alpha/punct1/results/f1.png)" in text
    assert "[csv](egs/alpha/punct1/results/table4.csv)" in text


def test_command_without_status_merges_every_results_md(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture) -> None:
    egs = make_egs(tmp_path)
    out = tmp_path / "report" / "ALL.md"
    assert results_all.main(["--egs-dir", str(egs), "--out", str(out)]) == 0
    text = out.read_text()
    assert "| alpha | not checked | not run | [RESULTS.md](../egs/alpha/punct1/RESULTS.md)" in text
    assert "#### Table 4: micro-F1 (%) on alpha" in text and "on beta" in text
    assert "![f1](../egs/beta/punct1/results/f1.png)" in text
    assert "| gamma | not checked | not run | none |" in text
    assert "Recipes not run" not in text and "Recipes run by" not in text
    assert "3 recipes, report in" in capsys.readouterr().out


def test_command_lists_recipes_without_a_data_check(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture) -> None:
    egs = make_egs(tmp_path)
    status = tmp_path / "status"
    status.mkdir()
    (status / "alpha.status").write_text("no-check\n")
    out = tmp_path / "ALL.md"
    assert results_all.main(["--egs-dir", str(egs), "--status-dir", str(status),
                             "--out", str(out)]) == 0
    text = out.read_text()
    assert "| alpha | no data check | not run |" in text
    assert "no data check: add local/alpha/check_data.sh" in text
    assert "| beta | not checked | not run |" in text
    assert "alpha: not run (no-check)" in capsys.readouterr().out


def test_command_errors(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert results_all.main(["--egs-dir", str(tmp_path), "--out", str(tmp_path / "o.md")]) == 2
    assert "no recipe <name>/punct1" in capsys.readouterr().err
    egs = make_egs(tmp_path)
    (tmp_path / "st").mkdir()
    (tmp_path / "st" / "beta.status").write_text("ran zero\n")
    assert results_all.main(["--egs-dir", str(egs), "--status-dir", str(tmp_path / "st"),
                             "--out", str(tmp_path / "o.md")]) == 1
    assert "beta.status:1: exit code 'zero' is not a number" in capsys.readouterr().err
    assert not (tmp_path / "o.md").exists()
