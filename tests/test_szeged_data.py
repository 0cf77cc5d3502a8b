"""Hungarian Szeged data: CoNLL readers, detokenisation (rule tested on UD, where the
spacing is known), cleaning for the label parser, Nagy's label mapping, prepare CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from punct.bin import prepare_szeged
from punct.data.conll import (
    read_columns,
    read_conllu,
    read_conllup,
    rule_detokenize,
    spaced_text,
    spacing_agreement,
)
from punct.data.szeged import CleanStats, clean_text, group_rows, group_sentences
from punct.errors import MissingDataError, PunctInputError
from punct.labels import get_label_set
from punct.wordtable import read_word_table

ROOT = Path(__file__).resolve().parents[1]
UD = ROOT.parent / "shared" / "data" / "ud_hungarian_szeged"
needs_ud = pytest.mark.skipif(not UD.is_dir(), reason="no shared UD_Hungarian-Szeged copy")

CONLLU = """# sent_id = train-1
# text = Azt mondta: „Jó (nagyon) volt”, és 5,2 %-kal nőtt.
1\tAzt\taz\tPRON\t_\t_\t2\tobj\t_\t_
2\tmondta\tmond\tVERB\t_\t_\t0\troot\t_\tSpaceAfter=No
3\t:\t:\tPUNCT\t_\t_\t2\tpunct\t_\t_
4\t„\t„\tPUNCT\t_\t_\t5\tpunct\t_\tSpaceAfter=No
5\tJó\tjó\tADJ\t_\t_\t2\tccomp\t_\t_
6\t(\t(\tPUNCT\t_\t_\t7\tpunct\t_\tSpaceAfter=No
7\tnagyon\tnagyon\tADV\t_\t_\t5\tadvmod\t_\tSpaceAfter=No
8\t)\t)\tPUNCT\t_\t_\t7\tpunct\t_\t_
9\tvolt\tvan\tAUX\t_\t_\t5\tcop\t_\tSpaceAfter=No
10\t”\t”\tPUNCT\t_\t_\t5\tpunct\t_\tSpaceAfter=No
11\t,\t,\tPUNCT\t_\t_\t13\tpunct\t_\t_
12\tés\tés\tCCONJ\t_\t_\t13\tcc\t_\t_
13\t5,2\t5,2\tNUM\t_\t_\t14\tnummod\t_\t_
14\t%-kal\t%\tNOUN\t_\t_\t15\tobl\t_\t_
15\tnőtt\tnő\tVERB\t_\t_\t2\tconj\t_\tSpaceAfter=No
16\t.\t.\tPUNCT\t_\t_\t2\tpunct\t_\t_

"""
FORMS = ["Azt", "mondta", ":", "„", "Jó", "(", "nagyon", ")", "volt", "”", ",", "és", "5,2",
         "%-kal", "nőtt", "."]


def test_conllu_spacing_rebuilds_the_text(tmp_path: Path) -> None:
    path = tmp_path / "a.conllu"
    path.write_text(CONLLU, encoding="utf-8")
    (sent,) = read_conllu(path)
    assert sent.sent_id == "train-1" and sent.line == 1
    assert list(sent.forms) == FORMS
    assert spaced_text(sent) == sent.text


def test_rule_detokenizer_on_hungarian_typography() -> None:
    assert rule_detokenize(FORMS) == "Azt mondta: „Jó (nagyon) volt”, és 5,2 %-kal nőtt."
    assert rule_detokenize(["Azt", "mondta", ":", '"', "Jó", '"', "."]) == 'Azt mondta: "Jó".'
    assert rule_detokenize(["Ez", "...", "az", "!?"]) == "Ez... az!?"


@needs_ud
def test_rule_detokenizer_agrees_with_ud_spacing() -> None:
    sents = [s for f in sorted(UD.glob("*.conllu")) for s in read_conllu(f)]
    assert len(sents) == 1800
    assert all(spaced_text(s) == s.text for s in sents)  # SpaceAfter gives # text back
    ok, n, gaps_ok, gaps = spacing_agreement(sents)
    assert (ok, n) == (1779, 1800)  # 98.8% of the sentences exactly
    assert gaps_ok / gaps > 0.999  # 21 wrong gaps out of 40,232


def test_clean_text_keeps_modelled_marks_only() -> None:
    stats = CleanStats()
    text = clean_text("Azt mondta: „Jó (nagyon) volt”, és 5,2 %-kal nőtt.", stats)
    assert text == "Azt mondta: „Jó nagyon volt”, és 5,2 kal nőtt."
    assert stats.dropped == {"(": 1, ")": 1, "%": 1, "-": 1}
    assert clean_text(") , Szó „.") == "Szó ."  # marks before the first word have no home
    assert clean_text("[ ] ***") == ""


def test_nagy_label_mapping() -> None:
    nagy = get_label_set("nagy4")
    assert nagy.labels == ("COMMA", "PERIOD", "QUESTION")
    assert nagy.map(("EXCLAMATION",)) == ("PERIOD",)
    assert nagy.map(("SEMICOLON",)) == ("PERIOD",)
    assert nagy.map(("COLON",)) == ("COMMA",)
    assert nagy.map(("DASH",)) == ("COMMA",)
    assert nagy.map(("QUOTE",)) == ("COMMA",)
    assert nagy.map(("QUOTE", "PERIOD")) == ("PERIOD",)  # one class per word
    assert nagy.map(("ELLIPSIS",)) == () and nagy.map(("OPEN_DASH",)) == ()
    assert nagy.map(("OPEN_QUOTE",)) == ()


def test_groups_and_rows(tmp_path: Path) -> None:
    path = tmp_path / "n.conllup"
    path.write_text("# global.columns = FORM LEMMA UPOS\n"
                    "Ez\tez\tPRON\njó\tjó\tADJ\n.\t.\tPUNCT\n\n"
                    "Igen\tigen\tADV\n?\t?\tPUNCT\n\n", encoding="utf-8")
    sents = read_conllup(path)
    assert [s.forms for s in sents] == [("Ez", "jó", "."), ("Igen", "?")]
    assert [len(g) for g in group_sentences(sents, 3)] == [1, 1]
    (group,) = group_sentences(sents, 10)
    rows = group_rows("u", group, CleanStats())
    assert [(r.word, r.punct, r.cap) for r in rows] == [
        ("ez", (), "FIRST_CAP"), ("jó", ("PERIOD",), "O"), ("igen", ("QUESTION",), "FIRST_CAP")]
    bad = tmp_path / "bad.conllup"
    bad.write_text("Ez\tez\n", encoding="utf-8")
    with pytest.raises(PunctInputError, match="before the # global"):
        read_conllup(bad)
    cols = tmp_path / "ner.txt"
    cols.write_text("Az\taz\tO\nÖIAG\tÖIAG\t1-ORG\n\n", encoding="utf-8")
    assert read_columns(cols, 0)[0].forms == ("Az", "ÖIAG")


def test_column_readers_split_name_and_locate_sentences(tmp_path: Path) -> None:
    cols = tmp_path / "ner.txt"
    # a comment before a sentence; "#" inside one is a token; no blank line at the end
    cols.write_text("# doc 1\nAz\tO\n#\tO\n\n\nIgen\tO\n.\tO", encoding="utf-8")
    sents = read_columns(cols, 0)
    assert [(s.sent_id, s.forms, s.line) for s in sents] == [
        ("ner-1", ("Az", "#"), 2), ("ner-2", ("Igen", "."), 6)]
    assert all(s.space_after is None and s.path == str(cols) for s in sents)
    cols.write_text("x\t1\ny\n", encoding="utf-8")
    with pytest.raises(PunctInputError, match=r"ner\.txt:2: expected at least 2 columns"):
        read_columns(cols, 1)
    plus = tmp_path / "n.conllup"
    plus.write_text("# global.columns = ID FORM\n1\tEz\n# a comment inside\n2\tjó\n\n",
                    encoding="utf-8")
    (sent,) = read_conllup(plus)
    assert sent.forms == ("Ez", "jó") and sent.line == 2
    plus.write_text("# global.columns = ID FORM\n1\n", encoding="utf-8")
    with pytest.raises(PunctInputError, match=r"n\.conllup:2: expected at least 2 columns"):
        read_conllup(plus)


def _fixture(tmp_path: Path) -> tuple[Path, Path]:
    ud = tmp_path / "ud"
    ud.mkdir()
    for split in ("train", "dev", "test"):
        (ud / f"hu_szeged-ud-{split}.conllu").write_text(CONLLU, encoding="utf-8")
    nerkor = tmp_path / "nerkor"
    for split in ("train", "devel"):
        (nerkor / split).mkdir(parents=True)
        (nerkor / split / "news_1.conllup").write_text(
            "# global.columns = FORM LEMMA\nMit\tmi\tcsinálsz\tcsinál\n?\t?\n\n",
            encoding="utf-8")
    return ud, nerkor


def test_prepare_cli_writes_sets(tmp_path: Path) -> None:
    ud, nerkor = _fixture(tmp_path)
    tb = tmp_path / "tb.conllu"
    tb.write_text(CONLLU * 10, encoding="utf-8")
    data = tmp_path / "data"
    assert prepare_szeged.main(["--ud-dir", str(ud), "--nerkor-dir", str(nerkor),
                                "--treebank", str(tb), "--data-dir", str(data)]) == 0
    train = read_word_table(data / "train" / "words.tsv")
    assert list(train) == ["ud_train-00000", "nerkor_train-00000", "tb_train-00000"]
    assert len(train["tb_train-00000"]) == 8 * 9  # 80% of 10 sentences of 9 words
    assert (data / "test" / "score_label_set").read_text() == "nagy4\n"
    assert (data / "test" / "text").read_text(encoding="utf-8") == (
        "ud_test-00000 Azt mondta: “Jó nagyon volt”, és 5,2 kal nőtt.\n")
    assert (data / "test_treebank" / "words.tsv").is_file()
    info = json.loads((data / "train" / "prep.json").read_text(encoding="utf-8"))
    assert info["label_counts"]["QUESTION"] == 1
    rule = json.loads((data / "local" / "detok_rule_on_ud.json").read_text())
    assert rule["sentences"] == 3


def test_prepare_cli_missing_data_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                         ) -> None:
    ud, _ = _fixture(tmp_path)
    rc = prepare_szeged.main(["--ud-dir", str(ud), "--nerkor-dir", str(tmp_path / "none"),
                              "--data-dir", str(tmp_path / "data")])
    assert rc == 2 and "NerKor train" in capsys.readouterr().err
    with pytest.raises(MissingDataError):
        prepare_szeged.treebank_sentences(tmp_path / "nope")


def test_multiword_tokens_give_the_surface_form(tmp_path: Path) -> None:
    path = tmp_path / "m.conllu"
    path.write_text("# text = Ab c.\n1-2\tAb\t_\t_\t_\t_\t_\t_\t_\t_\n"
                    "1\tA\ta\tX\t_\t_\t0\troot\t_\t_\n2\tb\tb\tX\t_\t_\t1\tdep\t_\t_\n"
                    "3\tc\tc\tX\t_\t_\t1\tdep\t_\tSpaceAfter=No\n"
                    "4\t.\t.\tPUNCT\t_\t_\t1\tpunct\t_\t_\n\n", encoding="utf-8")
    (sent,) = read_conllu(path)
    assert sent.forms == ("Ab", "c", ".") and spaced_text(sent) == "Ab c."
    path.write_text("1\tA\ta\n", encoding="utf-8")
    with pytest.raises(PunctInputError, match="10 tab-separated"):
        read_conllu(path)
