"""Weight soups (punct.train.soup): averaging, the checks on the ingredients, and a soup
system built by train_experiment that decodes like a trained one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from helpers.trainset import TINY, make_set

from punct.config import load_config, resolve_config
from punct.data.sequences import load_data_dir
from punct.errors import PunctInputError
from punct.export.card import training_section
from punct.export.select import training_facts
from punct.labels import get_label_set
from punct.models.base import Registry
from punct.models.checkpoint import load_checkpoint
from punct.score.training import system_training
from punct.train.dev_eval import evaluate
from punct.train.soup import average_states
from punct.train.trainer import train_experiment

NAMES = ["exp/a", "exp/b", "exp/c"]
SEEN = {**TINY, "decode": {**TINY["decode"], "combinations": "seen"}}
"""The tiny BRNN (full13, multi-label) decoding only the sets of marks seen in training."""


def test_average_states_keeps_the_largest_batch_norm_counter() -> None:
    states = [{"bn.num_batches_tracked": torch.tensor(40), "w": torch.ones(1)},
              {"bn.num_batches_tracked": torch.tensor(55), "w": torch.zeros(1)}]
    soup = average_states(states, NAMES[:2])
    assert int(soup["bn.num_batches_tracked"]) == 55
    assert soup["w"].tolist() == [0.5]


def test_average_states_means_floats_and_keeps_equal_integers() -> None:
    states = [{"w": torch.tensor([1.0, 2.0]), "ids": torch.tensor([0, 1])},
              {"w": torch.tensor([3.0, 6.0]), "ids": torch.tensor([0, 1])},
              {"w": torch.tensor([2.0, 1.0]), "ids": torch.tensor([0, 1])}]
    soup = average_states(states, NAMES)
    assert soup["w"].tolist() == [2.0, 3.0]
    assert soup["w"].dtype == torch.float32
    assert soup["ids"].tolist() == [0, 1]


@pytest.mark.parametrize(("other", "message"), [
    ({"w": torch.zeros(3), "ids": torch.tensor([0, 1])}, r"w is \(3,\) in exp/b"),
    ({"w": torch.zeros(2), "ids": torch.tensor([1, 0])}, "ids differs between exp/b"),
    ({"w": torch.zeros(2)}, "exp/b and exp/a hold different weights"),
])
def test_average_states_refuses_what_cannot_be_averaged(other: dict[str, torch.Tensor],
                                                         message: str) -> None:
    first = {"w": torch.zeros(2), "ids": torch.tensor([0, 1])}
    with pytest.raises(PunctInputError, match=message):
        average_states([first, other], NAMES[:2])


def test_config_soup_needs_two_systems_and_no_init_from() -> None:
    assert resolve_config({**TINY, "soup": ["exp/a", "exp/b"]}).soup == ("exp/a", "exp/b")
    with pytest.raises(PunctInputError, match="at least 2 different systems"):
        resolve_config({**TINY, "soup": ["exp/a", "exp/a"]})
    with pytest.raises(PunctInputError, match="exclude each other"):
        resolve_config({**TINY, "soup": ["exp/a", "exp/b"], "init_from": "exp/a"})
    with pytest.raises(PunctInputError, match="not a list of experiment paths"):
        resolve_config({**TINY, "soup": "exp/a"})


@pytest.fixture(scope="module")
def ingredients(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two tiny BRNNs trained on the same data with different seeds."""
    root = tmp_path_factory.mktemp("soup")
    make_set(root / "train", 60, 1)
    make_set(root / "dev", 15, 2)
    for name, seed in (("a", 1), ("b", 2)):
        config = resolve_config(SEEN, ["train.epochs=2", f"train.seed={seed}"])
        train_experiment(config, root / "train", root / "dev", root / name, quiet=True)
    return root


def test_soup_system_averages_its_systems_and_scores_on_dev(ingredients: Path) -> None:
    root = ingredients
    systems = [str(root / "a"), str(root / "b")]
    config = resolve_config({**SEEN, "soup": systems})
    summary = train_experiment(config, root / "train", root / "dev", root / "soup",
                               quiet=True)
    a, b = (load_checkpoint(root / n / "best.pt")["model"] for n in ("a", "b"))
    soup = load_checkpoint(root / "soup" / "best.pt")["model"]
    for key, value in soup.items():
        if value.is_floating_point():
            assert torch.allclose(value, (a[key] + b[key]) / 2, atol=1e-7), key
        else:  # e.g. masks: equal in both systems, kept
            assert torch.equal(value, a[key]) and torch.equal(value, b[key]), key
    history = json.loads((root / "soup" / "history.json").read_text())
    assert len(history) == 1
    assert history[0]["soup"] == systems and history[0]["best"] is True
    assert summary["best_epoch"] == 0
    assert summary["dev_micro_f1"] == history[0]["dev_micro_f1"]
    assert 0.0 < summary["dev_micro_f1"] <= 1.0
    assert (root / "soup" / "featurizer").is_dir()
    assert "soup brnn of 2 systems" in (root / "soup" / "train.log").read_text()
    # the soup decodes as a trained system does: its written dev figure is reproduced, and
    # it decodes under its systems' rule (the sets of marks seen in training, thresholds)
    saved = load_config(root / "soup" / "config.yaml")
    assert saved.decode.combinations == load_config(root / "a" / "config.yaml").decode.combinations
    assert isinstance(saved.decode.combinations, list)
    assert (root / "soup" / "thresholds.json").is_file()
    family = Registry.get("brnn")
    featurizer = family.load_featurizer(root / "soup" / "featurizer", saved)
    model = family.make_model(saved, featurizer)
    model.load_state_dict(soup)
    utts, seqs = load_data_dir(root / "dev", get_label_set("full13"))
    again = evaluate(model, featurizer, saved, utts, seqs, featurizer.windows(seqs, 16, 16))
    assert again["dev_micro_f1"] == pytest.approx(summary["dev_micro_f1"])


def test_soup_refuses_systems_of_another_architecture(ingredients: Path,
                                                      tmp_path: Path) -> None:
    config = resolve_config({**SEEN, "model": {"hidden": 32},
                             "soup": [str(ingredients / "a"), str(ingredients / "b")]})
    with pytest.raises(PunctInputError, match=r"differs from the soup's config in model\.hidden"):
        train_experiment(config, ingredients / "train", ingredients / "dev", tmp_path / "s",
                         quiet=True)
    # a system trained on other data has another vocabulary: refused, not averaged
    make_set(tmp_path / "other", 40, 9)
    table = tmp_path / "other" / "words.tsv"  # fillers w0..w14 (W0..) renamed v0..v14
    table.write_text(re.sub(r"\t([wW])(\d)", lambda m: "\t" + "vV"["wW".index(m[1])] + m[2],
                            table.read_text(encoding="utf-8")),
                     encoding="utf-8")
    other = resolve_config(SEEN, ["train.epochs=1", "train.seed=1"])
    train_experiment(other, tmp_path / "other", ingredients / "dev", tmp_path / "c",
                     quiet=True)
    mixed = resolve_config({**SEEN, "soup": [str(ingredients / "a"), str(tmp_path / "c")]})
    with pytest.raises(PunctInputError, match=r"featurizer differs"):
        train_experiment(mixed, ingredients / "train", ingredients / "dev", tmp_path / "s3",
                         quiet=True)
    missing = resolve_config({**SEEN, "soup": [str(ingredients / "a"), str(tmp_path / "x")]})
    with pytest.raises(PunctInputError, match=r"no best\.pt in"):
        train_experiment(missing, ingredients / "train", ingredients / "dev",
                         tmp_path / "s2", quiet=True)


def test_soup_training_record_and_model_card_name_its_systems(ingredients: Path) -> None:
    root = ingredients
    systems = [str(root / "a"), str(root / "b")]
    exp = root / "soup_card"
    train_experiment(resolve_config({**SEEN, "soup": systems}), root / "train", root / "dev",
                     exp, quiet=True)
    record = system_training(exp)
    assert record is not None
    assert record["epochs"] == 0 and record["best_epoch"] is None
    assert record["soup_of"] == ", ".join(systems)
    facts = training_facts(exp)
    assert list(facts["ingredients"]) == systems
    assert facts["ingredients"][systems[0]]["epochs"] == 2  # the trained system's own record
    text = "\n".join(training_section(facts))
    assert f"Not trained: the mean of the weights of {', '.join(systems)}" in text
    assert all(text.count(f"| {s} | ") == 1 for s in systems)
