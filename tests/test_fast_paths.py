"""The shortcuts the restore path takes for the common word (ASCII, lower-case, no
marks) agree with the full definitions on every kind of word, and the restore
benchmark times the whole path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from punct.bin import bench_engine, bench_restore
from punct.engine.symbols import cased_input, is_foreign, is_passthrough, split_tokens, tally
from punct.infer.casing import CaseStats, _cased_letters, marked_case
from punct.infer.stream import plain_words, text_input_words
from punct.labels import CANONICAL, MARK_CHARS, OPENING_LABELS, strip_edge_marks, written

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "iwslt2012"
WORDS = ["hello", "a", "I", "Hello", "USA", "iPhone", "McDonald", "x-men", "don't", "o’clock",
         "café", "Étienne", "ÉCOLE", "straße", "ß", "42", "4x4", "r2d2", "日本", "🙂", "a🙂",
         "http://x.org/a", "[noise]", "<breath>", "½", "㆒", "①", "é", "e\u0301", "ǅ",
         "", "_", "a_b", "ΣΑΣ", "σας", "İstanbul", "ﬁ", "Ⅻ", "x²", "٣"]


@pytest.mark.parametrize("word", WORDS)
def test_passthrough_as_defined(word: str) -> None:
    assert is_passthrough(word) == any(is_foreign(ch) for ch in word)


@pytest.mark.parametrize("word", WORDS)
def test_casing_shortcuts_as_defined(word: str) -> None:
    letters = _cased_letters(word)
    assert marked_case(word) == any(ch.isupper() for ch in letters[1:])
    stats = CaseStats()
    stats.add(word)
    want = (int(any(ch.isupper() for ch in letters)), int(len(letters) >= 2),
            int(len(letters) >= 2 and all(ch.isupper() for ch in letters)))
    assert (stats.capital, stats.long_words, stats.all_caps) == want


@pytest.mark.parametrize("cased", [False, True])
def test_token_split_as_defined(cased: bool) -> None:
    """A token of letters and digits alone has no mark to strip (no mark is one), and
    the words of a text come out classified once as the reader classified them."""
    assert not any(ch.isalnum() for ch in MARK_CHARS)
    tokens = [w for w in WORDS if w] + [f"{w}," for w in WORDS if w] + [
        "“Hello,”", "U.S.", "(noise)", "[noise],", "—", "...", "<breath>."]
    for token in tokens:
        if token.isalnum():
            assert strip_edge_marks(token) == ("", token, "")
    text = " ".join(tokens)
    with tally(None) as counter:
        if cased:
            with cased_input():
                words, flags = split_tokens(text)
                got = text_input_words(text)
        else:
            words, flags = split_tokens(text)
            got = text_input_words(text)
        want = plain_words(words)
    assert got == want and [w.nonspeech for w in want] == flags
    assert 0 < sum(flags) < len(flags) and counter.nonspeech > 0


@pytest.mark.parametrize("punct", [(), ("COMMA",), ("OPEN_QUOTE", "PERIOD"),
                                   ("OPEN_QUOTE", "QUOTE", "QUESTION"), ("OPEN_DASH",)])
def test_written_as_defined(punct: tuple[str, ...]) -> None:
    assert all(p in CANONICAL for p in punct)
    opening = "".join(CANONICAL[p] for p in punct if p in OPENING_LABELS)
    closing = "".join(CANONICAL[p] for p in punct if p not in OPENING_LABELS)
    assert written("word", punct) == opening + "word" + closing
    assert written("word", list(punct)) == opening + "word" + closing


@pytest.mark.skipif(not SHARED.is_dir(), reason="no shared IWSLT 2012 copy")
def test_bench_restore_times_the_whole_path(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "restore.json"
    assert bench_restore.main(["--stub-encoder", "--iwslt", str(SHARED / "che_original" /
                               "test2011"), "--family", "nagy", "--window", "32", "--reps",
                               "1", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert json.loads(capsys.readouterr().out) == report
    assert report["words"] == 12626 and report["documents"] == 64 == report["output_lines"]
    # the words that are marks alone are not words of the restored text
    assert 12500 < report["words_restored"] <= report["words"]
    assert 0 < report["model_seconds"] < report["seconds"]
    assert report["us_per_word"] > report["us_per_word_outside_engine"] > 0


@pytest.mark.skipif(not SHARED.is_dir(), reason="no shared IWSLT 2012 copy")
def test_bench_restore_reads_a_ctm_of_the_same_words(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    out = tmp_path / "restore.json"
    assert bench_restore.main(["--stub-encoder", "--iwslt", str(SHARED / "che_original" /
                               "test2011"), "--family", "nagy", "--window", "32", "--reps",
                               "1", "--input-format", "ctm", "--json", str(out)]) == 0
    capsys.readouterr()
    report = json.loads(out.read_text())
    assert report["input_format"] == "ctm" and report["documents"] == 64
    assert report["output_lines"] == 64 and 12500 < report["words_restored"] <= 12626
    ctm = bench_restore.ctm_lines([["a", "b"], ["c"]]).splitlines()
    assert ctm == ["rec00000 1 0.00 0.20 a", "rec00000 1 0.25 0.20 b",
                   "rec00001 1 0.00 0.20 c"]
    spaced = bench_restore.ctm_lines([["w"] * 13])
    assert spaced.splitlines()[12] == "rec00000 1 3.60 0.20 w"  # 0.6 s more after the 12th


@pytest.mark.parametrize("tool", [bench_engine, bench_restore])
def test_bench_tools_name_a_missing_input_file(tool: Any, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "dev2012"
    assert tool.main(["--stub-encoder", "--iwslt", str(missing), "--family", "nagy"]) == 2
    captured = capsys.readouterr()
    name = tool.__name__.rsplit(".", 1)[-1]
    assert captured.err == f"{name}: {missing}: file not found\n" and captured.out == ""
