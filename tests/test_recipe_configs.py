"""Every model config shipped with the project resolves: its ``base:`` chain exists and
every key of ``train:``, ``decode:`` and (where the family declares them) ``model:`` is
known, so a recipe cannot fail on a typo after hours of earlier stages."""

from __future__ import annotations

from pathlib import Path

import pytest

from punct.config import load_config

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = sorted([*ROOT.glob("conf/model/**/*.yaml"),
                  *ROOT.glob("egs/*/punct1/conf/model/**/*.yaml")])


def test_configs_are_found() -> None:
    assert len(CONFIGS) > 40
    assert ROOT / "egs/mini/punct1/conf/model/brnn_pause.yaml" in CONFIGS


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_config_resolves(path: Path) -> None:
    config = load_config(path)
    assert config.family and config.label_set
    assert config.train.epochs > 0


def test_mini_brnn_pause_is_one_stage_with_pauses() -> None:
    config = load_config(ROOT / "egs/mini/punct1/conf/model/brnn_pause.yaml")
    assert config.model.pause_input is True and not config.model.pause
    assert not config.init_from
