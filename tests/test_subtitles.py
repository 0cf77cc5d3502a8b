"""Subtitles: SRT/WebVTT readers, cues broken at restored sentence ends, JSONL sentences."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from helpers.rules import rule_restorer
from helpers.tiny import save_untrained, seq

from punct.bin import restore as restore_cli
from punct.data.timed import END_OF_DOCUMENT_PAUSE
from punct.errors import PunctInputError
from punct.infer.inputs import read_ctm, read_text
from punct.infer.outputs import write_segments
from punct.infer.stream import InputWord
from punct.infer.subtitles import format_time, parse_time, read_srt, read_vtt, wrap

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
    assert wrap(["aaa", "bb", "cccc", "d"], 7) == ["aaa bb", "cccc d"]


def _restore(fmt: str, **cues: float) -> str:
    docs = read_ctm(io.BytesIO(CTM.encode()), "in.ctm")
    out = io.StringIO()
    assert write_segments(rule_restorer().restore_documents(docs), out, fmt, cues=cues) == 1
    return out.getvalue()


def test_srt_cues_break_at_sentence_ends_hand_checked() -> None:
    assert _restore("srt") == (
        "1\n00:00:00,000 --> 00:00:01,700\nA, b stop.\n\n"
        "2\n00:00:01,800 --> 00:00:02,800\nC d stop.\n\n"
        "3\n00:00:02,900 --> 00:00:03,200\nE,\n\n")


def test_vtt_and_cue_limits_hand_checked() -> None:
    assert _restore("vtt", max_chars=6) == (
        "WEBVTT\n\nNOTE r1\n\n"
        "1\n00:00:00.000 --> 00:00:01.300\nA, b\n\n"
        "2\n00:00:01.400 --> 00:00:01.700\nstop.\n\n"
        "3\n00:00:01.800 --> 00:00:02.400\nC d\n\n"
        "4\n00:00:02.500 --> 00:00:02.800\nstop.\n\n"
        "5\n00:00:02.900 --> 00:00:03.200\nE,\n\n")
    short = _restore("srt", max_seconds=1.0)
    assert short.startswith("1\n00:00:00,000 --> 00:00:00,400\nA,\n\n"
                            "2\n00:00:01,000 --> 00:00:01,700\nb stop.\n\n")
    assert "\nC d\nstop.\n" in _restore("srt", line_chars=4)


def test_jsonl_sentences() -> None:
    rec = json.loads(_restore("jsonl"))
    assert rec["text"] == "A, b stop. C d stop. E,"
    assert rec["sentences"] == ["A, b stop.", "C d stop.", "E,"]


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
