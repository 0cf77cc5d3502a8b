"""The mintzai-ST recipe end to end (stages 0-6, ES, EU and ES+EU set-ups) on an eSpeak NG
fixture corpus in mintzai-ST's layout (m4a segments when PyAV can encode them).

Stage 0 downloads the fixture tarball through the shared downloader (a file:// URL with
a pinned sha256) and extracts it; stage 1 prepares the nine sets; the ES and EU set-ups
train the text BRNN; the ES+EU set-up trains the BRNN in two stages (text, then
pauses), the sub-word BRNN (token stage) and AutoPunct's paper config (IXAmBERT's, here
loading a tiny random BERT through the same code path); stage 6 writes AutoPunct's
Tables 4-7 with the published figures beside ours. Stage 2 uses the vad aligner (the
fastest) to keep the test short.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.mintzai_fixture import (
    build_fixture,
    can_encode_m4a,
    es_sentence,
    eu_sentence,
    make_tarball,
)
from helpers.tinybert import build_tiny_bert

from punct.data.download import sha256_file
from punct.kaldi import read_kv

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "egs" / "mintzai_st" / "punct1"
SIZES = {"train": 12, "dev": 3, "test": 3}
LANGS = ("es", "eu", "es_eu")

pytestmark = pytest.mark.slow


def write_configs(conf: Path, encoder: Path) -> None:
    """Test configs: the recipe's tiny BRNNs with fewer epochs, and the recipe's own
    AutoPunct paper config with a tiny local encoder and a CI-sized training."""
    conf.mkdir()
    for lang in LANGS:
        for system in ("brnn_text", "brnn_pause", "brnn_sp"):
            # a few hundred words: small batches give the tiny BRNNs enough steps
            short = {"brnn_text": "train: {epochs: 20, patience: 20, batch_size: 4}\n",
                     "brnn_pause": "train: {epochs: 10, batch_size: 4}\n",
                     "brnn_sp": "train: {epochs: 4}\n"}[system]
            (conf / f"{system}_{lang}.yaml").write_text(
                f"base: {RECIPE}/conf/model/tiny/{system}_{lang}.yaml\n" + short,
                encoding="utf-8")
    (conf / "autopunct_dg_b_es_eu.yaml").write_text(
        f"base: {RECIPE}/conf/model/autopunct_dg_b_es_eu.yaml\n"
        f"featurizer: {{encoder: {encoder}}}\n"
        "train: {epochs: 2, warmup_epochs: 0, patience: 2, window: 64, stride: 32,\n"
        "        optimizer: {name: adamw, lr: 3.0e-3}}\n"
        "decode: {window: 64, stride: 32}\n", encoding="utf-8")


def run(recipe: Path, env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(
        ["bash", str(RECIPE / "run.sh"), "--model-conf-dir", str(recipe / "conf_test"),
         "--nbpe", "60", "--aligner", "vad", "--nj", "1", "--num-threads", "1", *args],
        cwd=recipe, env=env, capture_output=True, text=True, timeout=1500)
    if proc.returncode != 0:
        pytest.fail(f"recipe failed ({proc.returncode}):\n{proc.stdout[-5000:]}\n"
                    f"{proc.stderr[-5000:]}")
    return proc.stdout


@pytest.fixture(scope="module")
def recipe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("mintzai")
    corpus = build_fixture(base / "src", sizes=SIZES)
    tarball = make_tarball(corpus, base / "mintzai-st-corpus_v1.0.tar.gz")
    words = {w.strip(",.:¿?«»").lower() for i in range(300)
             for w in (es_sentence(i) + " " + eu_sentence(i)).split()}
    encoder = build_tiny_bert(base / "tiny_bert", sorted(words), max_positions=128)
    recipe = base / "recipe"
    recipe.mkdir()
    write_configs(recipe / "conf_test", encoder)
    env = dict(os.environ, PUNCT_RECIPE_DIR=str(recipe), MINTZAI_ST="",
               MINTZAI_ST_URL=tarball.as_uri(), MINTZAI_ST_SHA256=sha256_file(tarball),
               MINTZAI_ST_EXTRACT_GB="0",
               PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}",
               OMP_NUM_THREADS="1")
    out = run(recipe, env, "--langs", "es eu", "--baselines", "brnn_text", "--transformers", "")
    out += run(recipe, env, "--langs", "es_eu", "--transformers", "autopunct_dg_b")
    (recipe / "run.out").write_text(out, encoding="utf-8")
    return recipe


def scores(recipe: Path, system: str, test_set: str) -> dict:
    path = recipe / "exp" / system / f"decode_{test_set}" / "scores.json"
    return json.loads(path.read_text(encoding="utf-8"))


def test_stage0_downloads_verifies_and_extracts(recipe: Path) -> None:
    out = (recipe / "run.out").read_text(encoding="utf-8")
    assert "sha256 verified" in out
    corpus = recipe / "downloads" / "mintzai_st" / "corpus"
    assert corpus.is_symlink() and (corpus / "v1.0" / "eu-es" / "test" / "audio").is_dir()
    assert (recipe / "downloads" / "mintzai_st" / "mintzai-st-corpus_v1.0.tar.gz").is_file()


def test_every_stage_of_every_setup_is_marked(recipe: Path) -> None:
    assert (recipe / ".stages" / "0.done").is_file() and (recipe / ".stages" / "1.done").is_file()
    for lang in LANGS:
        for stage in range(2, 7):
            info = json.loads((recipe / ".stages" / lang / f"{stage}.done").read_text())
            assert info["stage"] == stage
    out = (recipe / "run.out").read_text(encoding="utf-8")
    assert out.count("Stage 1 (prepare: Kaldi data dirs and word tables): already done") == 2


def test_sets_keep_partitions_and_languages(recipe: Path) -> None:
    data = recipe / "data"
    suffix = ".m4a" if can_encode_m4a() else ".wav"
    for split, n in SIZES.items():
        es = read_kv(data / f"{split}_es" / "wav.scp")
        eu = read_kv(data / f"{split}_eu" / "wav.scp")
        assert len(es) == len(eu) == n
        assert read_kv(data / f"{split}_es_eu" / "wav.scp") == {**es, **eu}
        assert all(p.endswith(suffix) and f"/es-eu/{split}/" in p for p in es.values())
        assert set(read_kv(data / f"{split}_eu" / "utt2lang").values()) == {"eu"}
    # stage 2 read the audio: every training word has a pause
    words = (data / "train_es" / "words.tsv").read_text(encoding="utf-8").splitlines()[1:]
    assert all(line.split("\t")[-1] != "" for line in words)


def test_systems_trained_per_setup_and_scored(recipe: Path) -> None:
    for lang in LANGS:
        doc = scores(recipe, f"brnn_text_{lang}", f"test_{lang}")
        assert doc["label_set"] == "full13"
        assert doc["metrics"]["all"]["micro_f1"] > 0.1  # the all-O baseline scores 0
    pause = scores(recipe, "brnn_pause_es_eu", "test_es_eu")
    assert pause["metrics"]["all"]["micro_f1"] > 0.1
    cfg = (recipe / "exp" / "brnn_pause_es_eu" / "config.yaml").read_text()
    assert "init_from: exp/brnn_text_es_eu" in cfg
    both = scores(recipe, "autopunct_dg_b_es_eu", "test_es_eu")
    assert set(both["metrics"]) == {"es", "eu", "es+eu", "all"}
    assert "cap_micro_f1" in both["metrics"]["all"]
    assert (recipe / "data" / "token_list" / "es_eu" / "unigram60" / "sp.model").is_file()
    assert scores(recipe, "brnn_sp_es_eu", "test_es_eu")["metrics"]["all"]["words"] > 0
    cfg = (recipe / "exp" / "autopunct_dg_b_es_eu" / "config.yaml").read_text()
    assert "custom_bert" in cfg and "gaussian" in cfg


def test_autopunct_tables_with_published_figures(recipe: Path) -> None:
    table4 = (recipe / "results" / "table4_micro_f1.md").read_text(encoding="utf-8")
    for name in ("brnn_text_es", "brnn_text_eu", "autopunct_dg_b_es_eu", "S D G B", "BRNN"):
        assert name in table4
    def cells(marker: str) -> list[str]:
        row = next(line for line in table4.splitlines() if marker in line)
        return [c.strip() for c in row.strip("|").split("|")]

    assert cells("| Source")[4:7] == ["ES", "EU", "ES+EU"]
    assert cells("| S D G B")[4:7] == ["78.9", "76.7", "76.4"]  # the paper's row
    for name in ("table5_class_f1", "table6_cap_f1", "table7_speed"):
        assert "published: AutoPunct 2021" in (recipe / "results" / f"{name}.md").read_text()
    results = (recipe / "RESULTS.md").read_text(encoding="utf-8")
    assert "Results: mintzai_st" in results and "autopunct_dg_b_es_eu" in results
