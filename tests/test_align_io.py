"""CTM and TextGrid I/O, matching alignments to the word table, pauses."""

from __future__ import annotations

from pathlib import Path

import pytest

from punct.align.pauses import attach_timings, compute_pauses
from punct.data.ctm import read_ctm, write_ctm
from punct.data.textgrid import read_textgrid, textgrid_silences, textgrid_words
from punct.data.timed import END_OF_DOCUMENT_PAUSE, TimedWord, pauses
from punct.errors import MissingDataError, PunctInputError
from punct.wordtable import rows_from_text

MFA = Path("/work/shared/data/mfa_english_word_alignments")
needs_mfa = pytest.mark.skipif(not MFA.is_dir(), reason="MFA test recordings not present")


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- CTM


def test_ctm_read_and_write_round_trip(tmp_path):
    path = _write(tmp_path, "a.ctm", ";; comment\nr1 1 0.10 0.20 hello 0.9\nr1 1 0.30 0.25 world\n"
                  "\nr2 A 1.000 0.500 again\n")
    table = read_ctm(path)
    assert list(table) == ["r1", "r2"]
    assert table["r1"] == [TimedWord("hello", 0.1, 0.3), TimedWord("world", 0.3, 0.55)]
    assert table["r1"][1].line == 3 and table["r2"][0].end == 1.5
    out = tmp_path / "b.ctm"
    write_ctm(out, table)
    assert out.read_text().splitlines()[0] == "r1 1 0.100 0.200 hello"
    assert read_ctm(out) == table


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("r1 1 0.1 0.2 a\nr1 1 0.3 b\n", 2, "expected 5 or 6 fields"),
        ("r1 1 0.1 0.2 a\nr1 1 x 0.2 b\n", 2, "start time 'x' is not a number"),
        ("r1 1 0.1 0.2 a\nr1 1 0.3 nan b\n", 2, "not a finite number"),
        ("r1 1 -0.1 0.2 a\n", 1, "negative start time"),
        ("r1 1 0.1 -0.2 a\n", 1, "negative duration"),
        ("r1 1 0.5 0.2 a\nr1 1 0.3 0.1 b\n", 2, "not sorted"),
        ("r1 1 0.1 0.5 a\nr1 1 0.3 0.1 b\n", 2, "overlap"),
        ("r1 1 0.1 0.2 a\nr2 1 0.1 0.2 b\nr1 1 0.5 0.1 c\n", 3, "appears again"),
        ("r1 1 0.1 0.2 a zz\n", 1, "confidence 'zz'"),
    ],
)
def test_ctm_errors_name_file_and_line(tmp_path, text, line, fragment):
    path = _write(tmp_path, "bad.ctm", text)
    with pytest.raises(PunctInputError) as err:
        read_ctm(path)
    assert err.value.line == line and err.value.path == str(path)
    assert fragment in str(err.value) and f"bad.ctm:{line}:" in str(err.value)


def test_ctm_tolerates_rounding_overlap_and_missing_file(tmp_path):
    # 0.4 ms overlap from rounding is accepted (pauses clip it to 0 later)
    path = _write(tmp_path, "a.ctm", "r 1 0.1000 0.2004 a\nr 1 0.3000 0.1 b\n")
    words = read_ctm(path)["r"]
    assert pauses(words) == [0.0, END_OF_DOCUMENT_PAUSE]
    with pytest.raises(MissingDataError):
        read_ctm(tmp_path / "nope.ctm")


# ----------------------------------------------------------------------------- TextGrid

SHORT = '''File type = "ooTextFile"
Object class = "TextGrid"

0
2.5
<exists>
2
"IntervalTier"
"phones"
0
2.5
1
0
2.5
""
"IntervalTier"
"words"
0
2.5
4
0
0.5
""
0.5
1.25
"say ""hi"""
1.25
1.5
"  "
1.5
2.5
"there"
'''

LONG = '''File type = "ooTextFile"
Object class = "TextGrid"

xmin = 0
xmax = 1.358685
tiers? <exists>
size = 2
item []:
    item [1]:
        class = "IntervalTier"
        name = "Words"
        xmin = 0
        xmax = 1.358685
        intervals: size = 3
        intervals [1]:
            xmin = 0.0
            xmax = 0.55
            text = "montréal"
        intervals [2]:
            xmin = 0.55
            xmax = 0.91
            text = ""
        intervals [3]:
            xmin = 0.91
            xmax = 1.358685
            text = "aligner"
    item [2]:
        class = "TextTier"
        name = "events"
        xmin = 0
        xmax = 1.358685
        points: size = 1
        points [1]:
            number = 0.7
            mark = "click"
'''


def test_textgrid_short_format(tmp_path):
    path = _write(tmp_path, "s.TextGrid", SHORT)
    grid = read_textgrid(path)
    assert (grid.xmin, grid.xmax) == (0.0, 2.5)
    assert [t.name for t in grid.tiers] == ["phones", "words"]
    words = textgrid_words(path)
    assert [(w.word, w.start, w.end) for w in words] == [('say "hi"', 0.5, 1.25),
                                                         ("there", 1.5, 2.5)]
    assert words[0].line == 24  # the line of the interval's xmin
    assert [(s.start, s.end) for s in textgrid_silences(path)] == [(0, 0.5), (1.25, 1.5)]


def test_textgrid_long_format_utf16_and_tier_choice(tmp_path):
    path = tmp_path / "l.TextGrid"
    path.write_bytes(LONG.encode("utf-16"))
    grid = read_textgrid(path)
    assert grid.tier("words").name == "Words"  # case-insensitive fallback
    assert grid.tier("events").kind == "TextTier"
    assert grid.tier("events").intervals[0].text == "click"
    assert [w.word for w in textgrid_words(grid, "Words")] == ["montréal", "aligner"]
    with pytest.raises(PunctInputError, match="no tier named 'phones'"):
        textgrid_words(grid, "phones")
    with pytest.raises(PunctInputError, match="not an IntervalTier"):
        textgrid_words(grid, "events")


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        (SHORT.replace('"IntervalTier"\n"words"', '"PointTier"\n"words"'), 16, "tier class"),
        (SHORT.replace("1.25\n1.5\n", "1.25\n1.0\n"), 27, "ends (1.0) before it starts"),
        (SHORT.replace("1.5\n2.5\n\"there\"", "1.2\n2.5\n\"there\""), 30, "not sorted"),
        (SHORT.replace("\n4\n", "\n5\n"), 32, "file ends"),
        (SHORT.replace("0.5\n1.25", "0.5\n1.2x5"), 25, "unexpected text"),
        (SHORT.replace('"ooTextFile"', '"other"'), 1, "ooTextFile"),
    ],
)
def test_textgrid_errors(tmp_path, text, line, fragment):
    path = _write(tmp_path, "bad.TextGrid", text)
    with pytest.raises(PunctInputError) as err:
        read_textgrid(path)
    assert fragment in str(err.value)
    assert err.value.line == line


# ----------------------------------------------------------------------------- pauses


def test_attach_timings_and_pauses():
    rows = rows_from_text("u1", "Hello, big World!")
    aligned = [TimedWord("hello", 0.1, 0.5), TimedWord("BIG", 0.8, 1.0),
               TimedWord("world", 0.9995, 1.4)]
    timed = attach_timings(rows, aligned, "x.ctm")
    assert [(r.start, r.end) for r in timed] == [(0.1, 0.5), (0.8, 1.0), (0.9995, 1.4)]
    assert [r.form for r in timed] == ["Hello", "big", "World"]  # other columns untouched
    assert [r.punct for r in timed] == [r.punct for r in rows]
    paused = compute_pauses(timed, 2.0)
    assert [r.pause_after for r in paused] == [0.3, 0.0, END_OF_DOCUMENT_PAUSE]
    # the last word's pause does not depend on whether the audio's end is known
    assert compute_pauses(timed, None) == paused


def test_attach_timings_mismatch_names_file_line_and_word():
    rows = rows_from_text("u1", "one two three")
    aligned = [TimedWord("one", 0, 1, 7), TimedWord("too", 1, 2, 8),
               TimedWord("three", 2, 3, 9)]
    with pytest.raises(PunctInputError) as err:
        attach_timings(rows, aligned, "data/align/ctm")
    msg = str(err.value)
    assert msg.startswith("data/align/ctm:8:")
    assert "utterance u1" in msg and "word 2" in msg and "'two'" in msg and "'too'" in msg
    with pytest.raises(PunctInputError, match="has 2 words but the transcript has 3"):
        attach_timings(rows, [aligned[0], TimedWord("two", 1, 2)], "c.ctm")
    with pytest.raises(PunctInputError, match="extra word 'four'"):
        attach_timings(rows, [*aligned[:1], TimedWord("two", 1, 2), aligned[2],
                              TimedWord("four", 3, 4)], "c.ctm")


def test_compute_pauses_rejects_real_overlaps():
    rows = attach_timings(rows_from_text("u", "a b"),
                          [TimedWord("a", 0.0, 0.5), TimedWord("b", 0.49, 0.9)])
    with pytest.raises(PunctInputError,
                       match=r"utterance u: word 2 'b' .* 10\.0 ms before word 1 'a' ends"):
        compute_pauses(rows, 1.0)
    rows = attach_timings(rows_from_text("u", "a"), [TimedWord("a", 0.0, 0.5)])
    with pytest.raises(PunctInputError, match="after the end of the audio"):
        compute_pauses(rows, 0.4)
    assert compute_pauses(rows, 0.4995)[0].pause_after == END_OF_DOCUMENT_PAUSE  # 0.5 ms
    with pytest.raises(PunctInputError, match="has no timings"):
        compute_pauses(rows_from_text("u", "a"), 1.0)


# ----------------------------------------------------------------------------- real data


@needs_mfa
@pytest.mark.parametrize("name", ["acoustic_corpus", "cold_corpus"])
def test_mfa_pauses_equal_textgrid_silences(tmp_path, name):
    grid = read_textgrid(MFA / f"{name}.TextGrid")
    words = textgrid_words(grid)
    text = " ".join(w.word for w in words)
    rows = compute_pauses(attach_timings(rows_from_text(name, text), words, "tg"), grid.xmax)
    assert len(rows) == {"acoustic_corpus": 58, "cold_corpus": 64}[name]
    silences = {round(s.start, 6): s.end - s.start for s in textgrid_silences(grid)}
    internal = 0
    for row in rows[:-1]:
        gap = silences.get(round(row.end, 6), 0.0)
        assert row.pause_after == pytest.approx(gap, abs=5e-4), row  # to the millisecond
        internal += gap > 0
    assert internal == {"acoustic_corpus": 11, "cold_corpus": 29}[name]
    assert rows[-1].pause_after == END_OF_DOCUMENT_PAUSE
    # the CTM written from the TextGrid reads back to the same words and pauses
    path = tmp_path / f"{name}.ctm"
    write_ctm(path, {name: words})
    back = read_ctm(path)[name]
    assert [(w.word, w.start, w.end) for w in back] == [(w.word, w.start, w.end) for w in words]
    assert pauses(back, grid.xmax) == [r.pause_after for r in rows]
