"""Metrics on hand-checked cases, label-set mapping, mismatch errors and the score CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from punct.bin import score as score_cli
from punct.errors import PunctInputError
from punct.kaldi import read_utt2lang
from punct.labels import apply_cap, get_label_set
from punct.score.metrics import check_aligned, score_tables
from punct.wordtable import WordRow, read_word_table, write_word_table


def utt(utt_id: str, spec: list[tuple[str, tuple[str, ...], str]]) -> list[WordRow]:
    """Rows from (word, punct, cap) triples."""
    return [WordRow(utt_id, i, w, apply_cap(w, c), p, c) for i, (w, p, c) in enumerate(spec)]


def words(utt_id: str, n: int, punct: list[tuple[str, ...]] | None = None,
          caps: list[str] | None = None) -> list[WordRow]:
    punct = punct or [()] * n
    caps = caps or ["O"] * n
    return utt(utt_id, [(f"w{i}", punct[i], caps[i]) for i in range(n)])


def test_multilabel_slot_counted_label_by_label():
    ref = {"u": words("u", 2, [("QUOTE", "PERIOD"), ()])}
    hyp = {"u": words("u", 2, [("PERIOD",), ()])}
    m = score_tables(ref, hyp, "full13")["all"]
    classes = m["punct"]["classes"]
    assert (classes["PERIOD"]["tp"], classes["PERIOD"]["fp"], classes["PERIOD"]["fn"]) == (1, 0, 0)
    assert (classes["QUOTE"]["tp"], classes["QUOTE"]["fn"]) == (0, 1)
    assert m["micro_precision"] == 1.0
    assert m["micro_recall"] == 0.5
    assert m["micro_f1"] == pytest.approx(2 / 3)
    # Mark sets differ and both are non-empty: one substitution.
    assert m["ser_counts"] == {"C": 0, "S": 1, "D": 0, "I": 0}
    assert m["ser"] == 1.0
    # macro over all 13 marks (QUOTE 0, PERIOD 1, the rest 0) vs over the marks present.
    assert m["macro_f1"] == pytest.approx(1 / 13)
    assert m["macro_f1_supported"] == pytest.approx(0.5)
    assert m["punct_slot_accuracy"] == 0.5


def test_ser_counts_and_micro_vs_macro():
    ref_p = [("COMMA",), ("PERIOD",), (), ("QUESTION",), (), ("PERIOD",)]
    hyp_p = [("COMMA",), ("COMMA",), (), (), ("PERIOD",), ("PERIOD",)]
    m = score_tables({"u": words("u", 6, ref_p)}, {"u": words("u", 6, hyp_p)}, "full13")["all"]
    assert m["ser_counts"] == {"C": 2, "S": 1, "D": 1, "I": 1}
    assert m["ser"] == pytest.approx(3 / 4)
    c = m["punct"]["classes"]
    assert c["COMMA"]["f1"] == pytest.approx(2 / 3)  # tp 1, fp 1 (w1), fn 0
    assert c["PERIOD"]["f1"] == pytest.approx(0.5)  # tp 1, fp 1 (w4), fn 1 (w1)
    assert c["QUESTION"]["f1"] == 0.0 and c["QUESTION"]["support"] == 1
    assert m["micro_f1"] == pytest.approx(0.5)  # tp 2, fp 2, fn 2
    assert m["macro_f1"] == pytest.approx((2 / 3 + 0.5) / 13)
    assert m["macro_f1_supported"] == pytest.approx((2 / 3 + 0.5 + 0) / 3)
    assert m["punct_slot_accuracy"] == pytest.approx(3 / 6)
    base = m["baseline_all_o"]
    assert base["ser_counts"] == {"C": 0, "S": 0, "D": 4, "I": 0}
    assert base["ser"] == 1.0 and base["micro_f1"] == 0.0
    assert base["punct_slot_accuracy"] == pytest.approx(2 / 6)


def test_capitalisation_f1():
    ref_c = ["FIRST_CAP", "ALL_CAPS", "O", "FIRST_CAP", "O"]
    hyp_c = ["FIRST_CAP", "FIRST_CAP", "ALL_CAPS", "O", "O"]
    m = score_tables({"u": words("u", 5, caps=ref_c)}, {"u": words("u", 5, caps=hyp_c)},
                     "full13")["all"]
    fc, ac = m["cap"]["classes"]["FIRST_CAP"], m["cap"]["classes"]["ALL_CAPS"]
    assert (fc["tp"], fc["fp"], fc["fn"]) == (1, 1, 1)
    assert (ac["tp"], ac["fp"], ac["fn"]) == (0, 1, 1)
    assert fc["f1"] == pytest.approx(0.5) and ac["f1"] == 0.0
    assert m["cap_micro_precision"] == pytest.approx(1 / 3)
    assert m["cap_micro_recall"] == pytest.approx(1 / 3)
    assert m["cap_micro_f1"] == pytest.approx(1 / 3)
    assert m["cap_accuracy"] == pytest.approx(2 / 5)
    assert m["baseline_all_o"]["cap_accuracy"] == pytest.approx(2 / 5)
    assert "O" not in m["cap"]["classes"]


def test_iwslt4_mapping_applies_to_both_sides():
    ref_p = [("QUOTE", "PERIOD"), ("COLON",), ("OPEN_QUOTE",), ("QUESTION",)]
    hyp_p = [("EXCLAMATION",), ("COMMA",), (), ("SEMICOLON",)]
    ls = get_label_set("iwslt4")
    m = score_tables({"u": words("u", 4, ref_p)}, {"u": words("u", 4, hyp_p)}, ls)["all"]
    c = m["punct"]["classes"]
    assert list(c) == ["COMMA", "PERIOD", "QUESTION"]
    assert c["PERIOD"]["tp"] == 1 and c["COMMA"]["tp"] == 1
    # w3: QUESTION vs SEMICOLON->PERIOD is a substitution.
    assert c["QUESTION"]["fn"] == 1 and c["PERIOD"]["fp"] == 1
    assert m["ser_counts"] == {"C": 2, "S": 1, "D": 0, "I": 0}
    assert m["micro_f1"] == pytest.approx(2 / 3)
    assert m["macro_f1"] == pytest.approx((1 + 2 / 3 + 0) / 3)
    # Under full13 the same data gives no PERIOD match at all on w0 (EXCLAMATION != PERIOD).
    full = score_tables({"u": words("u", 4, ref_p)}, {"u": words("u", 4, hyp_p)}, "full13")
    assert full["all"]["punct"]["classes"]["PERIOD"]["tp"] == 0


def test_per_language_and_combined_groups():
    ref = {"a": words("a", 2, [("COMMA",), ("PERIOD",)]), "b": words("b", 1, [("PERIOD",)]),
           "c": words("c", 3, [(), (), ("QUESTION",)])}
    hyp = {"a": words("a", 2, [("COMMA",), ("PERIOD",)]), "b": words("b", 1, [()]),
           "c": words("c", 3, [(), (), ("QUESTION",)])}
    out = score_tables(ref, hyp, "full13", {"a": "es", "b": "eu", "c": "en"})
    assert set(out) == {"all", "es", "eu", "en", "es+eu"}
    assert out["es"]["micro_f1"] == 1.0 and out["es"]["words"] == 2
    assert out["eu"]["micro_f1"] == 0.0 and out["eu"]["utterances"] == 1
    assert out["es+eu"]["words"] == 3
    assert out["es+eu"]["micro_recall"] == pytest.approx(2 / 3)
    assert out["all"]["micro_recall"] == pytest.approx(3 / 4)
    assert out["all"]["words"] == 6
    # Without both ES and EU there is no es+eu group.
    only = score_tables({"a": ref["a"]}, {"a": hyp["a"]}, "full13", {"a": "es"})
    assert set(only) == {"all", "es"}


def _write(tmp_path: Path, name: str, utts: dict[str, list[WordRow]]) -> Path:
    path = tmp_path / name / "words.tsv"
    write_word_table(path, utts)
    return path


def test_mismatched_word_names_both_files_utterance_and_line(tmp_path):
    ref_p = _write(tmp_path, "ref", {"u1": words("u1", 2), "u2": words("u2", 3)})
    bad = words("u2", 3)
    bad[2] = WordRow("u2", 2, "other", "other", (), "O")
    hyp_p = _write(tmp_path, "hyp", {"u1": words("u1", 2), "u2": bad})
    with pytest.raises(PunctInputError) as err:
        score_tables(read_word_table(ref_p), read_word_table(hyp_p), "full13",
                     ref_path=ref_p, hyp_path=hyp_p, strict=True)
    msg = str(err.value)
    assert str(ref_p) in msg and str(hyp_p) in msg
    assert "u2" in msg and "word 2" in msg and "'w2'" in msg and "'other'" in msg
    assert err.value.path == str(hyp_p)
    assert err.value.line == 6  # header, 2 rows of u1, then u2 words 0..2


def test_missing_and_extra_utterances_and_lengths(tmp_path):
    ref = {"u1": words("u1", 2), "u2": words("u2", 2)}
    with pytest.raises(PunctInputError, match="u2 of the reference is missing"):
        check_aligned(ref, {"u1": words("u1", 2)}, "r.tsv", "h.tsv")
    with pytest.raises(PunctInputError, match="u3 of the hypothesis is not in the reference"):
        check_aligned(ref, {**ref, "u3": words("u3", 1)}, "r.tsv", "h.tsv")
    with pytest.raises(PunctInputError, match=r"u2 word 1.*2 vs 1 words"):
        check_aligned(ref, {"u1": words("u1", 2), "u2": words("u2", 1)}, "r.tsv", "h.tsv")
    with pytest.raises(PunctInputError, match="u2 has no language"):
        score_tables(ref, ref, "full13", {"u1": "en"}, utt2lang_path="utt2lang")


def test_read_utt2lang_errors(tmp_path):
    path = tmp_path / "utt2lang"
    path.write_text("a en\nb es\n", encoding="utf-8")
    assert read_utt2lang(path) == {"a": "en", "b": "es"}
    path.write_text("a en\nb\n", encoding="utf-8")
    with pytest.raises(PunctInputError) as err:
        read_utt2lang(path)
    assert err.value.line == 2 and err.value.path == str(path)


def test_score_cli_writes_json(tmp_path, capsys):
    ref = {"a": utt("a", [("hola", ("COMMA",), "FIRST_CAP"), ("mundo", ("PERIOD",), "O")]),
           "b": utt("b", [("kaixo", ("QUESTION",), "FIRST_CAP")])}
    hyp = {"a": utt("a", [("hola", ("COMMA",), "O"), ("mundo", ("PERIOD",), "O")]),
           "b": utt("b", [("kaixo", ("PERIOD",), "O")])}
    ref_p = _write(tmp_path / "data", "test", ref)
    hyp_p = tmp_path / "exp" / "sysX" / "decode_test" / "words.tsv"
    write_word_table(hyp_p, hyp)
    (tmp_path / "data" / "test" / "utt2lang").write_text("a es\nb eu\n", encoding="utf-8")
    info = hyp_p.parent / "decode.json"
    info.write_text(json.dumps({"words_per_second": 321.0, "device": "cpu", "batch_size": 4,
                                "cap_modelled": False}), encoding="utf-8")
    out = hyp_p.parent / "scores.json"
    rc = score_cli.main(["--ref", str(ref_p), "--hyp", str(hyp_p), "--utt2lang",
                         str(ref_p.parent / "utt2lang"), "--decode-info", str(info),
                         "--out", str(out)])
    assert rc == 0
    assert "sysX on test" in capsys.readouterr().out
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["system"] == "sysX" and doc["test_set"] == "test"
    assert doc["label_set"] == "full13" and len(doc["labels"]) == 13
    assert doc["cap_modelled"] is False
    assert doc["decode"]["words_per_second"] == 321.0 and doc["decode"]["device"] == "cpu"
    assert doc["counts"] == {"utterances": 2, "words": 3}
    assert set(doc["metrics"]) == {"all", "es", "eu", "es+eu"}
    assert doc["metrics"]["all"]["micro_f1"] == pytest.approx(2 / 3)
    assert doc["metrics"]["es"]["micro_f1"] == 1.0
    assert doc["metrics"]["eu"]["ser"] == 1.0


def test_score_cli_mismatch_exit_1(tmp_path, capsys):
    ref_p = _write(tmp_path, "ref", {"u1": words("u1", 2)})
    hyp_p = _write(tmp_path, "hyp", {"u1": words("u1", 3)})
    rc = score_cli.main(["--ref", str(ref_p), "--hyp", str(hyp_p), "--out",
                         str(tmp_path / "s.json"), "--strict"])
    err = capsys.readouterr().err
    assert rc == 1
    assert str(ref_p) in err and str(hyp_p) in err and "u1" in err
    assert not (tmp_path / "s.json").exists()
    rc = score_cli.main(["--ref", str(tmp_path / "nope.tsv"), "--hyp", str(hyp_p), "--out",
                         str(tmp_path / "s.json")])
    assert rc == 2
