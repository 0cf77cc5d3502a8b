"""restore's readers of ESPnet decode outputs: text (kaldi), hyp.trn, CTC segments."""

from __future__ import annotations

import io

import pytest

from punct.data.timed import END_OF_DOCUMENT_PAUSE
from punct.errors import PunctInputError
from punct.infer.espnet_inputs import read_ctc_segments, read_kaldi_text, read_trn
from punct.infer.stream import InputWord


def docs(reader, text: str, name: str = "f") -> list[tuple[str, list[InputWord]]]:
    return [(d.doc_id, list(d.words)) for d in reader(io.BytesIO(text.encode()), name)]


def words(doc: tuple[str, list[InputWord]]) -> list[str]:
    return [w.word for w in doc[1]]


# ----------------------------------------------------------------------------- text


def test_kaldi_text_one_document_per_utterance() -> None:
    got = docs(read_kaldi_text, "spk1-utt1 HELLO WORLD\nspk1-utt2\nspk2-utt1 it's, fine\n")
    assert [d[0] for d in got] == ["spk1-utt1", "spk1-utt2", "spk2-utt1"]
    assert [words(d) for d in got] == [["hello", "world"], [], ["it's", "fine"]]
    assert all(w.start is None and w.pause_after is None for d in got for w in d[1])


@pytest.mark.parametrize(("text", "where", "what"), [
    ("u1 a\n\nu2 b\n", "f:2", "empty line"),
    ("u1 a\nu2 b\nu1 c\n", "f:3", "'u1' appears again .first on line 1"),
    ("u1 a\nu2 \xff\n", "f:2", "invalid UTF-8"),
])
def test_kaldi_text_bad_lines_name_file_and_line(text: str, where: str, what: str) -> None:
    raw = text.encode("utf-8").replace("\xff".encode(), b"\xff")
    with pytest.raises(PunctInputError, match=f"^{where}: .*{what}"):
        list(read_kaldi_text(io.BytesIO(raw), "f"))


# ----------------------------------------------------------------------------- hyp.trn


def test_trn_reads_id_suffix() -> None:
    trn = ("HELLO WORLD\t(spk1-spk1-utt1)\n"
           "\n"
           "\t(spk1-spk1-utt2)\n"
           "what (is) it (spk2-utt3)  \n")
    got = docs(read_trn, trn)
    assert [d[0] for d in got] == ["spk1-spk1-utt1", "spk1-spk1-utt2", "spk2-utt3"]
    # only the last parenthesised group is the id (other symbols pass through)
    assert [words(d) for d in got] == [["hello", "world"], [], ["what", "(is)", "it"]]


@pytest.mark.parametrize(("text", "where", "what"), [
    ("a b (u1)\nno id here\n", "f:2", "expected '<word> ... .<utt-id>.', found 'no id here'"),
    ("a b ()\n", "f:1", "expected"),
    ("a b (u1)\nc (u1)\n", "f:2", "'u1' appears again"),
    ("h e <space> t h e r e (u1)\n", "f:1", "character-level trn"),
])
def test_trn_bad_lines_name_file_and_line(text: str, where: str, what: str) -> None:
    with pytest.raises(PunctInputError, match=f"^{where}: .*{what}"):
        list(read_trn(io.BytesIO(text.encode()), "f"))


# ----------------------------------------------------------------------------- segments


SEGMENTS = ("rec1_0000 rec1 0.26 1.10 -0.2514 HELLO WORLD\n"
            "rec1_0001 rec1 1.60 2.00 -0.9000 AGAIN\n"
            "rec2_0000 rec2 0.00 0.50 -0.1000 YES\n")


def test_ctc_segments_one_document_per_recording_with_pauses() -> None:
    got = docs(read_ctc_segments, SEGMENTS)
    assert [d[0] for d in got] == ["rec1", "rec2"]
    rec1 = got[0][1]
    assert words(got[0]) == ["hello", "world", "again"]
    # the two words of the first segment share its span by length, contiguously
    assert rec1[0].start == pytest.approx(0.26) and rec1[0].end == pytest.approx(0.68)
    assert rec1[1].start == pytest.approx(0.68) and rec1[1].end == pytest.approx(1.10)
    assert rec1[0].pause_after == 0.0
    assert rec1[1].pause_after == pytest.approx(0.5)  # 1.60 - 1.10: between segments
    assert rec1[2].pause_after == END_OF_DOCUMENT_PAUSE
    assert got[1][1] == [InputWord("yes", 0.0, 0.5, END_OF_DOCUMENT_PAUSE)]


@pytest.mark.parametrize(("text", "where", "what"), [
    ("u rec1 0.0 1.0 -0.1 a\nu2 rec1 1.0 2.0 -0.2\n", "f:2", "found 5 fields.*print_utt_text"),
    ("u rec1 0.0 x -0.1 a\n", "f:1", "end time 'x' is not a number"),
    ("u rec1 0.0 1.0 HELLO there\n", "f:1", "score 'HELLO' is not a number"),
    ("u rec1 0.0 inf -0.1 a\n", "f:1", "not a finite number"),
    ("u rec1 2.0 1.0 -0.1 a\n", "f:1", "bad segment times"),
    ("u rec1 -1.0 1.0 -0.1 a\n", "f:1", "bad segment times"),
    ("u rec1 2.0 3.0 -0.1 a\nv rec1 1.0 1.5 -0.1 b\n", "f:2", "not in time order"),
    ("u r1 0 1 -0.1 a\nv r2 0 1 -0.1 b\nw r1 1 2 -0.1 c\n", "f:3", "'r1' appears again"),
])
def test_ctc_segments_bad_lines_name_file_and_line(text: str, where: str, what: str) -> None:
    with pytest.raises(PunctInputError, match=f"^{where}: .*{what}"):
        list(read_ctc_segments(io.BytesIO(text.encode()), "f"))
