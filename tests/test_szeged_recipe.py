"""The Hungarian Szeged recipe end to end on a small fixture in the corpora's formats:
stage 0 links the copies named by conf/db.sh variables, stage 1 prepares the sets, the
token stage trains sentencepiece and pre-trains its from-scratch BERT as a masked LM,
tiny BRNNs (word and sub-word) and a tiny nagy_sp_mlm over that BERT train, and stage 6
scores them into Nagy's Table 5 layout with sacrebleu text metrics."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DRIVER = ROOT / "utils" / "stage_driver.sh"  # what egs/<corpus>/punct1/run.sh call
TINY = ROOT / "egs" / "szeged" / "punct1" / "conf" / "model" / "tiny"

pytestmark = pytest.mark.slow

NOUNS = ["ház", "kert", "ember", "nap", "város", "víz", "kép", "hegy", "föld", "év"]


def sentence(i: int) -> list[tuple[str, bool]]:
    """Tokens (form, space after) of a synthetic sentence with lexical cues: a comma
    before "hogy" (the Hungarian rule), a question after "miért", a period after "volt"."""
    a, b, c = (NOUNS[(i * k + k) % len(NOUNS)] for k in (1, 3, 7))
    words = [a.capitalize(), "mondta", "hogy", "a", b, "és", "a", c]
    toks = [(w, True) for w in words]
    toks[1] = ("mondta", False)
    toks.insert(2, (",", True))
    end = ("miért", "?") if i % 4 == 0 else ("volt", ".")
    return [*toks[:-1], (toks[-1][0], True), (end[0], False), (end[1], True)]


def write_conllu(path: Path, first: int, count: int) -> None:
    lines = []
    for i in range(first, first + count):
        toks = sentence(i)
        text = "".join(f + (" " if s else "") for f, s in toks).strip()
        lines += [f"# sent_id = s{i}", f"# text = {text}"]
        for k, (form, space) in enumerate(toks, start=1):
            misc = "_" if space else "SpaceAfter=No"
            lines.append(f"{k}\t{form}\t{form}\tX\t_\t_\t0\tdep\t_\t{misc}")
        lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_conllup(path: Path, first: int, count: int) -> None:
    lines = ["# global.columns = FORM LEMMA UPOS"]
    for i in range(first, first + count):
        lines += [f"{form}\t{form}\tX" for form, _ in sentence(i)] + [""]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def recipe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("szeged")
    ud, nerkor = base / "ud", base / "nerkor"
    ud.mkdir()
    for split, first, count in (("train", 0, 120), ("dev", 200, 30), ("test", 300, 30)):
        write_conllu(ud / f"hu_szeged-ud-{split}.conllu", first, count)
    for split, first in (("train", 400), ("devel", 500)):
        (nerkor / split).mkdir(parents=True)
        write_conllup(nerkor / split / "news_1.conllup", first, 40)
    recipe = base / "recipe"
    recipe.mkdir()
    env = dict(os.environ, PUNCT_RECIPE_DIR=str(recipe), SZEGED_UD=str(ud),
               NERKOR=str(nerkor), SZEGED_NER=str(base / "none"), SZEGED_TREEBANK="")
    proc = subprocess.run(
        ["bash", str(DRIVER), "--corpus", "szeged", "--model-conf-dir", str(TINY),
         "--aligner", "none", "--test-sets", "test", "--token-type", "unigram",
         "--nbpe", "60", "--mlm-epochs", "2", "--baseline-systems", "brnn_text brnn_sp",
         "--transformer-systems", "nagy_sp_mlm", "--num-threads", "1", "--report-layouts", "nagy"],
        cwd=recipe, env=env, capture_output=True, text=True, timeout=600,
    )
    if proc.returncode != 0:
        pytest.fail(f"recipe failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n"
                    f"{proc.stderr[-4000:]}")
    (recipe / "run.out").write_text(proc.stdout, encoding="utf-8")
    return recipe


def test_stage0_links_and_explains_the_treebank(recipe: Path) -> None:
    out = (recipe / "run.out").read_text(encoding="utf-8")
    assert "register at https://rgai.inf.u-szeged.hu" in out
    assert (recipe / "downloads" / "szeged" / "ud").is_symlink()
    assert not (recipe / "data" / "test_szeged_ner").exists()


def test_token_stage_and_oov_report(recipe: Path) -> None:
    tokens = recipe / "data" / "token_list" / "unigram60"
    assert (tokens / "sp.model").is_file()
    oov = json.loads((tokens / "oov_test.json").read_text(encoding="utf-8"))
    assert oov["sp_word_with_unk_rate"] == 0.0
    assert 0.0 <= oov["word_oov_rate"] < 0.2  # the fixture reuses 20 word forms


def test_token_stage_pretrains_the_scratch_encoder(recipe: Path) -> None:
    mlm = recipe / "data" / "token_list" / "unigram60" / "bert_mlm"
    report = json.loads((mlm / "mlm.json").read_text(encoding="utf-8"))
    assert [row["epoch"] for row in report["epochs"]] == [1, 2]
    assert report["epochs"][-1]["dev_loss"] < report["dev_loss_before"]
    assert (mlm / "config.json").is_file() and (mlm / "tokenizer_config.json").is_file()
    config = (recipe / "exp" / "nagy_sp_mlm" / "config.yaml").read_text(encoding="utf-8")
    assert "unigram60/bert_mlm" in config
    scores = json.loads((recipe / "exp" / "nagy_sp_mlm" / "decode_test" / "scores.json")
                        .read_text(encoding="utf-8"))
    assert scores["label_set"] == "nagy4"
    assert scores["counts"]["words"] == sum(
        len(line.split()) - 1 for line in (recipe / "data" / "test" / "text").read_text(
            encoding="utf-8").splitlines())


def test_systems_scored_with_nagy_labels_and_text_metrics(recipe: Path) -> None:
    for system in ("brnn_text", "brnn_sp"):
        doc = json.loads((recipe / "exp" / system / "decode_test" / "scores.json")
                         .read_text(encoding="utf-8"))
        assert doc["label_set"] == "nagy4"
        m = doc["metrics"]["all"]
        assert m["micro_f1"] > 0.5  # commas before "hogy", sentence ends
        assert 0 <= doc["text"]["bleu"] <= 100
        assert doc["text"]["bleu"] > doc["text"]["baseline"]["bleu"]
    table = (recipe / "results" / "nagy_table5.md").read_text(encoding="utf-8")
    assert "Hubert (by loss and F1-score)" in table and "brnn_sp" in table
    assert "BLEU" in (recipe / "results" / "summary.md").read_text(encoding="utf-8")
