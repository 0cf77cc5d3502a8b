"""sacrebleu text metrics of the restored text (stage 6) and their summary columns."""

from __future__ import annotations

import pytest

from punct.score.tables import summary_table
from punct.score.text_metrics import corpus_scores, text_metrics
from punct.wordtable import rows_from_text

REF = {"a": rows_from_text("a", "Hello, world. It is me."),
       "b": rows_from_text("b", "Is it you? Yes.")}


def test_identical_text_is_perfect_and_baseline_is_not() -> None:
    tm = text_metrics(REF, REF)
    assert (tm["bleu"], tm["chrf"], tm["ter"]) == (100.0, 100.0, 0.0)
    assert tm["segments"] == 2
    base = tm["baseline"]
    assert base["bleu"] < 30 and base["ter"] > 40
    assert "case:mixed" in tm["bleu_signature"] and "punct:yes" in tm["ter_signature"]


def test_case_and_punctuation_count() -> None:
    ref = ["Hello, world."]
    # One missing comma: one TER edit of the 2 tercom tokens ("Hello," "world.").
    assert corpus_scores(ref, ["Hello world."])["ter"] == pytest.approx(50.0)
    assert corpus_scores(ref, ["hello, world."])["ter"] == pytest.approx(50.0)
    assert corpus_scores(ref, ["hello, world."])["chrf"] < 100.0


def test_missing_hypothesis_utterance_scores_as_empty() -> None:
    tm = text_metrics(REF, {"a": REF["a"]})
    assert tm["bleu"] < 100.0 and tm["ter"] > 0.0


def test_summary_table_shows_text_metrics() -> None:
    metrics = {"words": 9, "micro_precision": 1.0, "micro_recall": 1.0, "micro_f1": 1.0,
               "macro_f1": 1.0, "ser": 0.0, "punct_slot_accuracy": 1.0, "cap_micro_f1": 1.0,
               "cap_accuracy": 1.0}
    score = {"system": "s", "test_set": "test", "label_set": "full13",
             "metrics": {"all": {**metrics, "baseline_all_o": metrics}},
             "text": text_metrics(REF, REF)}
    frame = summary_table([score]).frame
    ours = frame[frame["System"] == "s"].iloc[0]
    assert (ours["BLEU"], ours["chrF"], ours["TER"]) == (100.0, 100.0, 0.0)
    base = frame[frame["System"] != "s"].iloc[0]
    assert base["BLEU"] == pytest.approx(score["text"]["baseline"]["bleu"])


def test_asr_utterances_are_cut_at_reference_sentence_ends() -> None:
    from punct.score.text_metrics import segments
    from punct.wordtable import rows_from_text

    ref = rows_from_text("u", "Hello there. How are you? Fine.")
    hyp = rows_from_text("u", "hello the. how you are fine")
    pieces = segments(ref, hyp)
    assert [[r.word for r in a] for a, _ in pieces] == [
        ["hello", "there"], ["how", "are", "you"], ["fine"]]
    assert [[h.word for h in b] for _, b in pieces] == [
        ["hello", "the"], ["how", "you", "are"], ["fine"]]
    assert segments(ref, rows_from_text("u", "hello there how are you fine")) == [
        (ref, rows_from_text("u", "hello there how are you fine"))]


def test_baseline_scores_are_kept_by_content_and_equal_a_fresh_computation(
        tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    import punct.score.text_metrics as tmod

    cache = tmp_path / tmod.BASELINE_CACHE
    computed: list[list[str]] = []
    real = tmod.corpus_scores

    def counting(refs, hyps):
        computed.append(list(hyps))
        return real(refs, hyps)

    monkeypatch.setattr(tmod, "corpus_scores", counting)
    fresh = text_metrics(REF, REF)  # no cache: hypothesis and baseline both computed
    assert len(computed) == 2
    computed.clear()
    first = text_metrics(REF, REF, cache)
    # another system on the same set (its words the reference's: the same segments)
    second = text_metrics(REF, {"a": rows_from_text("a", "hello world it is me"),
                                "b": REF["b"]}, cache)
    assert first == fresh and second["baseline"] == fresh["baseline"]
    assert len(computed) == 3  # the baseline once, each hypothesis once
    files = list(cache.iterdir())
    assert len(files) == 1 and json.loads(files[0].read_text()) == fresh["baseline"]
    # another reference: another key, computed afresh
    other = {"a": rows_from_text("a", "Hello, there. It is me.")}
    computed.clear()
    assert text_metrics(other, other, cache)["baseline"] == tmod.text_metrics(other, other)[
        "baseline"]
    assert len(list(cache.iterdir())) == 2
    # a damaged file is computed again (and mended); an unwritable folder only costs time
    files[0].write_text("{not json")
    assert text_metrics(REF, REF, cache) == fresh
    assert json.loads(files[0].read_text()) == fresh["baseline"]
    blocked = tmp_path / "file_not_dir"
    blocked.write_text("")
    assert text_metrics(REF, REF, blocked / "sub") == fresh
