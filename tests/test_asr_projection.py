"""Word alignment (punct.data.word_align), label projection (punct.data.projection) and
``punct project-labels``: each convention of docs/ASR.md, timings, formats and errors."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from punct import __main__ as punct_main
from punct.bin import project_labels
from punct.data import word_align
from punct.data.projection import hyp_rows, project_table, project_utterance
from punct.data.timed import END_OF_DOCUMENT_PAUSE, TimedWord
from punct.data.word_align import align_words, edit_counts
from punct.errors import PunctInputError
from punct.wordtable import WordRow, read_word_table, rows_from_text, write_word_table

ROOT = Path(__file__).resolve().parents[1]


def ops(ref: str, hyp: str) -> list[tuple[str, int | None, int | None]]:
    return [(p.op, p.ref, p.hyp) for p in align_words(ref.split(), hyp.split())]


def project(ref_text: str, hyp: str) -> list[tuple[str, str, str]]:
    """(form, punct, cap) of each hypothesis word after projection."""
    got = project_utterance(rows_from_text("u", ref_text), hyp_rows("u", hyp.split()))
    return [(r.form, "|".join(r.punct) or "O", r.cap) for r in got.rows]


def levenshtein(a: list[str], b: list[str]) -> int:
    """Textbook edit distance (the check of the vectorised DP)."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


# ---------------------------------------------------------------- alignment


def test_identical_words_all_match_case_insensitive():
    assert ops("the cat sat", "The CAT sat") == [("match", 0, 0), ("match", 1, 1),
                                                 ("match", 2, 2)]


def test_counts_and_wer_hand_computed():
    # ref: a b c d e f (6); hyp: a x c e f g -> b/x sub, d del, g ins: WER 3/6
    pairs = align_words("a b c d e f".split(), "a x c e f g".split())
    assert [(p.op, p.ref, p.hyp) for p in pairs] == [
        ("match", 0, 0), ("sub", 1, 1), ("match", 2, 2), ("del", 3, None),
        ("match", 4, 3), ("match", 5, 4), ("ins", None, 5)]
    c = edit_counts(pairs)
    assert (c.matches, c.sub, c.dels, c.ins) == (4, 1, 1, 1)
    assert c.wer == 0.5 and c.ref_words == 6 and c.hyp_words == 6
    assert c.as_dict() == {"wer": 0.5, "sub": 1, "del": 1, "ins": 1, "ref_words": 6,
                           "hyp_words": 6}


def test_equal_cost_prefers_matches():
    # two substitutions and del + match + ins both cost 2: the match wins
    assert ops("a b", "c a") == [("ins", None, 0), ("match", 0, 1), ("del", 1, None)]


def test_substitution_beats_deletion_plus_insertion():
    assert ops("a b c", "a x c") == [("match", 0, 0), ("sub", 1, 1), ("match", 2, 2)]


def test_tie_deletions_come_last_in_a_run():
    assert ops("the the cat", "the cat") == [("match", 0, 0), ("del", 1, None),
                                             ("match", 2, 1)]
    assert ops("a x w b", "a y b") == [("match", 0, 0), ("sub", 1, 1), ("del", 2, None),
                                       ("match", 3, 2)]


def test_tie_insertions_come_first_in_a_run():
    assert ops("a b c", "a x y c") == [("match", 0, 0), ("ins", None, 1), ("sub", 1, 2),
                                       ("match", 2, 3)]


def test_empty_sides():
    assert ops("a b", "") == [("del", 0, None), ("del", 1, None)]
    assert ops("", "a") == [("ins", None, 0)]
    assert edit_counts(align_words([], ["a"])).wer is None


def test_too_long_utterance_is_an_error(monkeypatch):
    monkeypatch.setattr(word_align, "MAX_CELLS", 100)
    assert len(align_words(["a"] * 9, ["a"] * 9)) == 9  # 10 x 10 cells: at the limit
    with pytest.raises(PunctInputError, match=r"utterance u7: 10 reference x 9 hypothesis"):
        align_words(["a"] * 10, ["a"] * 9, what="utterance u7", path="h.ctm")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from("abcd"), max_size=12), st.lists(st.sampled_from("abcd"),
                                                                max_size=12))
def test_alignment_is_a_minimum_edit_path(ref, hyp):
    pairs = align_words(ref, hyp)
    assert [p.ref for p in pairs if p.ref is not None] == list(range(len(ref)))
    assert [p.hyp for p in pairs if p.hyp is not None] == list(range(len(hyp)))
    for p in pairs:
        if p.op in ("match", "sub"):
            assert (ref[p.ref] == hyp[p.hyp]) == (p.op == "match")
    c = edit_counts(pairs)
    assert c.sub + c.dels + c.ins == levenshtein(ref, hyp)


# ---------------------------------------------------------------- projection conventions


def test_matched_word_takes_reference_labels_and_form():
    assert project("Hello, McDonald.", "hello mcdonald") == [
        ("Hello", "COMMA", "FIRST_CAP"), ("McDonald", "PERIOD", "FIRST_CAP")]


def test_substituted_word_takes_reference_labels():
    assert project("I met Anna, then left.", "i met hannah then left") == [
        ("I", "O", "FIRST_CAP"), ("met", "O", "O"), ("Hannah", "COMMA", "FIRST_CAP"),
        ("then", "O", "O"), ("left", "PERIOD", "O")]


def test_inserted_word_gets_o():
    assert project("Yes, sir.", "yes uh sir") == [
        ("Yes", "COMMA", "FIRST_CAP"), ("uh", "O", "O"), ("sir", "PERIOD", "O")]


def test_closing_mark_of_deleted_word_moves_back():
    assert project("It works, really. Fine", "it works fine") == [
        ("It", "O", "FIRST_CAP"), ("works", "COMMA|PERIOD", "O"), ("Fine", "O", "FIRST_CAP")]


def test_opening_mark_of_deleted_word_moves_forward():
    assert project("He said “well done” today.", "he said done today") == [
        ("He", "O", "FIRST_CAP"), ("said", "O", "O"), ("done", "OPEN_QUOTE|QUOTE", "O"),
        ("today", "PERIOD", "O")]


def test_marks_with_nowhere_to_go_are_dropped_and_counted():
    ref = rows_from_text("u", "Well, ¿sí?")
    got = project_utterance(ref, hyp_rows("u", ["sí"]))
    assert [(r.word, r.punct) for r in got.rows] == [("sí", ("OPEN_QUES", "QUESTION"))]
    assert (got.moved, got.dropped) == (0, 1)  # COMMA of deleted "well": nothing before
    got = project_utterance(rows_from_text("u", "Go “now"), hyp_rows("u", ["go"]))
    assert got.rows[0].punct == () and (got.moved, got.dropped) == (0, 1)


def test_tie_breaking_keeps_marks_in_place():
    assert project("the, the cat", "the cat") == [("the", "COMMA", "O"), ("cat", "O", "O")]
    assert project("a b, c", "a x y c") == [("a", "O", "O"), ("x", "O", "O"),
                                            ("y", "COMMA", "O"), ("c", "O", "O")]


def test_projection_onto_the_reference_words_is_the_reference():
    text = "“Why?” she asked. ¡Hola, EiTB! The BBC – and NASA… agreed: yes; no."
    ref = rows_from_text("u", text)
    got = project_utterance(ref, hyp_rows("u", [r.word for r in ref]))
    assert got.rows == ref and (got.moved, got.dropped) == (0, 0)


def read_mini_docs(lang: str = "en") -> dict[str, list[WordRow]]:
    docs: dict[str, list[str]] = {}
    current = ""
    for line in (ROOT / "local/mini/corpus" / f"{lang}.txt").read_text("utf-8").splitlines():
        if line.startswith("@doc"):
            current = line.split()[1]
            docs[current] = []
        elif current and line.strip():
            docs[current].append(line.strip())
    return {d: rows_from_text(d, " ".join(s)) for d, s in docs.items()}


def corrupt(rows: list[WordRow], rng: random.Random, vocab: list[str]
            ) -> tuple[list[str], list[tuple[tuple[str, ...], str]]]:
    """ASR-like errors (~12% WER) and the labels the known error path gives each word
    (the conventions applied to the true alignment)."""
    words: list[str] = []
    labels: list[tuple[list[str], list[str], str]] = []
    carry_open: list[str] = []
    for r in rows:
        x = rng.random()
        opens = [m for m in r.punct if m.startswith("OPEN_")]
        if x < 0.04:  # deletion
            closes = [m for m in r.punct if not m.startswith("OPEN_")]
            if labels:
                labels[-1][1].extend(closes)
            carry_open += opens
            continue
        if x < 0.08:  # insertion before the word
            words.append(rng.choice(vocab))
            labels.append(([*carry_open], [], "O"))
            carry_open = []
        words.append(rng.choice(vocab) if rng.random() < 0.04 else r.word)
        labels.append(([*carry_open, *r.punct], [], r.cap))
        carry_open = []
    truth = [(tuple(dict.fromkeys(o + c)), cap) for o, c, cap in labels]
    return words, truth


def test_projection_recovers_simulated_asr_labels_on_97_percent_of_slots():
    docs = read_mini_docs("en")
    vocab = sorted({r.word for rows in docs.values() for r in rows})
    rng = random.Random(7)
    agree = total = 0
    for utt, rows in docs.items():
        words, truth = corrupt(rows, rng, vocab)
        got = project_utterance(rows, hyp_rows(utt, words)).rows
        agree += sum((set(g.punct), g.cap) == (set(p), c)
                     for g, (p, c) in zip(got, truth, strict=True))
        total += len(words)
    assert total > 2000
    assert agree / total >= 0.97


# ---------------------------------------------------------------- the command


@pytest.fixture()
def ref_path(tmp_path: Path) -> Path:
    path = tmp_path / "ref" / "words.tsv"
    write_word_table(path, {"u1": rows_from_text("u1", "Hello, my name is John. Bye!"),
                            "u2": rows_from_text("u2", "Yes, I know.")})
    return path


def labels(path: Path) -> dict[str, list[tuple[str, str, str]]]:
    return {u: [(r.form, "|".join(r.punct) or "O", r.cap) for r in rows]
            for u, rows in read_word_table(path).items()}


def test_text_hypothesis(tmp_path, ref_path, capsys):
    hyp = tmp_path / "text"
    hyp.write_text("u1 HELLO my game is john [noise] bye\nu2 yes i know it\n", "utf-8")
    out = tmp_path / "out" / "words.tsv"
    assert project_labels.main(["--ref", str(ref_path), "--hyp", str(hyp), "--out",
                                str(out)]) == 0
    assert labels(out) == {
        "u1": [("Hello", "COMMA", "FIRST_CAP"), ("my", "O", "O"), ("game", "O", "O"),
               ("is", "O", "O"), ("John", "PERIOD", "FIRST_CAP"),
               ("Bye", "EXCLAMATION", "FIRST_CAP")],
        "u2": [("Yes", "COMMA", "FIRST_CAP"), ("I", "O", "FIRST_CAP"),
               ("know", "PERIOD", "O"), ("it", "O", "O")]}
    assert all(r.start is None and r.pause_after is None
               for rows in read_word_table(out).values() for r in rows)
    msg = capsys.readouterr().out
    assert "2 utterances (text hypothesis)" in msg
    assert "WER 22.2% (1 sub, 0 del, 1 ins)" in msg  # 2 errors / 9 reference words


def test_ctm_hypothesis_keeps_timings_and_pauses(tmp_path, ref_path, capsys):
    hyp = tmp_path / "asr.ctm"
    hyp.write_text("u1 1 0.00 0.50 hello\nu1 1 0.70 0.30 my\nu1 1 1.00 0.40 <breath>\n"
                   "u1 1 1.50 0.25 name\nu1 1 1.75 0.25 john\nu1 1 2.60 0.30 bye 0.9\n"
                   "u2 1 0.10 0.20 yes\nu2 1 0.40 0.30 know\n", "utf-8")
    out = tmp_path / "words.tsv"
    assert project_labels.main(["--ref", str(ref_path), "--hyp", str(hyp), "--out",
                                str(out)]) == 0
    rows = read_word_table(out)
    assert [(r.word, r.punct, r.start, r.end, r.pause_after) for r in rows["u1"]] == [
        ("hello", ("COMMA",), 0.0, 0.5, 0.2), ("my", (), 0.7, 1.0, 0.5),
        ("name", (), 1.5, 1.75, 0.0), ("john", ("PERIOD",), 1.75, 2.0, 0.6),
        ("bye", ("EXCLAMATION",), 2.6, 2.9, END_OF_DOCUMENT_PAUSE)]
    # "I" deleted: its marks (none) nowhere, its capital lost
    assert [(r.form, r.punct) for r in rows["u2"]] == [("Yes", ("COMMA",)),
                                                        ("know", ("PERIOD",))]
    assert "(ctm hypothesis)" in capsys.readouterr().out


def test_word_table_hypothesis_keeps_words_and_timings(tmp_path, ref_path):
    hyp = tmp_path / "hyp.tsv"
    timed = [TimedWord("yes", 0.0, 0.3), TimedWord("i", 0.5, 0.6), TimedWord("no", 0.6, 0.9)]
    write_word_table(hyp, {"u1": hyp_rows("u1", ["hello", "bye"]),
                           "u2": hyp_rows("u2", timed)})
    out = tmp_path / "out.tsv"
    assert project_labels.main(["--ref", str(ref_path), "--hyp", str(hyp), "--out",
                                str(out)]) == 0
    rows = read_word_table(out)
    assert [(r.form, r.punct) for r in rows["u1"]] == [("Hello", ("COMMA", "PERIOD")),
                                                        ("Bye", ("EXCLAMATION",))]
    assert [(r.form, r.punct, r.pause_after) for r in rows["u2"]] == [
        ("Yes", ("COMMA",), 0.2), ("I", (), 0.0), ("no", ("PERIOD",), END_OF_DOCUMENT_PAUSE)]


def test_missing_and_extra_utterances_are_errors(tmp_path, ref_path, capsys):
    hyp = tmp_path / "text"
    hyp.write_text("u1 hello\n", "utf-8")
    out = tmp_path / "o.tsv"
    assert project_labels.main(["--ref", str(ref_path), "--hyp", str(hyp), "--out",
                                str(out)]) == 1
    err = capsys.readouterr().err
    assert "utterance u2 of the reference is missing from the hypothesis" in err
    assert str(hyp) in err and not out.exists()
    hyp.write_text("u1 hello\nu2 yes\nu9 extra\n", "utf-8")
    with pytest.raises(PunctInputError, match="u9 of the hypothesis is not in") as info:
        project_labels.run(project_labels.parser().parse_args(
            ["--ref", str(ref_path), "--hyp", str(hyp), "--out", str(out)]))
    assert info.value.path == str(hyp) and info.value.line == 3


def test_bad_hypothesis_lines_name_file_and_line(tmp_path, ref_path, capsys):
    ctm = tmp_path / "bad.ctm"
    ctm.write_text("u1 1 0.0 0.5 hello\nu1 1 x 0.5 bye\n", "utf-8")
    args = ["--ref", str(ref_path), "--hyp", str(ctm), "--out", str(tmp_path / "o.tsv")]
    assert project_labels.main(args) == 1
    assert f"{ctm}:2: start time 'x' is not a number" in capsys.readouterr().err
    text = tmp_path / "text"
    text.write_text("u1 hello\nu2\n", "utf-8")
    args[3] = str(text)
    assert project_labels.main(args) == 1
    assert f"{text}:2: expected '<utt> <word> [<word> ...]'" in capsys.readouterr().err
    assert project_labels.main([*args[:4], "--out", "x", "--ref", str(tmp_path / "no")]) == 2


def test_utterance_without_hypothesis_words_is_left_out(tmp_path, ref_path, capsys):
    ctm = tmp_path / "a.ctm"
    ctm.write_text("u1 1 0.0 0.5 hello\nu2 1 0.0 0.5 <breath>\n", "utf-8")
    out = tmp_path / "o.tsv"
    assert project_labels.main(["--ref", str(ref_path), "--hyp", str(ctm), "--out",
                                str(out)]) == 0
    assert list(read_word_table(out)) == ["u1"]
    assert "1 utterances without hypothesis words left out" in capsys.readouterr().out


def test_project_table_drops_reference_nonspeech_rows():
    ref = {"u": [*rows_from_text("u", "Hi, you."),
                 WordRow("u", 2, "<breath>", "<breath>", (), "O")]}
    rows, total = project_table(ref, {"u": hyp_rows("u", ["hi", "you"])})
    assert [r.punct for r in rows["u"]] == [("COMMA",), ("PERIOD",)]
    assert total.counts.wer == 0.0


def test_command_is_registered_with_help(capsys):
    assert punct_main.main(["project-labels", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--hyp-format" in out and "docs/ASR.md" in out
    assert "project_labels" in punct_main.tools()
