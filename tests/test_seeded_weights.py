"""The refactoring check: identical weights and configs pass, any changed bit is named."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from punct.bin.seeded_weights import differences, main
from punct.config import resolve_config, save_config
from punct.errors import MissingDataError


def experiment(path: Path, weight: torch.Tensor, epochs: int = 2) -> Path:
    path.mkdir(parents=True)
    torch.save({"model": {"w": weight, "b": torch.zeros(2)}}, path / "best.pt")
    save_config(resolve_config({"family": "brnn", "train": {"epochs": epochs}}),
                path / "config.yaml")
    return path


def test_differences_name_a_changed_bit_and_a_changed_config(tmp_path: Path) -> None:
    w = torch.tensor([1.0, 2.0, 3.0])
    old = experiment(tmp_path / "old", w)
    assert differences(experiment(tmp_path / "same", w.clone()), old) == []
    nudged = w.clone()
    nudged[1] = torch.nextafter(nudged[1], torch.tensor(10.0))  # one ulp
    found = differences(experiment(tmp_path / "nudged", nudged), old)
    assert len(found) == 1 and found[0].startswith("w: max |diff|")
    found = differences(experiment(tmp_path / "epochs", w.clone(), epochs=3), old)
    assert found == ["the resolved config.yaml differs"]


def test_a_failed_training_or_a_missing_baseline_is_named(tmp_path: Path,
                                                         capfd: pytest.CaptureFixture[str]
                                                         ) -> None:
    config = tmp_path / "no_such.yaml"
    assert main(["--config", str(config), "--train-dir", str(tmp_path), "--dev-dir",
                 str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    err = capfd.readouterr().err  # the trainer's, then this command's
    assert f"train: {config}: config file not found" in err
    assert err.endswith(f"seeded_weights: training {config} failed (exit 2; its error is "
                        "above)\n") and "Traceback" not in err
    new = experiment(tmp_path / "new", torch.ones(3))
    with pytest.raises(MissingDataError, match=r"no best\.pt to compare with"):
        differences(new, tmp_path / "old")
