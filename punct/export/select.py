"""Choose the system to publish: the best on the validation set, with the facts for its card.

:func:`best_on_dev` reads ``exp/<system>/decode_<dev_set>/scores.json`` of each candidate
(stage 6 writes them) and returns the candidates ranked by micro-F1 over all utterances
(the selection metric of training); a test set never enters the choice.
:func:`training_facts` gathers what the model card states about the training: minutes,
epochs, best epoch, threads, device, precision, CPU (``env.json``, ``history.json``,
``train.log``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from punct.errors import MissingDataError, PunctInputError
from punct.score.training import soup_members, system_training


@dataclass(frozen=True)
class Candidate:
    """One system's validation score."""

    system: str
    micro_f1: float
    macro_f1: float | None
    scores: Path


def dev_candidate(exp_root: Path, system: str, dev_set: str) -> Candidate | None:
    """``system``'s score on ``dev_set`` (None when it has no such scores.json)."""
    path = exp_root / system / f"decode_{dev_set}" / "scores.json"
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        metrics = doc["metrics"]["all"]
        micro = float(metrics["micro_f1"])
    except (ValueError, KeyError, TypeError) as err:
        raise PunctInputError(f"not a scores.json with metrics.all.micro_f1 ({err})",
                              path) from err
    macro = metrics.get("macro_f1")
    return Candidate(system, micro, float(macro) if macro is not None else None, path)


def best_on_dev(exp_root: str | Path, systems: Sequence[str], dev_set: str
                ) -> list[Candidate]:
    """The candidates with a score on ``dev_set``, best first (ties: the order given)."""
    root = Path(exp_root)
    found = [c for s in systems if (c := dev_candidate(root, s, dev_set)) is not None]
    if not found:
        raise MissingDataError(
            f"no system among {' '.join(systems)} has been scored on {dev_set} "
            f"(exp/<system>/decode_{dev_set}/scores.json: run stage 6 with {dev_set} "
            "among the test sets)", root)
    order = {s: i for i, s in enumerate(systems)}
    return sorted(found, key=lambda c: (-c.micro_f1, order[c.system]))


def training_facts(exp_dir: Path) -> dict[str, Any]:
    """The card's training facts of one experiment (empty when it has no history); for a
    weight soup also those of the systems it averages (``ingredients``)."""
    facts: dict[str, Any] = dict(system_training(exp_dir) or {})
    members = soup_members(exp_dir)
    if members:
        facts["ingredients"] = {name: system_training(path) or {} for name, path in members}
    return facts
