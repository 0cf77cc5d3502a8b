"""Non-speech and annotation tokens: the map, stage 1 parsing, file aligners, restore
pass-through and the scorer all follow one ``punct.data.nonspeech`` map."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from helpers.rules import rule_restorer
from helpers.tiny import tiny_brnn_exp

from punct.align.base import AlignRequest, get_aligner, speech_request
from punct.bin import restore as restore_cli
from punct.bin import score as score_cli
from punct.data.nonspeech import available_maps, load_nonspeech_map, read_nonspeech_map
from punct.data.timed import END_OF_DOCUMENT_PAUSE, pauses
from punct.engine.symbols import split_words, tally
from punct.errors import MissingDataError, PunctInputError
from punct.infer.inputs import read_ctm, read_jsonl, read_text
from punct.infer.outputs import write_segments
from punct.labels import normalise_text, parse_text, render
from punct.score.metrics import score_tables
from punct.wordtable import WordRow, render_rows, rows_from_text, write_word_table

# ----------------------------------------------------------------------------- the map


def test_shipped_maps_and_classes() -> None:
    assert {"default", "babel"} <= set(available_maps())
    default = load_nonspeech_map()
    assert default is load_nonspeech_map("default") and default.name == "default"
    for tok in ("[noise]", "[NOISE]", "[laughter]", "<vocnoise>", "[adif]", "<breath>",
                "<sil>", "!sil", "<cough>"):
        assert default.is_nonspeech(tok), tok
    for tok in ("<unk>", "(())", "hello", "uh", "[a b]", "(ok)", "~", "sp"):
        assert not default.is_nonspeech(tok), tok
    assert default.is_unintelligible("<unk>") and default.is_unintelligible("(())")
    babel = load_nonspeech_map("babel")
    for tok in ("<no-speech>", "<hes>", "<breath>", "<lipsmack>", "<dtmf>", "<sta>",
                "<foreign>", "<prompt>", "~", "<male-to-female>"):
        assert babel.is_nonspeech(tok), tok
    assert not babel.is_nonspeech("(())") and babel.is_unintelligible("((word))")
    assert babel.split_nonspeech(["<breath>", "a", "~", "(())", "<hes>", "b"]) == (
        ["a", "(())", "b"], [(0, "<breath>"), (1, "~"), (2, "<hes>")])


def test_map_from_a_path_and_precedence(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("nonspeech: ['<x>']\nunintelligible: ['<unk>', '{?}']\n"
                    "patterns: ['<.*>', '\\{.*\\}']\n", encoding="utf-8")
    m = load_nonspeech_map(str(path))
    assert m.name == "mine"
    assert m.is_nonspeech("<x>") and m.is_nonspeech("<anything>") and m.is_nonspeech("{a}")
    # exact unintelligible tokens win over the patterns
    assert not m.is_nonspeech("<unk>") and not m.is_nonspeech("{?}")


@pytest.mark.parametrize(("text", "line", "msg"), [
    ("nonspeech: ['<x>']\nsilence: ['<s>']\n", 2, "unknown key 'silence'"),
    ("nonspeech: ['<x>']\npatterns: ['(']\n", 2, "invalid regular expression '\\('"),
    ("nonspeech: '<x>'\n", 1, "'nonspeech' must be a list"),
    ("nonspeech: ['<x>']\nunintelligible: ['<X>']\n", 2, "listed as nonspeech and as"),
    ("nonspeech: [<x>\n", 2, "invalid YAML"),
])
def test_bad_maps_name_file_and_line(tmp_path: Path, text: str, line: int, msg: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PunctInputError, match=rf"bad.yaml:{line}: .*{msg}"):
        read_nonspeech_map(path)


def test_unknown_map_name_is_missing_data() -> None:
    with pytest.raises(MissingDataError, match=r"unknown non-speech map 'nope'.*babel"):
        load_nonspeech_map("nope")


# ----------------------------------------------------------------------------- stage 1


def test_marks_around_nonspeech_tokens_go_to_the_neighbouring_words() -> None:
    toks = parse_text("Hello <breath>, world [noise]. ¿<hes> Vienes? [laughter]!",
                      nonspeech="babel")
    assert [(t.form, t.punct) for t in toks] == [
        ("Hello", ("COMMA",)), ("world", ("PERIOD",)), ("Vienes", ("OPEN_QUES", "QUESTION",
                                                                     "EXCLAMATION"))]
    # the mark written after a non-speech token belongs to the word before it
    assert normalise_text("yes [noise] , no") == normalise_text("yes, no") == "yes, no"


def test_unintelligible_tokens_stay_words_and_render_back() -> None:
    text = "I said (()) twice, <unk> (()). Done"
    toks = parse_text(text)
    assert [t.word for t in toks] == ["i", "said", "(())", "twice", "<unk>", "(())", "done"]
    assert toks[5].punct == ("PERIOD",) and toks[2].cap == "O"
    assert render(toks) == text and render(parse_text(render(toks))) == text


def test_word_table_rows_leave_nonspeech_out() -> None:
    rows = rows_from_text("u1", "<breath> Hi ~ there, [noise] you.", nonspeech="babel")
    assert [(r.idx, r.word, r.punct) for r in rows] == [
        (0, "hi", ()), (1, "there", ("COMMA",)), (2, "you", ("PERIOD",))]
    assert render_rows(rows) == "Hi there, you."
    with pytest.raises(PunctInputError, match=r"t.txt:4: empty utterance 'u2' \(only non-speech"):
        rows_from_text("u2", "<no-speech> ~", "t.txt", 4, nonspeech="babel")
    # the default map knows no "~": a corpus with BABEL conventions must say --nonspeech babel
    with pytest.raises(PunctInputError, match=r"t.txt:5: unknown punctuation mark '~'"):
        rows_from_text("u3", "hi ~ there", "t.txt", 5)
    with pytest.raises(PunctInputError, match="unknown punctuation mark '\\('"):
        rows_from_text("u4", "hello (world)")


# ----------------------------------------------------------------------------- aligners


def test_file_aligners_drop_nonspeech_and_its_time_becomes_pause(tmp_path: Path) -> None:
    wav = tmp_path / "r1.wav"
    sf.write(wav, np.zeros(16000 * 3, dtype=np.int16), 16000)
    ctm = tmp_path / "all.ctm"
    ctm.write_text("r1 1 0.10 0.40 hello\n"
                   "r1 1 0.50 0.60 [noise]\n"
                   "r1 1 1.20 0.30 <breath>\n"
                   "r1 1 1.60 0.40 world\n", encoding="utf-8")
    req = AlignRequest("r1", ("hello", "world"), str(wav))
    result = get_aligner("ctm", source=str(ctm)).align(req)
    assert result is not None
    assert [(w.word, w.start, w.end) for w in result.words] == [
        ("hello", 0.1, 0.5), ("world", 1.6, 2.0)]
    assert pauses(result.words) == [1.1, END_OF_DOCUMENT_PAUSE]  # [noise] + <breath> inside
    # a request built from a raw transcript is stripped the same way
    raw = AlignRequest("r1", ("hello", "[noise]", "<breath>", "world"), str(wav))
    assert speech_request(raw).words == ("hello", "world")
    assert speech_request(req) is req


# ----------------------------------------------------------------------------- restore


def _docs(reader, text: str) -> list:
    return [(d.doc_id, list(d.words)) for d in reader(io.BytesIO(text.encode()), "in")]


def test_readers_flag_nonspeech_and_pauses_span_it() -> None:
    with tally() as counter:
        docs = _docs(read_text, "Hello <breath>, world [noise].\n")
    words = docs[0][1]
    assert [(w.word, w.nonspeech) for w in words] == [
        ("hello", False), ("<breath>", True), ("world", False), ("[noise]", True)]
    assert counter.nonspeech == 2 and counter.words == 0  # not counted as foreign symbols
    assert "2 non-speech tokens (default map) passed through" in counter.message()
    ctm = ("r1 1 0.00 0.50 Hello\n"
           "r1 1 0.60 0.40 [noise]\n"
           "r1 1 1.20 0.30 world\n"
           "r1 1 1.60 0.20 <breath>\n")
    words = _docs(read_ctm, ctm)[0][1]
    assert [(w.word, w.nonspeech, w.pause_after) for w in words] == [
        ("hello", False, 0.7), ("[noise]", True, None), ("world", False, END_OF_DOCUMENT_PAUSE),
        ("<breath>", True, None)]
    assert (words[1].start, words[1].end) == (0.6, 1.0)
    rec = {"id": "a", "words": [{"word": "<hes>", "start": 0, "end": 0.3},
                                {"word": "hi", "start": 0.4, "end": 0.6},
                                {"word": "<hes>", "start": 0.7, "end": 1.0},
                                {"word": "there", "start": 1.2, "end": 1.5}]}
    with tally("babel"):
        words = _docs(read_jsonl, json.dumps(rec) + "\n")[0][1]
    assert [(w.word, w.nonspeech, w.pause_after) for w in words] == [
        ("<hes>", True, None), ("hi", False, 0.6), ("<hes>", True, None),
        ("there", False, END_OF_DOCUMENT_PAUSE)]
    assert split_words("<unk> (()) said") == ["<unk>", "(())", "said"]  # words


def test_restore_passes_nonspeech_through_unpunctuated() -> None:
    """The rule model puts a PERIOD after 'stop' and a COMMA before a pause > 0.5 s; a
    non-speech token between two words changes neither decision."""
    r = rule_restorer()
    assert r.restore("a stop [noise] b then c") == "A stop. [noise] B then c."
    assert r.restore("a stop b then c") == "A stop. B then c."
    assert r.restore("<breath> [noise]") == "<breath> [noise]"
    words = r.restore_words(["a", "[noise]", "b", "stop"], starts=[0.0, 0.3, 0.9, 1.2],
                            ends=[0.2, 0.8, 1.1, 1.4])
    assert [(w.text, w.pause_after) for w in words] == [
        ("A,", 0.7), ("[noise]", None), ("b", 0.1), ("stop.", END_OF_DOCUMENT_PAUSE)]
    assert r.symbols.nonspeech == 4  # the running total of the calls above
    babel = rule_restorer(nonspeech="babel")
    assert babel.restore("a ~ stop") == "A ~ stop."
    assert rule_restorer().restore("a (()) stop") == "A (()) stop."


def test_restore_outputs_keep_nonspeech_rows() -> None:
    r = rule_restorer()
    segs = list(r.restore_documents(_doc_stream("x <breath> stop")))
    out = io.StringIO()
    write_segments(segs, out, "table")
    lines = out.getvalue().splitlines()
    assert lines[2].split("\t")[2:6] == ["<breath>", "<breath>", "O", "O"]


def _doc_stream(text: str):
    with tally():
        return list(read_text(io.BytesIO(text.encode()), "in"))


def test_restore_cli_reports_nonspeech_on_stderr(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    exp = tiny_brnn_exp(tmp_path / "exp")
    src = tmp_path / "in.txt"
    src.write_text("the <hes> yes ~ stop [noise]\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    assert restore_cli.main(["--exp-dir", str(exp), str(src), "-o", str(out),
                             "--nonspeech", "babel"]) == 0
    err = capsys.readouterr().err
    assert "restore: 3 non-speech tokens (babel map) passed through, not punctuated" in err
    assert "1 documents, 3 words" in err
    tokens = out.read_text(encoding="utf-8").split()
    assert tokens[1] == "<hes>" and tokens[3] == "~" and tokens[5] == "[noise]"
    assert restore_cli.main(["--exp-dir", str(exp), str(src), "--nonspeech", "nope"]) == 2


# ----------------------------------------------------------------------------- scorer


def _rows(utt: str, spec: list[tuple[str, tuple[str, ...]]]) -> list[WordRow]:
    return [WordRow(utt, i, w.lower(), w, p, "O") for i, (w, p) in enumerate(spec)]


def test_scorer_aligns_on_speech_words(tmp_path: Path) -> None:
    ref = {"u": _rows("u", [("a", ("COMMA",)), ("b", ()), ("c", ("PERIOD",))])}
    hyp_plain = {"u": _rows("u", [("a", ("COMMA",)), ("b", ("COMMA",)), ("c", ("PERIOD",))])}
    hyp_ns = {"u": _rows("u", [("<breath>", ()), ("a", ("COMMA",)), ("[noise]", ()),
                               ("b", ("COMMA",)), ("c", ("PERIOD",)), ("<hes>", ())])}
    plain = score_tables(ref, hyp_plain, "full13")["all"]
    with_ns = score_tables(ref, hyp_ns, "full13")["all"]
    assert with_ns == plain and plain["words"] == 3
    assert plain["micro_f1"] == pytest.approx(0.8)  # 2 TP, 1 FP
    write_word_table(tmp_path / "ref.tsv", ref)
    write_word_table(tmp_path / "hyp.tsv", hyp_ns)
    out = tmp_path / "scores.json"
    assert score_cli.main(["--ref", str(tmp_path / "ref.tsv"), "--hyp",
                           str(tmp_path / "hyp.tsv"), "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["counts"]["words"] == 3 and doc["metrics"]["all"]["micro_f1"] == pytest.approx(0.8)
    # unmapped tokens are words: with a map that does not know <hes>, the tables differ
    # (strict: an error; else <hes> is an inserted word)
    mine = tmp_path / "mine.yaml"
    mine.write_text("nonspeech: ['<breath>', '[noise]']\n", encoding="utf-8")
    with pytest.raises(PunctInputError, match="hypothesis has '<hes>'"):
        score_tables(ref, hyp_ns, "full13", nonspeech=str(mine), strict=True)
    aligned = score_tables(ref, hyp_ns, "full13", nonspeech=str(mine))["all"]
    assert aligned["asr"]["ins"] == 1 and aligned["words"] == 4
