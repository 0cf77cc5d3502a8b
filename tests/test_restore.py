"""restore: input readers, the streaming engine (blocks, batching, order), writers, CLI."""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml
from helpers.rules import IWSLT, RuleModel, WordFeaturizer
from helpers.tiny import tiny_autopunct_exp

from punct.bin import restore as restore_cli
from punct.data.timed import END_OF_DOCUMENT_PAUSE
from punct.engine.decode import DecodeSettings, decide, predict_words
from punct.errors import PunctInputError
from punct.infer.inputs import read_ctm, read_jsonl, read_text, read_textgrid_doc
from punct.infer.outputs import write_segments
from punct.infer.stream import Document, InputWord, Restorer, Segment
from punct.models.base import WordSeq
from punct.wordtable import WordRow, read_word_table

# ----------------------------------------------------------------------------- readers


def _docs(reader, text: str, name: str = "in") -> list[tuple[str, list[InputWord], str | None]]:
    return [(d.doc_id, list(d.words), d.lang) for d in reader(io.BytesIO(text.encode()), name)]


def test_text_reader_one_document_per_line_marks_stripped() -> None:
    docs = _docs(read_text, "Hello, World!\n\nwhat is it\n")
    assert [d[0] for d in docs] == ["in:1", "in:2", "in:3"]
    assert [[w.word for w in d[1]] for d in docs] == [["hello", "world"], [], ["what", "is", "it"]]


def test_text_reader_bad_utf8_names_line() -> None:
    with pytest.raises(PunctInputError, match=r"in:2: invalid UTF-8"):
        list(read_text(io.BytesIO(b"fine\nbad \xff byte\n"), "in"))


def test_ctm_reader_groups_recordings_and_computes_pauses() -> None:
    ctm = ("r1 1 0.00 0.50 Hello\n"
           "r1 1 0.60 0.40 <sil>\n"
           "r1 1 1.20 0.30 world.\n"
           "r1 1 1.5005 0.20 again\n"  # overlaps the previous word by 0.5 ms: clipped to 0
           "r2 A 0.10 0.20 yes\n")
    docs = _docs(read_ctm, ctm)
    assert [d[0] for d in docs] == ["r1", "r2"]
    r1 = docs[0][1]
    assert [w.word for w in r1] == ["hello", "world", "again"]
    assert r1[0].pause_after == 0.7 and r1[1].pause_after == 0.0
    # the last word of a document: the end-of-document pause, as in training
    assert r1[2].pause_after == END_OF_DOCUMENT_PAUSE
    assert r1[1].start == 1.2 and r1[1].end == 1.5
    assert docs[1][1] == [InputWord("yes", 0.1, 0.3, END_OF_DOCUMENT_PAUSE)]


@pytest.mark.parametrize(("ctm", "line", "msg"), [
    ("r1 1 0 0.5\n", 1, "expected 5 or 6 fields"),
    ("r1 1 0 0.5 a\nr1 1 x 0.5 b\n", 2, "not a number"),
    ("r1 1 1.0 0.5 a\nr1 1 0.5 0.2 b\n", 2, "not in time order"),
    ("r1 1 0 0.5 a\nr2 1 0 0.5 b\nr1 1 1 0.5 c\n", 3, "appears again"),
])
def test_ctm_reader_errors_name_the_line(ctm: str, line: int, msg: str) -> None:
    with pytest.raises(PunctInputError, match=rf"in:{line}: .*{msg}"):
        _docs(read_ctm, ctm)


def test_ctm_reader_keeps_overlapping_asr_words(capsys: pytest.CaptureFixture) -> None:
    """Overlapping words (ASR output) pass through with a pause of 0 and a note on stderr."""
    docs = _docs(read_ctm, "r1 1 1.0 0.5 a\nr1 1 1.4 0.2 b\n")
    assert docs == [("r1", [InputWord("a", 1.0, 1.5, 0.0),
                            InputWord("b", 1.4, 1.6, END_OF_DOCUMENT_PAUSE)], None)]
    err = capsys.readouterr().err
    assert "in:2: recording r1: word 2 'b'" in err and "100.0 ms before word 1" in err


def test_ctm_reader_is_lazy() -> None:
    """The first word of a recording comes out before later lines are read."""
    read: list[int] = []

    def stream() -> Iterator[bytes]:
        for k, line in enumerate([b"r1 1 0 0.5 a\n", b"r1 1 1 0.5 b\n", b"r1 1 2 0.5 c\n"], 1):
            read.append(k)
            yield line

    doc = next(read_ctm(stream(), "s"))  # type: ignore[arg-type]
    words = iter(doc.words)
    assert next(words).word == "a" and read == [1, 2]  # one line of lookahead for the pause
    assert [w.word for w in words] == ["b", "c"] and read == [1, 2, 3]


def test_textgrid_reader_trailing_silence(tmp_path: Path) -> None:
    grid = tmp_path / "talk1.TextGrid"
    grid.write_text('File type = "ooTextFile"\nObject class = "TextGrid"\n\n0\n3\n<exists>\n1\n'
                    '"IntervalTier"\n"words"\n0\n3\n4\n0\n0.5\n"Hi"\n0.5\n1.0\n""\n'
                    '1.0\n2.0\n"there"\n2.0\n3\n""\n', encoding="utf-8")
    doc = read_textgrid_doc(grid)
    assert doc.doc_id == "talk1"
    assert list(doc.words) == [InputWord("hi", 0.0, 0.5, 0.5),
                               InputWord("there", 1.0, 2.0, END_OF_DOCUMENT_PAUSE)]


def test_jsonl_reader_text_and_timed_words() -> None:
    text = ('{"id": "a", "text": "Hello there.", "lang": "en"}\n'
            '\n'
            '{"words": [{"word": "one", "start": 0, "end": 0.4}, '
            '{"word": "two", "start": 1.0, "end": 1.2}]}\n'
            '{"id": 7, "words": ["x", "y"]}\n')
    docs = _docs(read_jsonl, text)
    assert [(d[0], d[2]) for d in docs] == [("a", "en"), ("in:3", None), ("7", None)]
    assert docs[1][1] == [InputWord("one", 0.0, 0.4, 0.6),
                          InputWord("two", 1.0, 1.2, END_OF_DOCUMENT_PAUSE)]
    assert [w.word for w in docs[2][1]] == ["x", "y"]
    for bad, msg in [("[1]", "JSON object"), ("{", "invalid JSON"),
                     ('{"words": [{"word": "a"}]}', "start"), ('{"id": 1}', "'text'")]:
        with pytest.raises(PunctInputError, match=f"in:1: .*{msg}"):
            _docs(read_jsonl, bad + "\n")


# ----------------------------------------------------------------------------- engine


SETTINGS = DecodeSettings(window=4, stride=2, batch_size=3, aggregate="mean", bf16=False,
                          threshold=0.5)


def _restorer(**kw: int) -> Restorer:
    return Restorer(RuleModel(), WordFeaturizer(), IWSLT, SETTINGS, "cpu", **kw)


def test_restorer_rules_casing_and_pauses() -> None:
    docs = [Document("d1", [InputWord("a"), InputWord("stop"), InputWord("b"),
                            InputWord("c", 0.0, 0.1, 0.9), InputWord("d")]),
            Document("d2", []),
            Document("d3", [InputWord("x")])]
    segs = list(_restorer().restore(docs))
    assert [(s.doc_id, s.first, s.last) for s in segs] == [("d1", True, True),
                                                          ("d2", True, True), ("d3", True, True)]
    out = io.StringIO()
    assert write_segments(segs, out, "text") == 3
    # the document rules give every document a final mark (PERIOD wins the tie)
    assert out.getvalue() == "A stop. B c, d.\n\nX.\n"
    row = segs[0].rows[3]
    assert row == WordRow("d1", 3, "c", "c", ("COMMA",), "O", 0.0, 0.1, 0.9)


def _long_doc(n: int, doc_id: str = "long") -> Iterator[InputWord]:
    for i in range(n):
        yield InputWord("stop" if i % 7 == 6 else "then" if i % 5 == 0 else "w",
                        None, None, 1.0 if i % 11 == 10 else None)


def test_long_document_blocks_equal_whole_document_decoding() -> None:
    """Cutting a long document into blocks (with context) keeps every word once, in
    order, with its own pause; for a model without long-range context the decisions are
    exactly those of decoding the whole document at once."""
    n = 103
    words = list(_long_doc(n))
    seq = WordSeq("long", [w.word for w in words],
                  np.array([np.nan if w.pause_after is None else w.pause_after for w in words]),
                  np.zeros((n, 3)), np.zeros(n, dtype=np.int64))
    pred = predict_words(RuleModel(), WordFeaturizer(), [seq], 4, 2)
    marks, caps = decide(pred, [seq], IWSLT.labels)
    restorer = _restorer(batch_words=25, block_words=10, context_words=4)
    segs = list(restorer.restore([Document("long", _long_doc(n)),
                                  Document("short", [InputWord("stop")])]))
    long_segs = [s for s in segs if s.doc_id == "long"]
    # blocks of 10 words while 14 (block + context) are pending: 9 blocks, then the last 13
    assert [len(s.rows) for s in long_segs] == [10] * 9 + [13]
    assert long_segs[0].first and not long_segs[0].last
    assert long_segs[-1].last and not any(s.first for s in long_segs[1:])
    rows = [r for s in long_segs for r in s.rows]
    assert [r.idx for r in rows] == list(range(n))
    assert [r.punct for r in rows] == [
        tuple(lab for lab, on in zip(IWSLT.labels, m, strict=True) if on) for m in marks]
    assert [r.cap for r in rows] == [["O", "FIRST_CAP", "ALL_CAPS"][c] for c in caps]
    assert segs[-1].doc_id == "short" and segs[-1].rows[0].form == "Stop"


def test_blocks_with_nonspeech_tokens_keep_each_word_its_scores() -> None:
    """Non-speech tokens spread over a long document cut into blocks: each speech row
    gets the marks and probabilities of its word in a decoding of the speech words as
    one document, and each non-speech row none."""
    speech_words = list(_long_doc(103))
    words: list[InputWord] = []
    for i, w in enumerate(speech_words):
        if i % 6 == 2 or i in (0, 102):  # at a block's edge too, and at both ends
            words.append(InputWord("[noise]", None, None, None, True))
        words.append(w)
    words.append(InputWord("<breath>", None, None, None, True))
    n = len(speech_words)
    seq = WordSeq("long", [w.word for w in speech_words],
                  np.array([np.nan if w.pause_after is None else w.pause_after
                            for w in speech_words]),
                  np.zeros((n, 3)), np.zeros(n, dtype=np.int64))
    pred = predict_words(RuleModel(), WordFeaturizer(), [seq], 4, 2)
    marks, _ = decide(pred, [seq], IWSLT.labels)
    restorer = _restorer(batch_words=25, block_words=10, context_words=4)
    segs = list(restorer.restore([Document("long", iter(words))]))
    assert len(segs) > 5 and restorer.words_done == n
    rows = [r for s in segs for r in s.rows]
    probs = [p for s in segs for p in (s.probs or [])]
    assert [r.idx for r in rows] == list(range(len(words))) and len(probs) == len(rows)
    speech = [k for k, w in enumerate(words) if not w.nonspeech]
    for k, w in enumerate(words):
        if w.nonspeech:
            assert probs[k] is None and rows[k].punct == () and rows[k].form == w.word
    assert [rows[k].punct for k in speech] == [
        tuple(lab for lab, on in zip(IWSLT.labels, m, strict=True) if on) for m in marks]
    got = np.array([[probs[k][lab] for lab in IWSLT.labels] for k in speech])
    assert np.array_equal(got, pred.punct)
    again = list(_restorer(batch_words=25, block_words=10, context_words=4).restore(
        [Document("long", iter(words))]))
    assert again == segs and again[0].scores is not segs[0].scores
    changed = dataclasses.replace(segs[1].scores, values=segs[1].scores.values + 1e-3)
    assert again[1] != Segment(segs[1].doc_id, segs[1].rows, segs[1].first, segs[1].last,
                               changed)


def test_unbounded_document_is_processed_in_bounded_memory() -> None:
    """Words come out long before the (very long) input ends; the buffer stays small."""
    consumed = 0

    def endless() -> Iterator[InputWord]:
        nonlocal consumed
        while True:
            consumed += 1
            yield InputWord("w")

    segs = _restorer(batch_words=50, block_words=20, context_words=4).restore(
        [Document("inf", endless())])
    first = next(segs)
    assert first.first and not first.last and len(first.rows) == 20
    assert consumed <= 50 + 20 + 4 + 1
    for _ in range(30):
        next(segs)
    assert consumed <= 31 * 20 + 50 + 20 + 4 + 1


def test_writers_jsonl_kaldi_table() -> None:
    rows = [WordRow("d", 0, "hi", "Hi", ("COMMA",), "FIRST_CAP", 0.0, 0.5, 0.2),
            WordRow("d", 1, "you", "you", ("PERIOD",), "O", None, None, None)]
    segs = [Segment("d", rows[:1], True, False), Segment("d", rows[1:], False, True)]
    out = io.StringIO()
    write_segments(segs, out, "kaldi")
    assert out.getvalue() == "d Hi, you.\n"
    out = io.StringIO()
    write_segments(segs, out, "jsonl")
    rec = json.loads(out.getvalue())
    assert rec["id"] == "d" and rec["text"] == "Hi, you."
    assert rec["words"][0] == {"word": "hi", "form": "Hi", "punct": ["COMMA"], "cap": "FIRST_CAP",
                               "start": 0.0, "end": 0.5, "pause_after": 0.2}
    out = io.StringIO()
    write_segments(segs, out, "table")
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("utt_id\tidx\tword") and lines[1] == (
        "d\t0\thi\tHi\tCOMMA\tFIRST_CAP\t0.000\t0.500\t0.200")
    assert lines[2] == "d\t1\tyou\tyou\tPERIOD\tO\t\t\t"


# ----------------------------------------------------------------------------- CLI


@pytest.fixture(scope="module")
def tiny_exp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An untrained AutoPunct system over a tiny random BERT (the plumbing is what counts)."""
    words = ("hello", "world", "what", "is", "it")
    return tiny_autopunct_exp(tmp_path_factory.mktemp("restore"), words, bf16="auto")


def test_restore_cli_text_and_formats(tiny_exp: Path, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.txt"
    src.write_text("hello world what is it\n\nIt is. Hello!\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    rc = restore_cli.main(["--exp-dir", str(tiny_exp), str(src), "-o", str(out),
                           "--num-threads", "1"])
    assert rc == 0 and "3 documents, 8 words" in capsys.readouterr().err
    lines = out.read_text(encoding="utf-8").split("\n")
    assert len(lines) == 4 and lines[1] == "" and lines[3] == ""
    assert lines[0].lower().replace(",", "").replace(".", "").replace("?", "").split() == [
        "hello", "world", "what", "is", "it"]
    table = tmp_path / "out.tsv"
    rc = restore_cli.main(["--exp-dir", str(tiny_exp), str(src), "-o", str(table),
                           "--output-format", "table", "--per-token", "2", "--quiet"])
    assert rc == 0
    utts = read_word_table(table)
    assert list(utts) == [f"{src}:1", f"{src}:3"]
    assert [r.word for r in utts[f"{src}:3"]] == ["it", "is", "hello"]


def test_restore_cli_ctm_gives_pauses_and_blocks(tiny_exp: Path, tmp_path: Path) -> None:
    ctm = tmp_path / "a.ctm"
    words = ["hello", "world", "what", "is", "it"] * 8
    ctm.write_text("".join(f"rec1 1 {i * 0.5:.2f} 0.30 {w}\n" for i, w in enumerate(words)),
                   encoding="utf-8")
    args = ["--exp-dir", str(tiny_exp), str(ctm), "--input-format", "ctm",
            "--output-format", "jsonl", "--quiet", "--bf16", "off"]
    whole, blocks = tmp_path / "whole.jsonl", tmp_path / "blocks.jsonl"
    assert restore_cli.main([*args, "-o", str(whole)]) == 0
    assert restore_cli.main([*args, "-o", str(blocks), "--block-words", "7",
                             "--context-words", "16", "--batch-words", "10"]) == 0
    rec = json.loads(whole.read_text(encoding="utf-8"))
    assert rec["id"] == "rec1" and len(rec["words"]) == 40
    assert rec["words"][0]["pause_after"] == pytest.approx(0.2)
    assert rec["words"][-1]["pause_after"] == END_OF_DOCUMENT_PAUSE
    in_blocks = json.loads(blocks.read_text(encoding="utf-8"))
    assert in_blocks["id"] == "rec1"
    keys = ("word", "start", "end", "pause_after")
    assert [{k: w[k] for k in keys} for w in in_blocks["words"]] == [
        {k: w[k] for k in keys} for w in rec["words"]]


def test_restore_cli_errors(tiny_exp: Path, tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    assert restore_cli.main(["--exp-dir", str(tiny_exp), str(tmp_path / "nope.txt")]) == 2
    assert "nope.txt" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "text": "ok"}\n{"id": \n', encoding="utf-8")
    assert restore_cli.main(["--exp-dir", str(tiny_exp), str(bad), "--input-format",
                             "jsonl", "--quiet"]) == 1
    assert f"{bad}:2: invalid JSON" in capsys.readouterr().err
    assert restore_cli.main(["--exp-dir", str(tmp_path / "noexp"), "-"]) == 2
    cfg = yaml.safe_load((tiny_exp / "config.yaml").read_text())
    assert cfg["decode"]["bf16"] == "auto"
