"""Output a reader can trust: keep-case, word confidences, sentences, the progress bar."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from helpers.rules import rule_restorer
from helpers.tiny import tiny_brnn_exp

from punct.bin import restore as restore_cli
from punct.engine.symbols import cased_input, split_words
from punct.infer.casing import CaseKeeper, CaseStats, marked_case
from punct.infer.progress import InputShare, ProgressBar
from punct.infer.scores import confidence
from punct.infer.stream import Document, InputWord, Segment
from punct.wordtable import WordRow

# ----------------------------------------------------------------------------- keep-case


@pytest.mark.parametrize(("form", "marked"), [
    ("USA", True), ("iPhone", True), ("U.S.", True), ("McDonald", True), ("X-Men", True),
    ("Hello", False), ("hello", False), ("I", False), ("A", False), ("3D", False),
    ("😀", False)])
def test_marked_case(form: str, marked: bool) -> None:
    assert marked_case(form) is marked


def test_cased_split_keeps_case_and_an_abbreviation_period() -> None:
    text = "The U.S. and e.g. iPhone, McDonald's USA."
    assert split_words(text) == ["the", "u.s", "and", "e.g", "iphone", "mcdonald's", "usa"]
    with cased_input():
        assert split_words(text) == ["The", "U.S.", "and", "e.g.", "iPhone", "McDonald's", "USA"]


@pytest.mark.parametrize(("words", "cased"), [
    ("hello world how are you", False),             # nothing to keep
    ("HELLO WORLD HOW ARE YOU", False),             # a recogniser's capitals
    ("HELLO from the USA and more", True),        # 2 of 6 in capitals
    ("i bought an iPhone", True),
    ("I a", False)])                                # no word of two letters
def test_already_cased_rule(words: str, cased: bool) -> None:
    stats = CaseStats()
    for w in words.split():
        stats.add(w)
    assert stats.cased is cased


SENTENCE = "i bought an iPhone in the USA from McDonald and the U.S. army stop then it broke"


def test_keep_case_keeps_each_example_and_the_model_decides_the_rest() -> None:
    r = rule_restorer()
    kept = r.restore(SENTENCE, keep_case=True)
    assert kept == ("I bought an iPhone in the USA from McDonald and the U.S. army stop. "
                    "Then it broke.")
    assert r.restore(SENTENCE) == kept  # already cased: on by default
    assert r.restore(SENTENCE, keep_case=False) == (
        "I bought an iphone in the usa from mcdonald and the u.s army stop. Then it broke.")


def test_keep_case_leaves_the_model_input_and_marks_alone() -> None:
    r = rule_restorer()
    words = ["USA", "iPhone", "stop", "hello", "McDonald", "x"]
    kept = r.restore_words(words, keep_case=True, scores=True)
    plain = r.restore_words(words, keep_case=False, scores=True)
    assert [w.form for w in kept] == ["USA", "iPhone", "stop", "Hello", "McDonald", "x"]
    assert [w.form for w in plain] == ["Usa", "iphone", "stop", "Hello", "mcdonald", "x"]
    assert [w.punct for w in kept] == [w.punct for w in plain]
    assert [w.mark_probs for w in kept] == [w.mark_probs for w in plain]
    assert kept[0].word == "usa" and kept[0].cap == "ALL_CAPS"


def test_all_caps_input_is_cased_by_the_model_unless_forced() -> None:
    r = rule_restorer()
    assert r.restore("THE USA STOP THEN GO") == "The usa stop. Then go."
    assert r.restore("THE USA STOP THEN GO", keep_case=True) == "THE USA STOP. THEN GO."


def test_keep_case_passes_symbols_and_nonspeech_through() -> None:
    r = rule_restorer()
    text = "see https://Ex.com/A 😀 [noise] the NASA page stop"
    assert r.restore(text) == "See https://Ex.com/A 😀 [noise] the NASA page stop."


def test_an_abbreviation_period_is_not_doubled_at_a_sentence_end() -> None:
    keeper = CaseKeeper(True)
    doc = Document("d", [InputWord("the"), InputWord("U.S.")])
    seen = [w.word for w in next(iter(keeper.documents([doc]))).words]
    assert seen == ["the", "u.s"]  # what the model sees
    rows = [WordRow("d", 0, "the", "The", (), "FIRST_CAP"),
            WordRow("d", 1, "u.s", "u.s", ("PERIOD",), "O")]
    out = next(keeper.segments([Segment("d", rows)])).rows
    assert out[1].form == "U.S" and out[1].punct == ("PERIOD",)  # renders 'U.S.'
    with pytest.raises(RuntimeError, match="keep-case"):
        next(keeper.segments([Segment("d", rows[:1])]))


def test_documents_are_judged_lazily_on_what_was_read_so_far() -> None:
    keeper = CaseKeeper(None)
    docs = [Document("a", [InputWord(w) for w in "HELLO THERE".split()]),
            Document("b", [InputWord(w) for w in "i really like the USA a lot".split()]),
            Document("c", [InputWord(w) for w in "NASA rocks".split()])]
    for doc in keeper.documents(docs):
        list(doc.words)
    # in capitals so far: a: 2 of 2 words; b: 3 of 7; c: 4 of 9
    assert keeper.documents_kept == 2


def test_cli_keep_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exp = tiny_brnn_exp(tmp_path / "exp", ("the", "usa", "iphone"))
    src = tmp_path / "in.txt"
    src.write_text("the iPhone from the USA\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    assert restore_cli.main(["--exp-dir", str(exp), str(src), "-o", str(out)]) == 0
    words = [w.strip(",.?") for w in out.read_text(encoding="utf-8").split()]
    assert words[1] == "iPhone" and words[4] == "USA"
    assert "kept as written in 1 of 1 documents" in capsys.readouterr().err
    assert restore_cli.main(["--exp-dir", str(exp), str(src), "-o", str(out),
                             "--no-keep-case", "--quiet"]) == 0
    words = out.read_text(encoding="utf-8").split()
    assert {w.strip(",.?") for w in words[1:]} & {"iPhone", "USA"} == set()


# ----------------------------------------------------------------------------- scores


def test_restore_words_scores() -> None:
    r = rule_restorer()
    out = r.restore_words(["a", "b", "stop"], starts=[0.0, 1.0, 1.2], ends=[0.4, 1.1, 1.5],
                          scores=True)
    assert out[0].mark_probs == pytest.approx({"COMMA": 0.8, "PERIOD": 0.1, "QUESTION": 0.1})
    assert out[0].probability == pytest.approx(0.8)  # the comma, given at 0.8
    assert out[1].probability == pytest.approx(0.9)  # three marks left out at 0.1
    # the document's end is a long pause: the comma (0.8) lost to the period (0.9)
    assert out[2].punct == ("PERIOD",) and out[2].probability == pytest.approx(0.2)
    assert r.restore_words(["a"])[0].probability is None
    assert confidence({"COMMA": 0.45, "PERIOD": 0.02}, ()) == pytest.approx(0.55)
    assert confidence({}, ()) == 1.0


def test_jsonl_output_carries_the_same_scores() -> None:
    from punct.infer.inputs import read_jsonl
    from punct.infer.outputs import write_segments

    r = rule_restorer()
    line = (b'{"id": "x", "words": [{"word": "a", "start": 0, "end": 0.4}, {"word": '
            b'"[noise]", "start": 0.5, "end": 0.9}, {"word": "b", "start": 1, "end": 1.1}]}\n')
    out = io.StringIO()
    write_segments(r.restore_documents(read_jsonl(io.BytesIO(line), "x")), out, "jsonl")
    words = json.loads(out.getvalue())["words"]
    api = r.restore_words(["a", "[noise]", "b"], [0.0, 0.5, 1.0], [0.4, 0.9, 1.1], scores=True)
    assert [w.get("probability") for w in words] == [
        pytest.approx(w.probability) if w.probability is not None else None for w in api]
    assert "probs" not in words[1] and api[1].mark_probs is None


def test_restore_sentences() -> None:
    r = rule_restorer()
    assert r.restore_sentences("go stop then go stop now") == ["Go stop.", "Then go stop.", "Now."]
    assert r.restore_sentences(["a stop b", ""]) == [["A stop.", "B."], []]


# ----------------------------------------------------------------------------- progress


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_progress_bar_waits_redraws_in_place_and_ends_the_line() -> None:
    clock, err = Clock(), io.StringIO()
    bar = ProgressBar(err, tty=True, clock=clock)
    bar.update(10, 0, 0.1)
    assert err.getvalue() == ""  # a short run prints nothing
    clock.now = 2.0
    bar.update(1000, 1, 0.5)
    assert err.getvalue() == ("\rrestore: [############............]  50% 1,000 words, "
                              "500 words/s, 0:02 left")
    clock.now = 2.05
    bar.update(1100, 1, 0.55)  # within the redraw interval: nothing
    clock.now = 4.0
    bar.close(2000, 2, 1.0)
    assert err.getvalue().endswith("\rrestore: [########################] 100% 2,000 words, "
                                   "500 words/s, 0:00 left\n")
    assert bar.line(30, 2, None, 3.0) == "restore: 30 words, 2 documents, 10 words/s"
    quiet = ProgressBar(io.StringIO(), tty=True)
    quiet.close(5, 1)
    assert quiet.stream.getvalue() == ""


def test_progress_in_a_log_is_plain_lines() -> None:
    clock, err = Clock(), io.StringIO()
    bar = ProgressBar(err, tty=False, delay=0.0, clock=clock)
    bar.update(1, 0)
    clock.now = 1.0
    bar.update(2, 0)  # within the log interval
    bar.close(3, 1)
    assert err.getvalue().splitlines() == ["restore: 1 words, 0 documents, - words/s",
                                           "restore: 3 words, 1 documents, 3 words/s"]
    clock.now = 9.0
    bar.update(4, 2)
    bar.close(4, 2)  # nothing new since the last line: not repeated
    assert err.getvalue().splitlines()[2:] == ["restore: 4 words, 2 documents, 0 words/s"]


def test_input_share_follows_the_open_file(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"x" * 100)
    share = InputShare(200)
    with open(path, "rb") as fh:
        share.open(fh)
        fh.read(50)
        assert share.fraction() == 0.25
    share.close(100)
    assert share.fraction() == 0.5 and InputShare(None).fraction() is None


def test_cli_progress_only_when_asked_in_a_pipe(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    exp = tiny_brnn_exp(tmp_path / "exp")
    src = tmp_path / "in.txt"
    src.write_text("the yes stop\nyes the\n", encoding="utf-8")
    args = ["--exp-dir", str(exp), str(src), "-o", str(tmp_path / "out.txt")]
    assert restore_cli.main(args) == 0
    assert "restore: [" not in capsys.readouterr().err  # stderr is not a terminal
    assert restore_cli.main([*args, "--progress", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith("restore: [########################] 100% 5 words")
    assert "documents, 5 words in" not in err  # --quiet: no summary
