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
