"""Stage 7: the best system on dev exported with its card; README's English example."""

from __future__ import annotations

import contextlib
import io
import json
import re
import string
from pathlib import Path

import pytest
from helpers.tiny import tiny_brnn_exp

from punct.bin import export_best
from punct.wordtable import WordRow, write_word_table

README = Path(__file__).resolve().parents[1] / "README.md"
IWSLT_MARKS = {",", ".", "?"}


def scored(exp: Path, test_set: str, micro: float) -> None:
    out = exp / f"decode_{test_set}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "scores.json").write_text(json.dumps({
        "test_set": test_set, "corpus": "iwslt2012", "cap_modelled": False,
        "metrics": {"all": {"words": 100, "micro_f1": micro, "macro_f1": micro - 0.05,
                            "ser": 0.5}}}))


def trained(exp: Path, minutes: float) -> None:
    (exp / "history.json").write_text(json.dumps(
        [{"epoch": 1, "seconds": 30 * minutes, "best": False},
         {"epoch": 2, "seconds": 30 * minutes, "best": True}]))
    (exp / "env.json").write_text(json.dumps({"git_sha": "c" * 40, "threads": 2,
                                              "device": "cpu", "cpu": "Test CPU 9000"}))
    (exp / "train.log").write_text("x; precision fp32 (train.precision: auto); y\n")


def test_export_best_chooses_on_dev_never_on_test(tmp_path: Path) -> None:
    root = tmp_path / "exp"
    for name, dev, test in (("a", 0.60, 0.70), ("b", 0.64, 0.61), ("c", 0.62, 0.80)):
        exp = tiny_brnn_exp(root / name)
        scored(exp, "dev", dev)
        scored(exp, "test", test)
        trained(exp, 2.0)
    tiny_brnn_exp(root / "unscored")
    train = tmp_path / "train"
    write_word_table(train / "words.tsv", {
        "u1": [WordRow("u1", i, w, w, (), "O") for i, w in enumerate(["a", "b", "c"])],
        "u2": [WordRow("u2", 0, "d", "d", (), "O")]})
    out = tmp_path / "export" / "en"
    argv = ["--exp-dir", str(root), "--systems", "a b c unscored", "--dev-set", "dev",
            "--out", str(out), "--train-data", "TED talks", "--train-dir", str(train)]
    assert export_best.main(argv) == 0
    card = (out / "README.md").read_text()
    assert card.startswith("---") and "# b: " in card  # b wins on dev, c would on test
    assert "| **b** | 64.0 |\n| c | 62.0 |\n| a | 60.0 |" in card
    assert "TED talks (" in card and "4 words in 2 utterances" in card
    assert "| training time (minutes) | 2.0 |" in card and "| CPU | Test CPU 9000 |" in card
    assert "| precision | fp32 |" in card and "| best epoch (on dev) | 2 |" in card
    assert (out / "model.safetensors").is_file()
    # a rerun replaces the export; no candidate scored on dev is a clear error
    assert export_best.main(argv) == 0
    assert export_best.main([*argv[:3], "unscored", *argv[4:]]) == 2


def readme_example() -> tuple[str, list[tuple[str, str]]]:
    """The English section's Python block and its (input, output shown) pairs."""
    text = README.read_text(encoding="utf-8")
    section = text.split("### An English model in one command", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code, "README's English section has no python block"
    block = code.group(1)
    pairs = re.findall(r'print\(en\.restore\("([^"]*)"\)\)\n# (.*)', block)
    assert pairs, "the example shows no output"
    return block, pairs


def test_readme_english_example_runs_and_its_outputs_fit_the_model(tmp_path: Path) -> None:
    from punct.bin import export as export_cli

    block, pairs = readme_example()
    exp = tiny_brnn_exp(tmp_path / "exp", words=("hello", "how", "are", "you", "today"))
    model = tmp_path / "en"
    assert export_cli.main(["--exp-dir", str(exp), "--out", str(model)]) == 0
    path = re.search(r'Restorer\.from_pretrained\("([^"]+)"\)', block)
    assert path and path.group(1).endswith("exp/export/en")
    runnable = block.replace(path.group(1), str(model))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(runnable, "README.md", "exec"), {})  # our own README's example
    from punct import Restorer

    tiny = Restorer.from_pretrained(model)
    assert printed.getvalue().splitlines() == [tiny.restore(inp) for inp, _ in pairs]
    for inp, shown in pairs:
        # the words are the input's; the marks are the IWSLT ones; capitals only where a
        # sentence starts (the corpus is lower-cased: casing by rule)
        tokens = shown.split()
        assert [t.strip(string.punctuation).lower() for t in tokens] == inp.split()
        assert {c for c in shown if c in string.punctuation} <= IWSLT_MARKS
        for i, tok in enumerate(tokens):
            starts = i == 0 or tokens[i - 1][-1] in ".?"
            assert tok[0].isupper() == starts, (shown, tok)


@pytest.mark.parametrize("recipe", ["iwslt2012"])
def test_the_recipe_exports_to_the_path_the_readme_names(recipe: str) -> None:
    run_sh = (README.parent / "egs" / recipe / "punct1" / "run.sh").read_text()
    assert "--export-dir exp/export/en" in run_sh
    assert f"egs/{recipe}/punct1/exp/export/en" in README.read_text()
