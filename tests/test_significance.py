"""punct.score.significance: paired tests of two systems' micro-F1 over utterances."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers.scored import hypothesis, reference, score_system

from punct.bin import significance as cli
from punct.errors import MissingDataError, PunctInputError
from punct.score.metrics import ClassCounts, score_tables
from punct.score.significance import (
    compare_counts,
    compare_scores,
    micro_f1,
    utterance_counts,
)
from punct.wordtable import WordRow, write_word_table

Scored = tuple[Path, Path, dict[str, list[WordRow]]]


@pytest.fixture
def scored(tmp_path: Path) -> Scored:
    ref = reference(40, 30)
    ref_path = tmp_path / "data" / "test" / "words.tsv"
    ref_path.parent.mkdir(parents=True)
    write_word_table(ref_path, ref)
    return tmp_path / "exp", ref_path, ref


def test_micro_f1_of_counts_is_the_scorers() -> None:
    for tp, fp, fn in ((3, 1, 2), (0, 0, 0), (0, 4, 0), (7, 0, 0)):
        assert micro_f1(np.array([tp, fp, fn])) == pytest.approx(
            100 * ClassCounts(tp, fp, fn).f1)


def test_equal_systems_differ_by_nothing() -> None:
    counts = np.random.default_rng(0).integers(0, 9, size=(20, 3))
    result = compare_counts(counts, counts.copy(), samples=200)
    assert (result.delta, result.low, result.high, result.p_value) == (0.0, 0.0, 0.0, 1.0)


def test_a_better_system_everywhere_is_significant_and_the_pair_is_symmetric() -> None:
    rng = np.random.default_rng(1)
    tp = rng.integers(5, 10, size=30)
    good = np.stack([tp, np.zeros(30, int), np.ones(30, int)], axis=1)
    bad = np.stack([tp - 3, np.full(30, 2), np.full(30, 4)], axis=1)
    ab = compare_counts(good, bad, samples=500, seed=3)
    assert ab.delta == pytest.approx(float(micro_f1(good.sum(0)) - micro_f1(bad.sum(0))))
    assert ab.low is not None and ab.high is not None
    assert 0 < ab.low <= ab.delta <= ab.high
    assert ab.p_value == pytest.approx(1 / 501)  # no random swap reaches the observed gap
    ba = compare_counts(bad, good, samples=500, seed=3)
    assert (ba.delta, ba.low, ba.high, ba.p_value) == pytest.approx(
        (-ab.delta, -ab.high, -ab.low, ab.p_value))
    assert compare_counts(good, bad, samples=500, seed=3) == ab  # the seed fixes the draws


def test_few_utterances_cannot_be_significant() -> None:
    """Three utterances, all in A's favour: every one of the 8 swaps is enumerated and
    two of them (none, all) reach the gap, so p is exactly 2/8; no interval below 5."""
    a = np.array([[9, 0, 1], [8, 1, 0], [9, 0, 0]])
    b = np.array([[2, 5, 8], [1, 6, 7], [3, 4, 6]])
    result = compare_counts(a, b, samples=1000)
    assert result.delta > 50 and result.p_value == 0.25
    assert result.low is None and result.high is None and result.utterances == 3
    assert compare_counts(a[:1], b[:1]).p_value == 1.0  # one utterance: no test at all


def test_one_lucky_utterance_is_not_significant() -> None:
    """Equal systems except on one utterance of 30: the interval spans zero."""
    base = np.tile([[6, 2, 2]], (30, 1))
    lucky = base.copy()
    lucky[0] = (10, 0, 0)
    result = compare_counts(lucky, base, samples=1000)
    assert result.low is not None and result.high is not None
    assert result.delta > 0 and result.low <= 0 <= result.high and result.p_value > 0.3


def test_compare_scores_reads_the_tables_the_scores_name(scored: Scored) -> None:
    exp, ref_path, ref = scored
    a = score_system(exp, "a", "test", ref_path, hypothesis(ref, 0.05, 1))
    b = score_system(exp, "b", "test", ref_path, hypothesis(ref, 0.30, 2))
    result = compare_scores(a, b, samples=300)
    f1 = [json.loads(p.read_text())["metrics"]["all"]["micro_f1"] for p in (a, b)]
    assert result.delta == pytest.approx(100 * (f1[0] - f1[1]))
    assert result.utterances == 40 and result.low is not None and result.low > 0
    assert result.p_value < 0.01
    # a scores file whose tables changed since is refused, naming it
    write_word_table(b.parent / "words.tsv", hypothesis(ref, 0.10, 5))
    with pytest.raises(PunctInputError, match=r"b/decode_test/scores.json.*stale scores"):
        compare_scores(a, b)
    # another reference, label set or non-speech map
    other_ref = ref_path.parent.parent / "dev" / "words.tsv"
    other_ref.parent.mkdir()
    write_word_table(other_ref, ref)
    c = score_system(exp, "c", "dev", other_ref, hypothesis(ref, 0.05, 1))
    with pytest.raises(PunctInputError, match="differ in ref"):
        compare_scores(a, c)
    d = score_system(exp, "d", "test", ref_path, hypothesis(ref, 0.05, 1), "full13")
    with pytest.raises(PunctInputError, match="differ in label_set"):
        compare_scores(a, d)
    e = score_system(exp, "e", "test", ref_path, hypothesis(ref, 0.05, 1), nonspeech="babel")
    with pytest.raises(PunctInputError, match="differ in nonspeech: 'default' against 'babel'"):
        compare_scores(a, e)
    # a scores file from before the map was recorded counts as the default map
    doc = json.loads(a.read_text())
    del doc["nonspeech"]
    a.write_text(json.dumps(doc))
    f = score_system(exp, "f", "test", ref_path, hypothesis(ref, 0.30, 2))
    assert compare_scores(a, f, samples=100).delta > 0


def test_relative_paths_as_the_stage_driver_writes_them(scored: Scored,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """Scored from the recipe directory with relative paths: compared from there, from
    elsewhere (through the recipe directory above exp/), and against an absolute ref."""
    exp, ref_path, ref = scored
    recipe = exp.parent
    monkeypatch.chdir(recipe)
    a = score_system(Path("exp"), "a", "test", Path("data/test/words.tsv"),
                     hypothesis(ref, 0.05, 1))
    b = score_system(Path("exp"), "b", "test", ref_path.resolve(), hypothesis(ref, 0.30, 2))
    assert json.loads(a.read_text())["ref"] == "data/test/words.tsv"
    here = compare_scores(a, b, samples=200)
    monkeypatch.chdir(recipe.parent)
    elsewhere = compare_scores(recipe / a, recipe / b, samples=200)
    assert here == elsewhere and here.low is not None and here.low > 0
    (recipe / "exp" / "b" / "decode_test" / "words.tsv").unlink()
    with pytest.raises(MissingDataError, match=r"words\.tsv named by .*b/decode_test"):
        compare_scores(recipe / a, recipe / b)


def test_bad_counts_are_refused() -> None:
    with pytest.raises(PunctInputError, match=r"both be \(U, 3\)"):
        compare_counts(np.zeros((3, 3), int), np.zeros((4, 3), int))
    with pytest.raises(PunctInputError, match="no utterances"):
        compare_counts(np.zeros((0, 3), int), np.zeros((0, 3), int))
    with pytest.raises(PunctInputError, match="samples >= 1"):
        compare_counts(np.ones((2, 3), int), np.ones((2, 3), int), samples=0)


def test_utterance_counts_add_up_to_the_set(scored: Scored) -> None:
    _, _, ref = scored
    hyp = hypothesis(ref, 0.2, 7, utterance_miss={"utt000": 1.0})
    counts = utterance_counts(ref, hyp, "iwslt4")
    micro = score_tables(ref, hyp, "iwslt4")["all"]["punct"]["micro"]
    assert tuple(counts.sum(0)) == (micro["tp"], micro["fp"], micro["fn"])
    assert counts[0, 0] == 0  # every mark of utt000 was dropped
    with pytest.raises(PunctInputError, match="utt001"):
        utterance_counts(ref, {"utt000": hyp["utt000"]}, "iwslt4")
    with pytest.raises(PunctInputError, match="utt001 of the hypothesis is not in the reference"):
        utterance_counts({"utt000": ref["utt000"]}, hyp, "iwslt4")


def test_command_prints_and_writes_the_result(scored: Scored,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    exp, ref_path, ref = scored
    a = score_system(exp, "a", "test", ref_path, hypothesis(ref, 0.05, 1))
    b = score_system(exp, "b", "test", ref_path, hypothesis(ref, 0.30, 2))
    out = exp / "sig.json"
    assert cli.main([str(a), str(b), "--samples", "200", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["samples"] == 200 and result["utterances"] == 40 and result["delta"] > 0
    assert f"micro-F1 A - B = {result['delta']:+.2f} points, 95 % interval [" in (
        capsys.readouterr().out)
    assert cli.main([str(a), str(exp / "none.json")]) == 2
    assert "none.json" in capsys.readouterr().err
