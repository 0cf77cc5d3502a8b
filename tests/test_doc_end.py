"""Final-mark accuracy at document ends (punct.score.doc_end, punct.bin.doc_end_accuracy)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from punct.bin import doc_end_accuracy as cli
from punct.errors import PunctInputError
from punct.labels import get_label_set
from punct.score.doc_end import doc_end_accuracy, final_marks, top_final_mark
from punct.wordtable import rows_from_text, write_word_table

REF = {
    "a": rows_from_text("a", "Hello there, friend."),
    "b": rows_from_text("b", "Is it “cold.”"),
    "c": rows_from_text("c", "Stop it now!"),
    "d": rows_from_text("d", "We said:"),
}


def with_last(rows: list, punct: tuple[str, ...]) -> list:
    return [*rows[:-1], replace(rows[-1], punct=punct)]


def hypothesis() -> dict[str, list]:
    return {
        "a": with_last(REF["a"], ("PERIOD",)),       # right
        "b": with_last(REF["b"], ("PERIOD",)),       # final mark right, QUOTE missed
        "c": with_last(REF["c"], ("COMMA",)),        # wrong: the document end missed
        "d": with_last(REF["d"], ()),  # no sentence-final mark either side: right (COLON missed)
    }


def test_final_marks_and_counts() -> None:
    full = get_label_set("full13")
    assert final_marks(REF["b"][-1], full) == ("PERIOD",)
    assert final_marks(REF["d"][-1], full) == ()
    res = doc_end_accuracy(REF, hypothesis())
    assert (res["documents"], res["final_mark_correct"], res["end_detected"],
            res["last_word_correct"]) == (4, 3, 3, 1)
    assert "top_final_mark_correct" not in res
    by_utt = {d["utt_id"]: d for d in res["per_document"]}
    assert by_utt["b"]["ref_marks"] == "OPEN_QUOTE|PERIOD|QUOTE"
    assert by_utt["b"]["final_mark_correct"]
    assert by_utt["c"] == {"utt_id": "c", "word": "now", "ref_final": "EXCLAMATION",
                           "hyp_final": "O", "ref_marks": "EXCLAMATION", "hyp_marks": "COMMA",
                           "final_mark_correct": False, "end_detected": False,
                           "last_word_correct": False}
    # iwslt4 maps ! to PERIOD: a PERIOD for the reference's ! is right there
    hyp = {**hypothesis(), "c": with_last(REF["c"], ("PERIOD",))}
    assert doc_end_accuracy(REF, hyp, "iwslt4")["final_mark_correct"] == 4
    assert doc_end_accuracy(REF, hyp, "full13")["final_mark_correct"] == 3


def test_several_final_marks_and_the_most_probable_one() -> None:
    """A multi-label system may put PERIOD and EXCLAMATION on one word: the end is
    detected, the final mark (the set) is wrong, the most probable one may be right."""
    hyp = {u: with_last(rows, ("PERIOD", "EXCLAMATION")) for u, rows in REF.items()}
    probs = {u: {"PERIOD": 0.9, "EXCLAMATION": 0.6, "COMMA": 0.95} for u in REF}
    probs["c"] = {"PERIOD": 0.7, "EXCLAMATION": 0.8}
    res = doc_end_accuracy(REF, hyp, last_word_probs=probs)
    assert (res["final_mark_correct"], res["end_detected"], res["top_final_mark_correct"]) == (
        0, 3, 3)  # a, b: PERIOD right; c: EXCLAMATION right; d: a mark where none is
    assert top_final_mark({"COMMA": 0.9}, get_label_set("full13")) is None
    assert top_final_mark({"EXCLAMATION": 0.9, "QUESTION": 0.5},
                          get_label_set("iwslt4")) == "PERIOD"


def test_mismatched_tables_are_an_error() -> None:
    hyp = hypothesis()
    del hyp["d"]
    with pytest.raises(PunctInputError, match="utterance d of the reference is missing"):
        doc_end_accuracy(REF, hyp, ref_path="ref.tsv", hyp_path="hyp.tsv")


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref, hyp = tmp_path / "words.tsv", tmp_path / "exp" / "sys1" / "decode_test" / "words.tsv"
    write_word_table(ref, REF)
    write_word_table(hyp, hypothesis())
    out = tmp_path / "doc_end.json"
    assert cli.main(["--ref", str(ref), "--hyp", str(hyp), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0] == ("sys1: final mark correct 3/4 documents "
                                    "(end detected 3/4, last word's marks correct 1/4)")
    assert "BAD c 'now': ref EXCLAMATION, hyp COMMA" in text
    assert json.loads(out.read_text())["sys1"]["final_mark_correct"] == 3
    assert cli.main(["--ref", str(ref), "--hyp", str(tmp_path / "nope.tsv")]) == 2
    # the decoder's probabilities beside the hypothesis (as punct.bin.decode writes them)
    labels = get_label_set("full13").labels
    punct = np.zeros((sum(map(len, REF.values())), len(labels)), dtype=np.float32)
    offsets = np.cumsum([0] + [len(r) for r in REF.values()])[:-1]
    for off, rows in zip(offsets, REF.values(), strict=True):
        punct[off + len(rows) - 1, labels.index("QUESTION")] = 0.7
    np.savez(hyp.parent / "probs.npz", punct=punct, labels=np.array(labels),
             utt_ids=np.array(list(REF)), offsets=offsets)
    assert cli.main(["--ref", str(ref), "--hyp", str(hyp), "--quiet"]) == 0
    assert "most probable final mark right 1/4" in capsys.readouterr().out  # only d
    # the label set: the system's own (decode.json beside the hypothesis) unless given
    (hyp.parent / "decode.json").write_text('{"label_set": "iwslt4"}', encoding="utf-8")
    assert cli.main(["--ref", str(ref), "--hyp", str(hyp), "--json", str(out)]) == 0
    assert json.loads(out.read_text())["sys1"]["label_set"] == "iwslt4"
    assert "per_document" not in json.loads(out.read_text())["sys1"]
