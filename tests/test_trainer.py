"""Config handling, the shared training loop (learning, exp dir, determinism, stage 2),
the train CLI and the dump stage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml
from helpers.trainset import TINY, make_set

from punct.bin import dump as dump_cli
from punct.bin import train as train_cli
from punct.config import OptimizerSection, load_config, resolve_config
from punct.errors import MissingDataError
from punct.train.env import set_num_threads
from punct.train.optim import make_optimizer, warmup_factor
from punct.train.trainer import train_experiment
from punct.wordtable import WordRow, write_word_table


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("trainer")
    make_set(root / "train", 300, 1)
    make_set(root / "dev", 40, 2)
    return root


@pytest.fixture(scope="module")
def run_a(data: Path) -> tuple[Path, dict]:
    exp = data / "exp_a"
    summary = train_experiment(resolve_config(TINY), data / "train", data / "dev", exp,
                               threads=1, quiet=True)
    return exp, summary


# -- config (the typed config itself: tests/test_config.py) ---------------------------
@pytest.mark.parametrize("name", ["conf/model/brnn_text.yaml", "conf/model/brnn_pause.yaml",
                                  "conf/model/tiny/brnn_text.yaml",
                                  "conf/model/tiny/brnn_pause.yaml"])
def test_shipped_configs_resolve(name: str) -> None:
    cfg = load_config(Path(__file__).resolve().parents[1] / name)
    assert cfg.family == "brnn"
    if "pause" in name:
        assert cfg.model.pause is True and cfg.init_from


def optimizer(**options: object) -> OptimizerSection:
    """A checked ``train.optimizer`` section."""
    return resolve_config({"family": "brnn", "train": {"optimizer": options}}).train.optimizer


def test_optimizers_and_warmup() -> None:
    p = [torch.nn.Parameter(torch.zeros(2))]
    assert isinstance(make_optimizer(p, optimizer(name="adagrad", lr=0.02)), torch.optim.Adagrad)
    sgd = make_optimizer(p, optimizer(name="sgd", lr=0.1, momentum=0.9))
    assert isinstance(sgd, torch.optim.SGD) and sgd.defaults["momentum"] == 0.9
    opt = make_optimizer(p, optimizer(name="adamw", lr=1e-3, weight_decay=0.01))
    assert opt.param_groups[0]["weight_decay"] == 0.01
    assert opt.defaults["fused"] is True  # one fused kernel where torch has it
    # null keeps torch's default (a config based on a LookAhead one drops k and alpha)
    plain = make_optimizer(p, optimizer(name="adamw", lr=1e-3, k=None, alpha=None))
    assert isinstance(plain, torch.optim.AdamW)
    assert not make_optimizer(p, optimizer(name="adam", lr=1e-3, fused=False)).defaults["fused"]
    groups = [{"params": (q for q in p), "lr": 0.1}]  # a generator is taken too
    assert make_optimizer(groups, optimizer(name="adam")).defaults["fused"] is True
    assert make_optimizer(p, optimizer(name="radam")).defaults.get("fused") in (None, False)
    # the fused step equals the per-parameter loop
    ref, fused = (torch.nn.Parameter(torch.ones(3)) for _ in range(2))
    for w, kw in ((ref, {"fused": False}), (fused, {})):
        o = make_optimizer([w], optimizer(name="adamw", lr=0.1, **kw))
        for _ in range(3):
            w.grad = torch.tensor([1.0, -2.0, 0.5])
            o.step()
    assert torch.allclose(ref, fused, atol=1e-6)
    assert [warmup_factor(s, 4) for s in range(6)] == [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]
    assert warmup_factor(0, 0) == 1.0


def test_set_num_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    old = torch.get_num_threads()
    try:
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        assert set_num_threads(None) == 1
        assert set_num_threads(2) == 2
    finally:
        torch.set_num_threads(old)


# -- training ---------------------------------------------------------------------------
def test_learns_far_above_all_o_baseline(run_a: tuple[Path, dict]) -> None:
    exp, summary = run_a
    # all-O gives micro-F1 0; "PERIOD at utterance end only" gives about 0.6 on this data
    assert summary["dev_micro_f1"] > 0.9
    assert summary["seconds"] < 60
    history = json.loads((exp / "history.json").read_text())
    assert history[-1]["train_loss"] < history[0]["train_loss"] / 3


def test_exp_dir_contents(run_a: tuple[Path, dict]) -> None:
    exp, summary = run_a
    names = {p.name for p in exp.iterdir()}
    assert {"config.yaml", "env.json", "featurizer", "best.pt", "last.pt", "train.log",
            "history.json"} <= names
    cfg = yaml.safe_load((exp / "config.yaml").read_text())
    assert cfg == resolve_config(TINY).to_dict()  # resolved: every default written
    env = json.loads((exp / "env.json").read_text())
    assert {"git_sha", "python", "torch", "transformers", "seed", "threads", "hostname",
            "date"} <= set(env)
    assert env["seed"] == 7 and env["threads"] == 1
    assert (exp / "featurizer" / "brnn_featurizer.json").is_file()
    history = json.loads((exp / "history.json").read_text())
    assert [h["epoch"] for h in history] == list(range(1, 7))
    assert {"train_loss", "dev_loss", "dev_micro_f1", "lr", "seconds", "best"} <= set(history[0])
    # the best epoch: highest dev micro-F1, ties to the lower dev loss (the trainer's rule)
    best = max(history, key=lambda h: (h["dev_micro_f1"], -h["dev_loss"]))
    assert summary["best_epoch"] == best["epoch"]
    assert torch.load(exp / "best.pt", weights_only=True)["epoch"] == best["epoch"]
    last = torch.load(exp / "last.pt", weights_only=True)
    assert last["epoch"] == 6 and "optimizer" in last
    # resumable: finished after epoch 6, the epoch-5 checkpoint kept, both checksummed
    assert last["finished"] and last["epoch_done"] and len(last["history"]) == 6
    assert last["history"] == history and last["best"]["epoch"] == summary["best_epoch"]
    assert torch.load(exp / "last.prev.pt", weights_only=True)["epoch"] == 5
    assert {"last.pt.sha256", "last.prev.pt.sha256", "best.pt.sha256"} <= names
    assert not [n for n in names if n.endswith(".tmp")]
    lines = (exp / "train.log").read_text().splitlines()
    epoch_lines = [ln for ln in lines if " epoch " in ln and "dev_micro_f1" in ln]
    assert len(epoch_lines) == 6 and "done:" in lines[-1]


def test_rerun_with_same_seed_is_identical(data: Path, run_a: tuple[Path, dict],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    exp_a, _ = run_a
    exp_b = data / "exp_b"
    config = data / "tiny.yaml"
    config.write_text(yaml.safe_dump({**TINY, "train": {**TINY["train"], "epochs": 2}}))
    # via the CLI with an override back to the same number of epochs as run A
    rc = train_cli.main(["--config", str(config), "--train-dir", str(data / "train"),
                         "--dev-dir", str(data / "dev"), "--exp-dir", str(exp_b),
                         "--set", "train.epochs=6", "--num-threads", "1", "--quiet"])
    assert rc == 0
    assert json.loads(capsys.readouterr().out.strip())["best_epoch"] >= 1
    ha = json.loads((exp_a / "history.json").read_text())
    hb = json.loads((exp_b / "history.json").read_text())
    for a, b in zip(ha, hb, strict=True):
        assert a["train_loss"] == b["train_loss"] and a["dev_micro_f1"] == b["dev_micro_f1"]
    sa = torch.load(exp_a / "best.pt", weights_only=True)["model"]
    sb = torch.load(exp_b / "best.pt", weights_only=True)["model"]
    assert all(torch.equal(sa[k], sb[k]) for k in sa)


def test_stage2_keeps_stage1_frozen(data: Path, run_a: tuple[Path, dict]) -> None:
    exp_a, _ = run_a
    cfg = resolve_config({**TINY, "model": {"pause": True, "pause_hidden": 8},
                          "init_from": str(exp_a)}, ["train.epochs=2"])
    exp = data / "exp_pause"
    summary = train_experiment(cfg, data / "train", data / "dev", exp, quiet=True)
    assert summary["dev_micro_f1"] > 0.5
    s1 = torch.load(exp_a / "best.pt", weights_only=True)["model"]
    s2 = torch.load(exp / "best.pt", weights_only=True)["model"]
    for key, value in s1.items():
        assert torch.equal(s2["stage1." + key], value), key
    assert any(k.startswith("gru.") for k in s2)
    saved = yaml.safe_load((exp / "config.yaml").read_text())
    assert saved["init_config"]["model"]["hidden"] == 16


def test_stage2_without_stage1_is_missing_data(data: Path) -> None:
    cfg = resolve_config({**TINY, "model": {"pause": True}, "init_from": str(data / "nope")})
    with pytest.raises(MissingDataError, match=r"best\.pt"):
        train_experiment(cfg, data / "train", data / "dev", data / "exp_x", quiet=True)


def test_train_cli_missing_data(tmp_path: Path, data: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(TINY))
    rc = train_cli.main(["--config", str(config), "--train-dir", str(tmp_path / "none"),
                         "--dev-dir", str(data / "dev"), "--exp-dir", str(tmp_path / "e"),
                         "--quiet"])
    assert rc == 2


# -- dump -------------------------------------------------------------------------------
def test_dump_stats_per_set(tmp_path: Path, capsys) -> None:
    train = tmp_path / "data" / "train"
    dev = tmp_path / "data" / "dev"
    write_word_table(train / "words.tsv", {"a": [
        WordRow("a", 0, "hi", "Hi", ("COMMA",), "FIRST_CAP", 0.0, 0.2, 0.1),
        WordRow("a", 1, "nasa", "NASA", ("QUOTE", "PERIOD"), "ALL_CAPS", 0.3, 0.6, 0.3),
    ], "b": [WordRow("b", 0, "ok", "ok", ("EXCLAMATION",), "O")]})
    write_word_table(dev / "words.tsv", {"c": [
        WordRow("c", 0, "yes", "yes", (), "O", 0.0, 0.2, 5.0)]})
    rc = dump_cli.main(["--data-dir", str(train), "--data-dir", str(dev),
                        "--out-dir", str(tmp_path / "dump")])
    assert rc == 0 and "2 sets" in capsys.readouterr().out
    stats = json.loads((tmp_path / "dump" / "train" / "stats.json").read_text())
    assert stats["words"] == 3 and stats["utterances"] == 2
    assert stats["punct"]["COMMA"] == 1 and stats["punct"]["QUOTE"] == 1
    assert stats["punct"]["O"] == 0 and stats["multi_mark_words"] == 1
    assert stats["cap"] == {"O": 1, "FIRST_CAP": 1, "ALL_CAPS": 1}
    assert stats["label_sets"]["iwslt4"] == {"O": 0, "COMMA": 1, "PERIOD": 2, "QUESTION": 0}
    assert stats["share_with_pause"] == pytest.approx(2 / 3)
    dev_stats = json.loads((tmp_path / "dump" / "dev" / "stats.json").read_text())
    assert dev_stats["words_with_pause"] == 1 and dev_stats["utterances"] == 1
    assert sorted(p.name for p in (tmp_path / "dump").iterdir()) == ["dev", "train"]


def test_dump_rejects_unknown_labels_with_file_and_line(tmp_path: Path, capsys) -> None:
    d = tmp_path / "train"
    write_word_table(d / "words.tsv", {"a": [WordRow("a", 0, "x", "x", (), "O"),
                                             WordRow("a", 1, "y", "y", ("COMMA",), "O")]})
    text = (d / "words.tsv").read_text().replace("COMMA", "KOMMA")
    (d / "words.tsv").write_text(text)
    rc = dump_cli.main(["--data-dir", str(d), "--out-dir", str(tmp_path / "dump")])
    assert rc == 1
    assert f"{d / 'words.tsv'}:3" in capsys.readouterr().err
    rc = dump_cli.main(["--data-dir", str(tmp_path / "missing"), "--out-dir", str(tmp_path)])
    assert rc == 2


