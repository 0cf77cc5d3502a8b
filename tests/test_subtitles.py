"""Subtitles: SRT/WebVTT readers, cues planned over the document, JSONL sentences."""

from __future__ import annotations

import io
import itertools
import json
import random
from pathlib import Path

import pytest
from helpers.rules import rule_restorer
from helpers.tiny import save_untrained, seq

from punct.bin import restore as restore_cli
from punct.data.timed import END_OF_DOCUMENT_PAUSE
from punct.errors import PunctInputError
from punct.infer.cues import Cue, CueCosts, CueLimits, CueWord, plan_cues
from punct.infer.inputs import read_ctm, read_text
from punct.infer.outputs import write_segments
from punct.infer.stream import InputWord
from punct.infer.subtitles import SubtitleWriter, format_time, parse_time, read_srt, read_vtt
from punct.wordtable import WordRow

SRT = """1
00:00:01,000 --> 00:00:02,000
<i>Hello</i> world

2
00:00:02,800 --> 00:00:04,000
{\\an8}What is it?
"""

VTT = """WEBVTT - a talk

NOTE written by hand,
over two lines

STYLE
::cue { color: yellow }

intro
00:01.000 --> 00:02.000 align:start position:10%
<v Ann>Hello</v> world

00:00:02.800 --> 00:00:04.000
what &amp; it
"""

# a(0.0-0.4) b(1.0-1.3): pause 0.6 -> COMMA (RuleModel), 'stop' -> PERIOD
CTM = "".join(f"r1 1 {s:.2f} {e - s:.2f} {w}\n" for w, s, e in [
    ("a", 0.0, 0.4), ("b", 1.0, 1.3), ("stop", 1.4, 1.7), ("c", 1.8, 2.0), ("d", 2.1, 2.4),
    ("stop", 2.5, 2.8), ("e", 2.9, 3.2)])


def _words(reader, text: str, name: str = "talk.srt") -> tuple[str, list[InputWord]]:
    doc = next(reader(io.BytesIO(text.encode()), name))
    return doc.doc_id, list(doc.words)


def test_srt_reader_times_words_by_cue_and_pauses_between_cues() -> None:
    doc_id, words = _words(read_srt, SRT)
    assert doc_id == "talk"
    assert [(w.word, w.start, w.end) for w in words] == [
        ("hello", 1.0, 1.5), ("world", 1.5, 2.0), ("what", 2.8, pytest.approx(3.4)),
        ("is", pytest.approx(3.4), pytest.approx(3.7)), ("it", pytest.approx(3.7), 4.0)]
    assert [w.pause_after for w in words] == [0.0, 0.8, 0.0, 0.0, END_OF_DOCUMENT_PAUSE]


def test_vtt_reader_skips_header_notes_styles_and_markup() -> None:
    doc_id, words = _words(read_vtt, VTT, "dir/talk.vtt")
    assert doc_id == "talk"
    assert [w.word for w in words] == ["hello", "world", "what", "&", "it"]
    assert words[0].start == 1.0 and words[1].pause_after == 0.8


@pytest.mark.parametrize(("reader", "text", "line", "msg"), [
    (read_srt, "1\n00:00:01,000 --> 00:00:00,500\nx\n", 2, "ends"),
    (read_srt, "1\n00:00:01 --> 00:00:02,000\nx\n", 2, "bad timestamp"),
    (read_srt, "1\nno timing\n", 1, "without a timing"),
    (read_srt, "1\n00:00:05,000 --> 00:00:06,000\nx\n\n2\n00:00:01,000 --> 00:00:02,000\ny\n",
     6, "not in time order"),
    (read_vtt, "1\n00:01.000 --> 00:02.000\nx\n", 1, "starts with 'WEBVTT'"),
])
def test_subtitle_errors_name_the_line(reader, text: str, line: int, msg: str) -> None:
    with pytest.raises(PunctInputError, match=rf"in.srt:{line}: .*{msg}"):
        _words(reader, text, "in.srt")


def test_times_and_wrap() -> None:
    assert parse_time("01:02:03,045", "x", 1) == pytest.approx(3723.045)
    assert parse_time("02:03.5", "x", 1) == pytest.approx(123.5)
    assert format_time(3723.045, vtt=False) == "01:02:03,045"
    assert format_time(0.9996, vtt=True) == "00:00:01.000"


def _restore(fmt: str, **cues: float) -> str:
    docs = read_ctm(io.BytesIO(CTM.encode()), "in.ctm")
    out = io.StringIO()
    assert write_segments(rule_restorer().restore_documents(docs), out, fmt, cues=cues) == 1
    return out.getvalue()


def test_srt_cues_break_at_sentence_ends_hand_checked() -> None:
    assert _restore("srt", min_seconds=0) == (
        "1\n00:00:00,000 --> 00:00:01,700\nA, b stop.\n\n"
        "2\n00:00:01,800 --> 00:00:02,800\nC d stop.\n\n"
        "3\n00:00:02,900 --> 00:00:03,200\nE.\n\n")
    # the default minimum of 1 s: 'E,' (0.3 s) joins the sentence before it
    assert _restore("srt") == (
        "1\n00:00:00,000 --> 00:00:01,700\nA, b stop.\n\n"
        "2\n00:00:01,800 --> 00:00:03,200\nC d stop. E.\n\n")


def test_vtt_and_cue_limits_hand_checked() -> None:
    assert _restore("vtt", max_chars=6, min_seconds=0) == (
        "WEBVTT\n\nNOTE r1\n\n"
        "1\n00:00:00.000 --> 00:00:01.300\nA, b\n\n"
        "2\n00:00:01.400 --> 00:00:01.700\nstop.\n\n"
        "3\n00:00:01.800 --> 00:00:02.400\nC d\n\n"
        "4\n00:00:02.500 --> 00:00:02.800\nstop.\n\n"
        "5\n00:00:02.900 --> 00:00:03.200\nE.\n\n")
    short = _restore("srt", max_seconds=1.0, min_seconds=0)
    assert short.startswith("1\n00:00:00,000 --> 00:00:00,400\nA,\n\n"
                            "2\n00:00:01,000 --> 00:00:01,700\nb stop.\n\n")
    # a word longer than a line stands alone
    assert "\nC d\n\n" in _restore("srt", line_chars=4, min_seconds=0)
    with pytest.raises(ValueError, match="minimum cue duration"):
        _restore("srt", min_seconds=8.0)


# 'questions.' (0.45 s) is where a greedy cutter filled the first cue to 84 characters;
# pauses of 0.65 s and 0.7 s follow the commas after 'numbers' and 'them'
TALK = [("We", 0.0, 0.2), ("looked", 0.25, 0.6), ("at", 0.65, 0.75), ("the", 0.8, 0.9),
        ("numbers,", 0.95, 1.5), ("and", 2.15, 2.3), ("then", 2.35, 2.6), ("we", 2.65, 2.75),
        ("asked", 2.8, 3.2), ("all", 3.25, 3.45), ("of", 3.5, 3.6), ("them,", 3.65, 4.0),
        ("one", 4.7, 4.9), ("by", 4.95, 5.1), ("one,", 5.15, 5.4), ("a", 5.45, 5.5),
        ("few", 5.55, 5.75), ("hard", 5.8, 6.1), ("questions.", 6.15, 6.6),
        ("They", 7.5, 7.7), ("did", 7.75, 7.9), ("not", 7.95, 8.2), ("answer.", 8.25, 8.9)]


def _talk_rows() -> list[WordRow]:
    rows = []
    for k, (text, start, end) in enumerate(TALK):
        punct = ("COMMA",) if text.endswith(",") else ("PERIOD",) if text.endswith(".") else ()
        form = text.strip(",.")
        rows.append(WordRow("talk", k, form.lower(), form, punct, "O", start, end, None))
    return rows


@pytest.mark.parametrize("vtt", [False, True])
def test_cues_end_at_pauses_after_commas_not_greedily(vtt: bool) -> None:
    out = io.StringIO()
    writer = SubtitleWriter(out, vtt)
    writer.start_document("talk")
    writer.add(_talk_rows())
    writer.end_document()
    sep = "." if vtt else ","
    assert out.getvalue().removeprefix("WEBVTT\n\nNOTE talk\n\n") == (
        f"1\n00:00:00{sep}000 --> 00:00:04{sep}000\n"
        "We looked at the numbers,\nand then we asked all of them,\n\n"
        f"2\n00:00:04{sep}700 --> 00:00:06{sep}600\none by one, a few hard questions.\n\n"
        f"3\n00:00:07{sep}500 --> 00:00:08{sep}900\nThey did not answer.\n\n")


def _random_words(rng: random.Random, n: int) -> list[CueWord]:
    words, t = [], 0.0
    for _ in range(n):
        text = "w" * rng.randint(1, 12)
        mark = rng.choice(["", "", "", ",", "."])
        dur = rng.uniform(0.1, 0.8)
        words.append(CueWord(text + mark, t, t + dur, mark == ".", mark == ","))
        t += dur + rng.choice([0.0, 0.05, 0.1, 0.3, 0.7, 1.5])
    return words


def _brute_force(words: list[CueWord], limits: CueLimits) -> tuple[int, float]:
    costs = CueCosts(words, limits)
    n, best = len(words), (len(words) + 1, 0.0)
    for cuts in itertools.product([False, True], repeat=n - 1):
        bounds = [0] + [k + 1 for k, c in enumerate(cuts) if c] + [n]
        parts = [costs.cue(i, j) for i, j in itertools.pairwise(bounds)]
        if all(p is not None for p in parts):
            best = min(best, (sum(p[0] for p in parts if p), sum(p[1] for p in parts if p)))
    return best


@pytest.mark.parametrize("seed", range(40))
def test_planned_cues_keep_the_limits_and_are_optimal(seed: int) -> None:
    rng = random.Random(seed)
    limits = CueLimits(max_chars=rng.choice([20, 30, 84]), max_seconds=rng.choice([2.0, 4.0]),
                       min_seconds=1.0, line_chars=rng.choice([10, 16, 42]))
    words = _random_words(rng, rng.randint(1, 11))
    cues = plan_cues(words, limits)
    assert [k for c in cues for k in range(c.first, c.last)] == list(range(len(words)))
    costs = CueCosts(words, limits)
    for c in cues:
        text = " ".join(w.text for w in words[c.first:c.last])
        assert " ".join(c.lines) == text and 1 <= len(c.lines) <= 2
        if c.last - c.first > 1:
            assert len(text) <= limits.max_chars
            assert words[c.last - 1].end - words[c.first].start <= limits.max_seconds
            assert all(len(line) <= limits.line_chars for line in c.lines)
    planned = [costs.cue(c.first, c.last) for c in cues]
    assert all(p is not None for p in planned)
    total = (sum(p[0] for p in planned if p), sum(p[1] for p in planned if p))
    best = _brute_force(words, limits)
    assert total[0] == best[0] and total[1] == pytest.approx(best[1])


def test_a_short_document_is_one_short_cue_and_lines_break_at_a_comma() -> None:
    words = [CueWord("Hi.", 0.0, 0.3, sentence_end=True)]
    assert plan_cues(words) == [Cue(0, 1, ("Hi.",))]
    line = [CueWord(t, k * 0.3, k * 0.3 + 0.25, clause=t.endswith(","))
            for k, t in enumerate("one two three four, five six seven eight nine".split())]
    cue, = plan_cues(line, CueLimits(line_chars=30))
    assert cue.lines == ("one two three four,", "five six seven eight nine")


def test_jsonl_sentences() -> None:
    rec = json.loads(_restore("jsonl"))
    assert rec["text"] == "A, b stop. C d stop. E."  # a final mark at the end
    assert rec["sentences"] == ["A, b stop.", "C d stop.", "E."]


def test_subtitles_need_times() -> None:
    docs = read_text(io.BytesIO(b"a b stop\n"), "in")
    with pytest.raises(PunctInputError, match="needs timed words"):
        write_segments(rule_restorer().restore_documents(docs), io.StringIO(), "srt")


def test_cli_srt_in_vtt_out(tmp_path: Path) -> None:
    exp = tmp_path / "exp"
    exp.mkdir()
    save_untrained({"family": "brnn", "label_set": "iwslt4", "featurizer": {"min_count": 1},
                    "model": {"hidden": 8}}, exp, 0, [seq(["hello", "world", "yes", "stop"])])
    src = tmp_path / "talk.srt"
    src.write_text(SRT, encoding="utf-8")
    out = tmp_path / "talk.vtt"
    assert restore_cli.main(["--exp-dir", str(exp), "--input-format", "srt", str(src),
                             "--output-format", "vtt", "-o", str(out), "--quiet"]) == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("WEBVTT\n\nNOTE talk\n\n1\n00:00:01.000 --> ")
    words = [w.strip(",.?").lower() for line in text.splitlines()[4:]
             if line and "-->" not in line and not line.isdigit() for w in line.split()]
    assert words == ["hello", "world", "what", "is", "it"]
    srt_out = tmp_path / "again.srt"
    assert restore_cli.main(["--exp-dir", str(exp), "--input-format", "srt", str(src),
                             "-o", str(srt_out), "--quiet"]) == 0
    assert srt_out.read_text(encoding="utf-8").startswith("1\n00:00:01,000 --> ")
