"""Answer the recipe driver's questions about its systems from what their families declare.

    python -m punct.bin.system_info --query streams --config conf/model/a.yaml --config ...

``--query`` is one of:

- ``family``: ``<system> <family>`` per config;
- ``streams``: the acoustic streams the systems read (their ``featurizer.streams`` and
  their families' ``needs_streams``), space-separated, in order of first appearance;
- ``decodes_mixed_sets`` / ``pr_curves``: the systems (config file stems) whose family
  declares it, one per line;
- ``waves``: the systems in training order, one wave per line (space-separated): a system
  whose ``init_from`` names another of the systems (``exp/<name>``), or whose ``soup``
  lists others, comes in a later wave than those, and the systems of one wave may train
  at once;
- ``all``: every query above, each output line prefixed by the query's name and a space
  (``streams prosody fbank``, ``waves a b``, ...): the stage driver asks once per run
  (each call pays for importing every family).

The stage driver (run.sh) uses it so that it never names a model family.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path

from punct.config import Config, load_config
from punct.errors import PunctInputError, report_error
from punct.models.base import Family, Registry

QUERIES = ("family", "streams", "decodes_mixed_sets", "pr_curves", "waves")


def system_streams(config: Config, family: Family) -> list[str]:
    """The acoustic streams one system reads: its config's, then its family's."""
    streams = list(config.streams)
    return streams + [s for s in family.needs_streams if s not in streams]


def training_waves(starts: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Systems grouped so that each trains in a later wave than the systems it starts from.

    ``starts`` maps each system to the experiment paths it starts from (its ``init_from``,
    or the systems its ``soup`` averages); a path whose last part is another of the systems
    is a dependency, any other path is outside the run.
    """
    depends = {name: {Path(path).name for path in paths if Path(path).name in starts}
               for name, paths in starts.items()}
    waves: list[list[str]] = []
    placed: dict[str, int] = {}
    while len(placed) < len(starts):
        ready = [name for name in starts if name not in placed
                 and depends[name] <= set(placed)]
        if not ready:
            cycle = sorted(set(starts) - set(placed))
            raise PunctInputError(f"init_from/soup form a cycle among {', '.join(cycle)}")
        for name in ready:
            placed[name] = len(waves)
        waves.append(ready)
    return waves


def starts_from(config: Config) -> list[str]:
    """The experiment paths a system needs before it can train: ``init_from``, ``soup``."""
    return [*([config.init_from] if config.init_from else []), *config.soup]


def answer(query: str, configs: Sequence[Path]) -> list[str]:
    """The output lines of ``query`` over the systems of ``configs``."""
    if query == "waves":
        starts = {path.stem: starts_from(load_config(path)) for path in configs}
        return [" ".join(wave) for wave in training_waves(starts)]
    lines: list[str] = []
    streams: list[str] = []
    for path in configs:
        config = load_config(path)
        family = Registry.get(config.family)
        system = path.stem
        if query == "family":
            lines.append(f"{system} {family.name}")
        elif query == "streams":
            streams += [s for s in system_streams(config, family) if s not in streams]
        elif getattr(family, query):
            lines.append(system)
    return [" ".join(streams)] if query == "streams" else lines


def answer_all(configs: Sequence[Path]) -> list[str]:
    """Every query's lines, each prefixed by the query's name."""
    return [f"{query} {line}".rstrip() for query in QUERIES for line in answer(query, configs)]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m punct.bin.system_info", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", action="append", required=True, type=Path,
                   help="a system's config (repeat for every system)")
    p.add_argument("--query", required=True, choices=(*QUERIES, "all"),
                   help="what to answer")
    args = p.parse_args(argv)
    try:
        lines = (answer_all(args.config) if args.query == "all"
                 else answer(args.query, args.config))
    except PunctInputError as err:
        return report_error("system_info", err)
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
