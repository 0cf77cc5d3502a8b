"""The one timed-word type and the one pause formula (punct.data.timed)."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from collections.abc import Iterator

import pytest

from punct.data.timed import (
    END_OF_DOCUMENT_PAUSE,
    OVERLAP_TOLERANCE,
    TimedWord,
    iter_pauses,
    pauses,
)
from punct.errors import PunctInputError


def tw(word: str, start: float, end: float, line: int | None = None) -> TimedWord:
    return TimedWord(word, start, end, line)


def test_timed_word_init_is_the_declared_fields() -> None:
    """TimedWord's hand-written ``__init__`` takes the declared fields, in order, with
    their defaults, and the word behaves as a generated frozen dataclass would (the
    line is not compared)."""
    params = list(inspect.signature(TimedWord.__init__).parameters.values())[1:]
    fields = dataclasses.fields(TimedWord)
    assert [p.name for p in params] == [f.name for f in fields] == ["word", "start", "end",
                                                                      "line"]
    assert [p.default for p in params] == [
        inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default
        for f in fields]
    w = TimedWord("hi", 0.5, end=0.9)
    assert dataclasses.astuple(w) == ("hi", 0.5, 0.9, None) and w.duration == pytest.approx(0.4)
    assert w == TimedWord("hi", 0.5, 0.9, 7) and hash(w) == hash(TimedWord("hi", 0.5, 0.9, 7))
    assert w != TimedWord("hi", 0.5, 1.0)
    assert dataclasses.replace(w, line=3).line == 3 and w.line is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        w.word = "x"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(w)) == w


def test_gaps_inside_and_the_end_of_document_pause() -> None:
    words = [tw("a", 0.1, 0.5), tw("b", 0.8, 1.0), tw("c", 1.0, 1.4)]
    assert pauses(words) == [0.3, 0.0, END_OF_DOCUMENT_PAUSE]
    # the last pause is the same whether the audio's end is known or not
    assert pauses(words, end_of_audio=1.5) == pauses(words, end_of_audio=9.0) == pauses(words)
    assert pauses([]) == []
    assert pauses([tw("x", 0.0, 0.2)]) == [END_OF_DOCUMENT_PAUSE]
    assert 0.5 < END_OF_DOCUMENT_PAUSE <= 5.0  # long, inside every silence encoding's range


def test_pauses_are_rounded_to_the_millisecond() -> None:
    # 1.2 - 0.55 is 0.6499999999999999 in binary floating point; CTMs and words.tsv
    # store milliseconds, so every route must give the double nearest to 0.650
    words = [tw("a", 0.25, 0.25 + 0.3), tw("b", 1.2, 1.5)]
    assert pauses(words)[0] == 0.65 == float("0.650")


def test_overlaps_within_a_millisecond_are_clipped() -> None:
    words = [tw("a", 0.0, 0.5004), tw("b", 0.5, 0.9)]
    assert pauses(words) == [0.0, END_OF_DOCUMENT_PAUSE]
    assert str(pauses(words)[0]) == "0.0"  # never -0.0
    assert OVERLAP_TOLERANCE == 0.001


def test_errors_name_the_document_file_and_line() -> None:
    with pytest.raises(PunctInputError) as err:
        pauses([tw("a", 0.0, 0.5, 3), tw("b", 0.49, 0.9, 4)], doc_id="recording r1",
               path="in.ctm")
    assert str(err.value).startswith("in.ctm:4: recording r1: word 2 'b'")
    assert "10.0 ms before word 1 'a' ends" in str(err.value)
    with pytest.raises(PunctInputError, match=r"x:7: u: word 1 'a' ends \(0\.100 s\) before"):
        pauses([tw("a", 0.5, 0.1, 7)], doc_id="u", path="x")
    with pytest.raises(PunctInputError, match=r"word 1 'a' ends at 0\.500 s, 100\.0 ms after"):
        pauses([tw("a", 0.0, 0.5)], end_of_audio=0.4)
    assert pauses([tw("a", 0.0, 0.5)], end_of_audio=0.4995) == [END_OF_DOCUMENT_PAUSE]


def test_iter_pauses_reads_one_word_ahead() -> None:
    read: list[str] = []

    def words() -> Iterator[TimedWord]:
        for k, w in enumerate("abc"):
            read.append(w)
            yield tw(w, float(k), k + 0.5)

    it = iter_pauses(words())
    assert next(it) == (tw("a", 0.0, 0.5), 0.5) and read == ["a", "b"]
    assert [p for _, p in it] == [0.5, END_OF_DOCUMENT_PAUSE] and read == ["a", "b", "c"]


def test_timed_word_equality_ignores_the_line() -> None:
    assert tw("a", 0.0, 1.0, 3) == tw("a", 0.0, 1.0, 9)
    assert tw("a", 0.25, 1.0).duration == 0.75


def test_inference_tolerates_overlapping_words(capsys: pytest.CaptureFixture) -> None:
    """Training data with overlapping words stops; a user's ASR timings do not: the pause
    is 0, the words pass through and stderr names the overlap."""
    from punct.infer.inputs import with_pauses

    words = [tw("a", 0.0, 0.5, 3), tw("b", 0.4, 0.9, 4), tw("c", 1.2, 1.5, 5)]
    with pytest.raises(PunctInputError, match="overlapping words"):
        pauses(words, path="train.ctm")
    seen: list[str] = []
    got = [p for _, p in iter_pauses(words, path="asr.ctm", on_overlap=seen.append)]
    assert got == [0.0, 0.3, END_OF_DOCUMENT_PAUSE] and len(seen) == 1
    assert seen[0].startswith("asr.ctm:4:")
    out = list(with_pauses(words, None, "recording r1", "asr.ctm"))
    assert [(w.word, w.pause_after) for w in out] == [("a", 0.0), ("b", 0.3),
                                                       ("c", END_OF_DOCUMENT_PAUSE)]
    assert "overlapping words; pause set to 0" in capsys.readouterr().err
