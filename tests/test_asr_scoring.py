"""Scoring a hypothesis whose words differ from the reference (docs/ASR.md): aligned slots,
WER, strict mode, identical words = the slot-by-slot figures exactly, tables' WER."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from punct.bin import score as score_cli
from punct.data.word_align import align_words
from punct.errors import PunctInputError
from punct.labels import PUNCT_LABELS, apply_cap
from punct.score.metrics import aligned_slots, score_tables
from punct.score.tables import summary_table, table4_micro_f1
from punct.wordtable import WordRow, rows_from_text, write_word_table

ROOT = Path(__file__).resolve().parents[1]


def utt(utt_id: str, spec: list[tuple[str, str, str]]) -> list[WordRow]:
    """Rows from (word, punct, cap) triples; punct ``""`` = no mark."""
    return [WordRow(utt_id, i, w, apply_cap(w, c), tuple(p.split("|")) if p else (), c)
            for i, (w, p, c) in enumerate(spec)]


FC = "FIRST_CAP"
REF = {"u1": rows_from_text("u1", "Yes, I know. The cat sat."),
       "u2": rows_from_text("u2", "Hi, Bob.")}
# u1: "know" deleted, "cat" -> "bat", "down" inserted; u2: "Bob" deleted
HYP = {"u1": utt("u1", [("yes", "COMMA", FC), ("i", "PERIOD", FC), ("the", "", FC),
                        ("bat", "COMMA", "O"), ("sat", "PERIOD", "O"),
                        ("down", "PERIOD", "O")]),
       "u2": utt("u2", [("hi", "COMMA", FC)])}


def test_slots_of_an_asr_hypothesis():
    slots, counts = aligned_slots(REF["u1"], HYP["u1"])
    assert [(r.word if r else None, h.word if h else None) for r, h in slots] == [
        ("yes", "yes"), ("i", "i"), ("know", None), ("the", "the"), ("cat", "bat"),
        ("sat", "sat"), (None, "down")]
    assert (counts.matches, counts.sub, counts.dels, counts.ins) == (4, 1, 1, 1)


def test_hand_computed_figures():
    m = score_tables(REF, HYP, "full13")["all"]
    c = m["punct"]["classes"]
    # COMMA: yes TP, bat FP. PERIOD: sat TP; i and down (inserted) FP; know, Bob (deleted,
    # not moved onto "i" / "hi") FN.
    assert (c["COMMA"]["tp"], c["COMMA"]["fp"], c["COMMA"]["fn"]) == (2, 1, 0)
    assert (c["PERIOD"]["tp"], c["PERIOD"]["fp"], c["PERIOD"]["fn"]) == (1, 2, 2)
    assert m["micro_precision"] == pytest.approx(3 / 6)
    assert m["micro_recall"] == pytest.approx(3 / 5)
    assert m["micro_f1"] == pytest.approx(6 / 11)
    assert m["ser_counts"] == {"C": 3, "S": 0, "D": 2, "I": 3}
    assert m["ser"] == pytest.approx(1.0)
    assert m["words"] == 9  # 8 reference words + 1 inserted
    assert m["punct_slot_accuracy"] == pytest.approx(4 / 9)  # yes, the, sat, hi
    fc = m["cap"]["classes"]["FIRST_CAP"]
    assert (fc["tp"], fc["fp"], fc["fn"]) == (4, 0, 1)  # deleted "Bob" is a miss
    assert m["cap_micro_f1"] == pytest.approx(8 / 9)
    assert m["cap_accuracy"] == pytest.approx(8 / 9)
    assert m["asr"] == {"wer": 0.5, "sub": 1, "del": 2, "ins": 1, "ref_words": 8,
                        "hyp_words": 7}
    base = m["baseline_all_o"]
    assert base["ser_counts"] == {"C": 0, "S": 0, "D": 5, "I": 0}
    assert base["punct_slot_accuracy"] == pytest.approx(4 / 9)
    assert base["cap_accuracy"] == pytest.approx(4 / 9)


def test_wer_per_language_group():
    out = score_tables(REF, HYP, "full13", {"u1": "en", "u2": "es"}, lang_groups=())
    assert out["en"]["asr"]["wer"] == pytest.approx(3 / 6)
    assert out["es"]["asr"] == {"wer": 0.5, "sub": 0, "del": 1, "ins": 0, "ref_words": 2,
                                "hyp_words": 1}
    # an utterance with the same words in a scoring where others differ: WER 0 beside it
    same = score_tables(REF, {**HYP, "u2": REF["u2"]}, "full13", {"u1": "en", "u2": "es"},
                        lang_groups=())
    assert same["es"]["asr"]["wer"] == 0.0 and same["es"]["micro_f1"] == 1.0


def test_strict_refuses_other_words():
    with pytest.raises(PunctInputError, match=r"u1 word 2: reference has 'know'"):
        score_tables(REF, HYP, "full13", strict=True)


def test_missing_utterance_and_bad_labels_still_errors():
    with pytest.raises(PunctInputError, match="u2 of the reference is missing"):
        score_tables(REF, {"u1": HYP["u1"]}, "full13")
    bad = [*HYP["u1"][:5], WordRow("u1", 5, "down", "down", ("NOPE",), "O")]
    with pytest.raises(PunctInputError, match="unknown punctuation label 'NOPE'"):
        score_tables(REF, {**HYP, "u1": bad}, "full13")


def mini_tables(upper: bool = True
                ) -> tuple[dict[str, list[WordRow]], dict[str, list[WordRow]], dict[str, str]]:
    """The mini corpus' documents as reference, and a hypothesis with the same words whose
    marks and capitals are shifted by one word (a poor system, many kinds of error); with
    ``upper`` every fifth hypothesis word is upper-cased (the same word, case-insensitive)."""
    ref: dict[str, list[WordRow]] = {}
    langs: dict[str, str] = {}
    for lang in ("en", "es"):
        doc, lines = "", []
        text = (ROOT / "local/mini/corpus" / f"{lang}.txt").read_text("utf-8").splitlines()
        for line in [*text, "@doc end"]:
            if line.startswith("@doc"):
                if doc:
                    ref[doc] = rows_from_text(doc, " ".join(lines))
                    langs[doc] = lang
                doc, lines = line.split()[1], []
            elif doc and line.strip():
                lines.append(line.strip())
    hyp = {u: [WordRow(u, r.idx, r.word.upper() if upper and r.idx % 5 == 0 else r.word, r.form,
                       rows[r.idx - 1].punct, rows[r.idx - 1].cap) for r in rows]
           for u, rows in ref.items()}
    return ref, hyp, langs


@pytest.mark.parametrize("label_set", ["full13", "iwslt4"])
def test_identical_words_give_the_strict_figures_exactly(label_set):
    ref, hyp, langs = mini_tables()
    assert any(h.word != r.word for u in ref for r, h in zip(ref[u], hyp[u], strict=True))
    today = score_tables(ref, hyp, label_set, langs, strict=True)
    now = score_tables(ref, hyp, label_set, langs)
    assert now == today
    assert "asr" not in now["all"] and set(now) == {"all", "en", "es"}
    assert 0 < now["all"]["micro_f1"] < 1


def test_identical_words_align_to_themselves():
    ref, _, _ = mini_tables()
    rows = next(iter(ref.values()))
    words = [r.word for r in rows]
    assert all(p.op == "match" and p.ref == p.hyp for p in align_words(words, words))


def test_unmarked_substitution_changes_only_the_wer():
    ref, hyp, langs = mini_tables()
    u = next(iter(ref))
    k = next(i for i, (r, h) in enumerate(zip(ref[u], hyp[u], strict=True))
             if not r.punct and not h.punct and r.cap == h.cap == "O")
    other = [*hyp[u][:k], WordRow(u, k, "zzz", "zzz", (), "O"), *hyp[u][k + 1:]]
    base = score_tables(ref, hyp, "full13", langs)["all"]
    got = score_tables(ref, {**hyp, u: other}, "full13", langs)["all"]
    n = sum(len(rows) for rows in ref.values())
    assert got.pop("asr") == {"wer": 1 / n, "sub": 1, "del": 0, "ins": 0, "ref_words": n,
                              "hyp_words": n}
    assert got == base


def write(path: Path, table: dict[str, list[WordRow]]) -> Path:
    write_word_table(path, table)
    return path


def test_score_cli_reports_wer_and_strict_exits_1(tmp_path, capsys):
    ref_p = write(tmp_path / "data" / "test" / "words.tsv", REF)
    hyp_p = write(tmp_path / "exp" / "sys" / "decode_test" / "words.tsv", HYP)
    out = tmp_path / "scores.json"
    args = ["--ref", str(ref_p), "--hyp", str(hyp_p), "--out", str(out)]
    assert score_cli.main(args) == 0
    assert "9 words, WER 50.0, micro-F1 54.5" in capsys.readouterr().out
    doc = json.loads(out.read_text("utf-8"))
    assert doc["metrics"]["all"]["asr"]["del"] == 2 and doc["counts"]["words"] == 9
    out.unlink()
    assert score_cli.main([*args, "--strict"]) == 1
    err = capsys.readouterr().err
    assert str(hyp_p) in err and "'know'" in err and not out.exists()


def test_score_cli_identical_words_have_no_asr_key(tmp_path, capsys):
    ref, hyp, _ = mini_tables(upper=False)
    ref_p = write(tmp_path / "ref.tsv", ref)
    hyp_p = write(tmp_path / "hyp.tsv", hyp)
    docs = []
    for extra in ([], ["--strict"]):
        out = tmp_path / f"s{len(extra)}.json"
        assert score_cli.main(["--ref", str(ref_p), "--hyp", str(hyp_p), "--out", str(out),
                               *extra]) == 0
        doc = json.loads(out.read_text("utf-8"))
        doc.pop("created")
        docs.append(doc)
    assert docs[0] == docs[1]
    assert "asr" not in docs[0]["metrics"]["all"]
    assert "WER" not in capsys.readouterr().out


def test_tables_show_wer_only_for_asr_scores():
    text = {"bleu": 1.0, "chrf": 1.0, "ter": 1.0, "baseline": {}}

    def doc(name: str, metrics: dict) -> dict:
        return {"system": name, "test_set": "t", "label_set": "full13", "metrics":
                {"all": metrics}, "text": text, "labels": list(PUNCT_LABELS)}

    ref, hyp, _ = mini_tables()
    plain = doc("same", score_tables(ref, hyp, "full13")["all"])
    asr = doc("asr", score_tables(REF, HYP, "full13")["all"])
    table = summary_table([plain])
    assert "WER" not in table.frame.columns and "WER" not in table.note
    table = summary_table([plain, asr])
    wer = dict(zip(table.frame["System"], table.frame["WER"], strict=True))
    assert wer["asr"] == pytest.approx(50.0)
    assert "aligned by edit distance" in table.note
    assert "deleted reference word is a false negative" in table4_micro_f1([asr], None).note
    assert "edit distance" not in table4_micro_f1([plain], None).note
