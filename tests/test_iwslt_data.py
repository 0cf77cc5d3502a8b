"""IWSLT 2012 parsers (Che TSV, punctuator2, mteval XML), stage 1 and stage 0."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from punct.bin import prepare_iwslt
from punct.data.iwslt import (
    blocks,
    decode_bytes,
    label_counts,
    parse_che_tsv,
    parse_mteval,
    parse_punctuator2,
    split_clitic,
)
from punct.errors import MissingDataError, PunctInputError
from punct.kaldi import ends_mid_stream, read_kv, validate_data_dir
from punct.labels import Token, get_label_set
from punct.wordtable import read_word_table

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "iwslt2012"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="no shared IWSLT 2012 copy")
XML = """<?xml version="1.0" encoding="UTF-8"?>
<mteval>
<srcset setid="iwslt2012-tst2011" srclang="english">
<doc docid="11" genre="lectures">
    <talkid>11</talkid>
<seg id="1">  I'm a savant,  or more precisely -- a NASA fan.  </seg>
<seg id="2">  ♫ They said:  &quot;Can't you?&quot;  </seg>
</doc>
<doc docid="7" genre="lectures">
<seg id="3">  Thank you!  </seg>
</doc>
</srcset>
</mteval>
"""


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


# ---------------------------------------------------------------- decoding


def test_damaged_music_note_is_removed_and_located() -> None:
    text, issues = decode_bytes(b"x\n\xe2\x99?gimme", "f", line=3, base=100)
    assert text == "x\ngimme"
    assert len(issues) == 1
    issue = issues[0]
    assert (issue.line, issue.offset, issue.raw) == (4, 102, b"\xe2\x99?")
    assert "music note" in issue.what
    assert str(issue).startswith("f:4: byte 102: removed e2 99 3f")


def test_other_invalid_bytes_are_removed_and_named() -> None:
    text, issues = decode_bytes(b"fuckin\xe2\x80?wicked \xff!", "f")
    assert text == "fuckinwicked !"
    assert [i.raw for i in issues] == [b"\xe2\x80?", b"\xff"]
    assert "last byte became '?'" in issues[0].what
    assert "invalid UTF-8" in issues[1].what


def test_valid_utf8_is_untouched() -> None:
    assert decode_bytes("naïve ’s ♪".encode(), "f") == ("naïve ’s ♪", [])


# ---------------------------------------------------------------- Che TSV


def test_che_tsv_crlf_repairs_and_labels(tmp_path: Path) -> None:
    path = write(tmp_path / "dev2012", b"i\tO\r\n'm\tO\r\n\xe2\x99?fine\tCOMMA\r\n"
                 b"\xe2\x99?\tO\r\n\tPERIOD\r\nso\tQUESTION\r\n")
    parsed = parse_che_tsv(path)
    assert [(w.form, w.punct, w.line) for w in parsed.words] == [
        ("i", (), 1), ("'m", (), 2), ("fine", ("COMMA", "PERIOD"), 3), ("so", ("QUESTION",), 6),
    ]
    assert [i.line for i in parsed.issues] == [3, 4]
    assert len(parsed.notes) == 2
    assert "dev2012:5: empty token" in parsed.notes[1]
    assert label_counts(parsed.words) == {"O": 2, "COMMA": 1, "PERIOD": 1, "QUESTION": 1}


@pytest.mark.parametrize(("content", "line", "message"), [
    (b"a\tO\nb\tEXCLAIM\n", 2, "unknown label 'EXCLAIM'"),
    (b"a\tO\nb O\n", 2, "expected token<TAB>LABEL"),
    (b"a b\tO\n", 1, "white space"),
])
def test_che_tsv_bad_lines_name_file_and_line(tmp_path: Path, content: bytes, line: int,
                                              message: str) -> None:
    path = write(tmp_path / "bad", content)
    with pytest.raises(PunctInputError, match=message) as err:
        parse_che_tsv(path)
    assert err.value.line == line
    assert err.value.path == str(path)


def test_che_tsv_missing_file(tmp_path: Path) -> None:
    with pytest.raises(MissingDataError):
        parse_che_tsv(tmp_path / "nope")


# ---------------------------------------------------------------- punctuator2, XML


def test_punctuator2_format(tmp_path: Path) -> None:
    path = write(tmp_path / "ref.txt", b"i  'm  a  savant ,COMMA or  so :COLON yes ?QUESTIONMARK")
    words = parse_punctuator2(path).words
    assert [(w.form, w.punct) for w in words] == [
        ("i", ()), ("'m", ()), ("a", ()), ("savant", ("COMMA",)), ("or", ()),
        ("so", ("COLON",)), ("yes", ("QUESTION",)),
    ]
    with pytest.raises(PunctInputError, match="before the first word"):
        parse_punctuator2(write(tmp_path / "b.txt", b".PERIOD a"))
    with pytest.raises(PunctInputError, match="unknown punctuator2 mark"):
        parse_punctuator2(write(tmp_path / "c.txt", b"a .FULLSTOP"))


def test_split_clitic_as_che() -> None:
    assert split_clitic(Token("I'm", ("OPEN_QUOTE",))) == [Token("I", ("OPEN_QUOTE",)),
                                                           Token("'m", ())]
    assert split_clitic(Token("don't", ("PERIOD",))) == [Token("do", ()),
                                                         Token("n't", ("PERIOD",))]
    assert split_clitic(Token("Can't", ())) == [Token("Cannot", ())]
    assert split_clitic(Token("I've", ())) == [Token("I've", ())]


def test_mteval_xml_talks_marks_and_caps(tmp_path: Path) -> None:
    talks = parse_mteval(write(tmp_path / "t.xml", XML.encode()))
    assert list(talks) == ["11", "7"]
    words = talks["11"].words
    assert [w.form for w in words] == ["I", "'m", "a", "savant", "or", "more", "precisely",
                                       "a", "NASA", "fan", "They", "said", "Cannot", "you"]
    assert words[3].punct == ("COMMA",)
    assert words[6].punct == ("DASH",)
    assert words[9].punct == ("PERIOD",)
    assert words[11].punct == ("COLON",)
    assert words[12].punct == ("OPEN_QUOTE",)
    assert words[13].punct == ("QUESTION", "QUOTE")
    assert [w.line for w in words[:1] + words[-1:]] == [6, 7]
    assert talks["11"].notes == [f"{tmp_path / 't.xml'}:7: music note(s) removed"]
    iwslt4 = get_label_set("iwslt4")
    assert [iwslt4.map(w.punct) for w in words[6:12]] == [
        ("COMMA",), (), (), ("PERIOD",), (), ("COMMA",)]


def test_mteval_unclosed_seg(tmp_path: Path) -> None:
    bad = XML.replace("a NASA fan.  </seg>", "a NASA fan.")
    with pytest.raises(PunctInputError, match="one line") as err:
        parse_mteval(write(tmp_path / "t.xml", bad.encode()))
    assert err.value.line == 6


def test_blocks_have_a_fixed_size() -> None:
    assert [len(b) for b in blocks(list(range(7)), 3)] == [3, 3, 1]
    with pytest.raises(ValueError):
        blocks([1], 0)


# ---------------------------------------------------------------- the real files


@needs_shared
def test_real_test2011_counts_and_repairs() -> None:
    parsed = parse_che_tsv(SHARED / "che_original" / "test2011")
    assert len(parsed.words) == 12626
    assert label_counts(parsed.words) == {"O": 10943, "COMMA": 830, "PERIOD": 807,
                                          "QUESTION": 46}
    assert len(parsed.issues) == 6
    assert sorted({i.line for i in parsed.issues}) == [6973, 6977, 6986, 6997]
    assert all(i.raw == b"\xe2\x99?" for i in parsed.issues)
    # The xashru copy decodes the same bytes as cp1252; its words differ only there.
    xashru = parse_che_tsv(SHARED / "xashru_variant" / "test2011")
    differ = [a.line for a, b in zip(parsed.words, xashru.words, strict=True) if a.form != b.form]
    assert differ == [6973, 6977, 6986, 6997]


@needs_shared
def test_real_xml_matches_che_labels_under_iwslt4() -> None:
    talks = parse_mteval(SHARED / "raw_xml" / "IWSLT12.TED.MT.tst2011.en-fr.en.xml")
    assert list(talks) == ["1175", "1169", "1178", "1181", "1174", "1182", "1183", "1187"]
    words = [w for t in talks.values() for w in t.words]
    assert len(words) == 12625  # Che: 12626 (a stray "/seg" token)
    iwslt4 = get_label_set("iwslt4")
    mapped = label_counts([w.__class__(w.form, iwslt4.map(w.punct), w.line) for w in words])
    # 10943 words without a mark; iwslt4 is exclusive: the two words with two marks keep
    # the stronger one (e.g. "D.C.," -> PERIOD, not PERIOD and COMMA).
    assert mapped == {"O": 10943, "COMMA": 828, "PERIOD": 808, "QUESTION": 46}


# ---------------------------------------------------------------- stage 1


def tiny_db(root: Path, n_dev: int = 23, train: bool = False) -> Path:
    lines = b"".join(f"w{i}\t{'PERIOD' if i % 5 == 4 else 'O'}\r\n".encode()
                     for i in range(n_dev))
    write(root / "che_original" / "dev2012", lines)
    write(root / "che_original" / "test2011", b"a\tO\r\nb\tCOMMA\r\nc\tPERIOD\r\n")
    write(root / "raw_xml" / prepare_iwslt.XML_NAME, XML.encode())
    if train:
        write(root / "train2012", b"t\tO\nu\tPERIOD\n")
    return root


def test_prepare_fallback_split(tmp_path: Path) -> None:
    db = tiny_db(tmp_path / "db")
    rc = prepare_iwslt.main(["--db-dir", str(db), "--data-dir", str(tmp_path / "data"),
                             "--doc-words", "5", "--valid-blocks", "2"])
    assert rc == 0
    data = tmp_path / "data"
    train, dev = read_word_table(data / "train" / "words.tsv"), read_word_table(
        data / "dev" / "words.tsv")
    # 23 words = blocks of 5: 0-2 train (15 words), 3-4 validate (8 words).
    assert list(train) == ["dev2012-0000", "dev2012-0001", "dev2012-0002"]
    assert list(dev) == ["dev2012-0003", "dev2012-0004"]
    assert [r.word for r in dev["dev2012-0004"]] == ["w20", "w21", "w22"]
    assert train["dev2012-0000"][4].punct == ("PERIOD",)
    info = json.loads((data / "dev" / "prep.json").read_text())
    assert "words [0, 15) = blocks 0-2 train" in info["split"]
    assert info["label_counts"] == {"O": 7, "PERIOD": 1}
    for name, label_set in [("train", "iwslt4"), ("test2011", "iwslt4"),
                            ("test2011_full", "full13")]:
        assert validate_data_dir(data / name)["utterances"] >= 1
        assert (data / name / "score_label_set").read_text().strip() == label_set
        assert set(read_kv(data / name / "utt2lang").values()) == {"en"}
        assert ends_mid_stream(data / name)  # blocks of the talks' word stream
    full = read_word_table(data / "test2011_full" / "words.tsv")
    assert list(full) == ["tst2011_11-000", "tst2011_11-001", "tst2011_11-002", "tst2011_7-000"]
    assert read_kv(data / "test2011_full" / "utt2spk")["tst2011_11-001"] == "tst2011_11"
    assert full["tst2011_11-000"][0].cap == "FIRST_CAP"
    assert "music note" in (data / "local" / "iwslt2012_repairs.txt").read_text()


def test_prepare_uses_train2012_and_limits(tmp_path: Path) -> None:
    db = tiny_db(tmp_path / "db", train=True)
    data = tmp_path / "data"
    assert prepare_iwslt.main(["--db-dir", str(db), "--data-dir", str(data), "--doc-words", "4",
                               "--max-dev-words", "6", "--max-test-words", "2"]) == 0
    assert [r.word for rows in read_word_table(data / "train" / "words.tsv").values()
            for r in rows] == ["t", "u"]
    assert sum(map(len, read_word_table(data / "dev" / "words.tsv").values())) == 6
    assert sum(map(len, read_word_table(data / "test2011" / "words.tsv").values())) == 2
    assert sum(map(len, read_word_table(data / "test2011_full" / "words.tsv").values())) == 2


def test_prepare_asr_condition_when_present(tmp_path: Path) -> None:
    """test2011asr (Che's ASR-output version of test2011, same TSV) gets its own data dir,
    scored like test2011; without it nothing is written."""
    db = tiny_db(tmp_path / "db")
    data = tmp_path / "data"
    assert prepare_iwslt.main(["--db-dir", str(db), "--data-dir", str(data), "--doc-words", "5",
                               "--valid-blocks", "2"]) == 0
    assert not (data / "test2011asr").exists()
    # ASR output: a recognition error ("see" for "c") and a deleted word, CRLF as Che's
    write(db / "che_original" / "test2011asr", b"a\tO\r\nb\tCOMMA\r\nsee\tQUESTION\r\n"
          b"d\tO\r\ne\tPERIOD\r\n")
    assert prepare_iwslt.main(["--db-dir", str(db), "--data-dir", str(data), "--doc-words", "5",
                               "--valid-blocks", "2"]) == 0
    asr = read_word_table(data / "test2011asr" / "words.tsv")
    rows = [r for utt in asr.values() for r in utt]
    assert [(r.word, r.punct) for r in rows] == [
        ("a", ()), ("b", ("COMMA",)), ("see", ("QUESTION",)), ("d", ()), ("e", ("PERIOD",))]
    assert (data / "test2011asr" / "score_label_set").read_text().strip() == "iwslt4"
    assert ends_mid_stream(data / "test2011asr")
    assert validate_data_dir(data / "test2011asr")["utterances"] == 1
    info = json.loads((data / "test2011asr" / "prep.json").read_text())
    assert info["label_counts"] == {"O": 2, "COMMA": 1, "QUESTION": 1, "PERIOD": 1}


def test_prepare_missing_and_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    db = tiny_db(tmp_path / "db")
    (db / "che_original" / "test2011").unlink()
    assert prepare_iwslt.main(["--db-dir", str(db), "--data-dir", str(tmp_path / "d")]) == 2
    assert "test2011 not found" in capsys.readouterr().err
    write(db / "test2011", b"a\tO\nb\tBANG\n")
    assert prepare_iwslt.main(["--db-dir", str(db), "--data-dir", str(tmp_path / "d")]) == 1
    assert f"{db / 'test2011'}:2: unknown label 'BANG'" in capsys.readouterr().err
    write(db / "test2011", b"a\tO\n")
    assert prepare_iwslt.main(["--db-dir", str(db), "--data-dir", str(tmp_path / "d"),
                               "--train-source", "train2012"]) == 2


# ---------------------------------------------------------------- stage 0


def run_download(out: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(ROOT / "local" / "iwslt2012" / "download.sh"), str(out)],
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=60)


@needs_shared
def test_download_links_a_local_copy_and_checks_it(tmp_path: Path) -> None:
    proc = run_download(tmp_path / "dl", IWSLT2012=str(SHARED))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "dl" / "iwslt2012").resolve() == SHARED.resolve()
    assert "train2012 not in" in proc.stdout
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("_ReadMe_.txt", "dev2012", "test2011"):
        shutil.copy(SHARED / "che_original" / name, copy / name)
    write(copy / prepare_iwslt.XML_NAME, b"<mteval/>")
    proc = run_download(tmp_path / "dl2", IWSLT2012=str(copy))
    assert proc.returncode == 1
    assert f"checksum mismatch for {copy}/{prepare_iwslt.XML_NAME}" in proc.stderr


@needs_shared
def test_download_fetches_and_verifies(tmp_path: Path) -> None:
    src = tmp_path / "server"
    src.mkdir()
    for path in [*(SHARED / "che_original").iterdir(), *(SHARED / "raw_xml").iterdir()]:
        shutil.copy(path, src / path.name)
    proc = run_download(tmp_path / "dl", IWSLT2012=str(tmp_path / "absent"),
                        IWSLT2012_URL=f"file://{src}")
    assert proc.returncode == 0, proc.stderr
    sums = (tmp_path / "dl" / "iwslt2012" / "SHA256SUMS").read_text().split("\n")
    assert len([s for s in sums if s]) == 4
    assert "optional train2012 not downloadable" in proc.stdout
    (tmp_path / "dl" / "iwslt2012" / "test2011").write_bytes(b"x")
    proc = run_download(tmp_path / "dl", IWSLT2012=str(tmp_path / "absent"),
                        IWSLT2012_URL=f"file://{src}")
    assert proc.returncode == 1 and "checksum mismatch" in proc.stderr
