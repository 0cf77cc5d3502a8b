"""One report of every recipe's reproduced tables (``./run.sh --corpus all``).

Each recipe ``egs/<corpus>/punct1`` writes its own RESULTS.md (``punct.bin.report``).
``combine_results`` merges them: a summary of every recipe (is its data there, did it
run, when were its results made), what to obtain for the recipes whose data is missing,
and the ``## Tables`` and ``## Plots`` sections of each RESULTS.md, headings one level
down and relative links rewritten for the combined file's place.

What ``./run.sh --corpus all`` did to each recipe is read from a status folder: per
recipe ``<corpus>.status`` holds one line, ``ran <exit>``, ``missing``, ``no-check`` or
``check-failed <exit>``, and ``<corpus>.check`` the output of its data check
(``local/<corpus>/check_data.sh``). Without a status folder every recipe counts as not
run by this command and each RESULTS.md found is merged.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from punct.errors import PunctInputError
from punct.score.results_md import REPO_DIR, git_info

STATE_ARGS = {"ran": 1, "missing": 0, "no-check": 0, "check-failed": 1}  # state -> words after it
SECTIONS = ("Tables", "Plots")
LINK = re.compile(r"(\]\()([^)\s]+)(\))")
META = re.compile(r"^\| (generated|git commit) \| (.*) \|$")


@dataclass(frozen=True)
class RecipeStatus:
    """What happened to one recipe: ``state`` is a key of ``STATE_ARGS`` or ``not-run``."""

    name: str
    state: str = "not-run"
    exit_code: int | None = None
    check_output: str = ""

    @property
    def succeeded(self) -> bool:
        return self.state == "ran" and self.exit_code == 0


def find_recipes(egs_dir: Path) -> list[str]:
    """Names of the recipes ``<egs_dir>/<name>/punct1``, sorted."""
    return sorted(p.parent.name for p in Path(egs_dir).glob("*/punct1") if p.is_dir())


def read_status(status_dir: Path, name: str) -> RecipeStatus:
    """The status of recipe ``name`` written by ``./run.sh --corpus all``."""
    path = Path(status_dir) / f"{name}.status"
    if not path.is_file():
        return RecipeStatus(name)
    words = path.read_text(encoding="utf-8").split()
    if not words or words[0] not in STATE_ARGS or len(words) != 1 + STATE_ARGS[words[0]]:
        raise PunctInputError(f"expected one of 'ran N', 'missing', 'no-check', "
                              f"'check-failed N', got {' '.join(words)!r}", path, 1)
    code = None
    if STATE_ARGS[words[0]]:
        try:
            code = int(words[1])
        except ValueError:
            raise PunctInputError(f"exit code {words[1]!r} is not a number", path, 1) from None
    check = Path(status_dir) / f"{name}.check"
    output = check.read_text(encoding="utf-8").strip() if check.is_file() else ""
    return RecipeStatus(name, words[0], code, output)


def relative_links(text: str, source_dir: Path, out_dir: Path) -> str:
    """Markdown links of ``text`` (relative to ``source_dir``) made relative to ``out_dir``."""

    def fix(match: re.Match[str]) -> str:
        target = match.group(2)
        if re.match(r"^([a-z]+:|/|#)", target):
            return match.group(0)
        moved = os.path.relpath(Path(source_dir).resolve() / target, Path(out_dir).resolve())
        return match.group(1) + Path(moved).as_posix() + match.group(3)

    return LINK.sub(fix, text)


def results_sections(text: str) -> tuple[dict[str, str], str]:
    """(``generated`` and ``git commit`` of the header, the Tables and Plots sections with
    headings one level down) of a RESULTS.md text."""
    meta: dict[str, str] = {}
    kept: list[str] = []
    keep = False
    for line in text.splitlines():
        found = META.match(line)
        if found and found.group(1) not in meta:
            meta[found.group(1)] = found.group(2)
        if line.startswith("## "):
            keep = line[3:].strip() in SECTIONS
        if keep:
            kept.append("#" + line if line.startswith("#") else line)
    return meta, "\n".join(kept).strip()


def state_words(status: RecipeStatus) -> tuple[str, str]:
    """(data, run) columns of the summary for ``status``."""
    data = {"ran": "present", "missing": "**missing**", "no-check": "no data check",
            "check-failed": f"check failed (exit {status.exit_code})",
            "not-run": "not checked"}[status.state]
    if status.state != "ran":
        return data, "not run"
    return data, "exit 0" if status.succeeded else f"**failed (exit {status.exit_code})**"


def combine_results(egs_dir: Path, out_path: Path, statuses: Sequence[RecipeStatus],
                    generated: dt.datetime | None = None, commit: str | None = None,
                    command: str | None = None) -> str:
    """The text of the combined report (see the module docstring); ``command`` is the
    command line that ran the recipes, if any."""
    out_dir = Path(out_path).parent
    by_name = {s.name: s for s in statuses}
    checked = any(s.state != "not-run" for s in statuses)
    when = (generated or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%d %H:%M:%S UTC")
    if commit is None:
        git = git_info(REPO_DIR, [out_path])
        commit = git["commit"] + {True: " (dirty)", False: " (clean)", None: ""}[git["dirty"]]
    rows, sections, missing = [], [], []
    for name in find_recipes(egs_dir):
        status = by_name.get(name, RecipeStatus(name))
        md = Path(egs_dir) / name / "punct1" / "RESULTS.md"
        data, run = state_words(status)
        results = "none"
        if md.is_file():
            meta, body = results_sections(md.read_text(encoding="utf-8"))
            link = Path(os.path.relpath(md.resolve(), out_dir.resolve())).as_posix()
            results = (f"[RESULTS.md]({link}), generated {meta.get('generated', '?')} "
                       f"at {meta.get('git commit', '?')}")
            if body and (status.succeeded or not checked):
                sections += [f"## {name}", "", f"From [{link}]({link}), generated "
                             f"{meta.get('generated', '?')}.", "",
                             relative_links(body, md.parent, out_dir), ""]
        rows.append(f"| {name} | {data} | {run} | {results} |")
        if status.state in ("missing", "check-failed", "no-check"):
            missing.append((name, status))
    out = ["# Results of all recipes", "",
           "_Generated by `python -m punct.bin.results_all` from the recipes' RESULTS.md; "
           "do not edit by hand._", "", f"Generated {when}, git commit {commit}.", "",
           *([f"Recipes run by `{command}`.", ""] if command else []),
           "| recipe | data | run | results |", "|---|---|---|---|", *rows, ""]
    if missing:
        out += ["## Recipes not run", ""]
        for name, status in missing:
            what = (status.check_output or "(the check printed nothing)")
            if status.state == "no-check":
                what = (f"no data check: add local/{name}/check_data.sh "
                        "(docs/ARCHITECTURE.md, 'A corpus')")
            out += [f"### {name}", "", "```", what, "```", ""]
    out += sections
    return "\n".join(out).rstrip() + "\n"
