"""The restore path's columns: segments made of columns, keep-case over them, and the
per-form tables of the text path (token splits, cased forms, keep-case facts)."""

from __future__ import annotations

import dataclasses
import io
import json

import numpy as np
import pytest
from helpers.rules import IWSLT, RuleModel, WordFeaturizer, rule_restorer

from punct.data.nonspeech import NonSpeechMap
from punct.engine import symbols
from punct.engine.decode import DecodeSettings
from punct.engine.symbols import cased_input, split_tokens, tally
from punct.infer.casing import CaseKeeper
from punct.infer.inputs import read_text
from punct.infer.outputs import write_segments
from punct.infer.scores import confidence, confidences, rounded_rows
from punct.infer.stream import (
    BATCH_WORDS,
    CasedForms,
    Document,
    InputWord,
    Restorer,
    Segment,
    default_batch_words,
)
from punct.models.base import WordSeq
from punct.wordtable import WordRow, render_rows

SETTINGS = DecodeSettings(window=4, stride=2, batch_size=3, aggregate="mean", bf16=False,
                          threshold=0.5)


def _restorer() -> Restorer:
    return Restorer(RuleModel(), WordFeaturizer(), IWSLT, SETTINGS, "cpu", batch_words=7,
                    block_words=5, context_words=2)


def _timed(words: list[str]) -> list[InputWord]:
    return [InputWord(w, float(k), k + 0.5, 0.9 if w == "pause" else 0.1)
            for k, w in enumerate(words)]


WORDS = "we stop here pause then go on stop and again we go pause now".split()


def test_segments_of_columns_give_the_rows_of_the_row_by_row_path() -> None:
    plain = list(_restorer().restore([Document("d", _timed(WORDS))]))
    # a non-speech token among the words sends every segment of it down the row path
    mixed_words = _timed(WORDS)
    mixed_words.insert(6, InputWord("[noise]", 5.8, 5.9, None, nonspeech=True))
    mixed = list(_restorer().restore([Document("d", mixed_words)]))
    assert all(seg.columns is not None for seg in plain)
    assert any(seg.columns is None for seg in mixed)
    rows = [r for seg in plain for r in seg.rows]
    speech = [r for seg in mixed for r in seg.rows if r.word != "[noise]"]
    assert [r.idx for r in rows] == list(range(len(WORDS)))

    def fields(r: WordRow) -> tuple:
        return (r.utt_id, r.word, r.form, r.punct, r.cap, r.start, r.end, r.pause_after)

    assert [fields(r) for r in rows] == [fields(r) for r in speech]
    assert rows[1].punct == ("PERIOD",) and rows[2].form == "Here"  # the rules did decide
    for seg in plain + mixed:
        assert " ".join(seg.texts()) == render_rows(seg.rows)
        assert len(seg) == len(seg.rows)


def test_a_segment_is_made_of_rows_or_of_columns() -> None:
    with pytest.raises(ValueError, match="rows or of columns"):
        Segment("d")
    seg = next(_restorer().restore([Document("d", _timed(WORDS[:3]))]))
    columns = seg.columns
    assert columns is not None
    with pytest.raises(ValueError, match="rows or of columns"):
        Segment("d", seg.rows, columns=columns)
    same = Segment("d", list(seg.rows), seg.first, seg.last, seg.scores)
    assert same == seg and same.columns is None


def _keep_case(text: str, keep: bool | None) -> str:
    out = io.StringIO()
    keeper = CaseKeeper(keep)
    with tally(None), cased_input():
        docs = keeper.documents(read_text(io.BytesIO(text.encode()), "in"))
        write_segments(keeper.segments(_restorer().restore(docs)), out, "text")
    return out.getvalue()


def test_keep_case_puts_kept_forms_into_columns_and_rows_alike() -> None:
    text = "we met the USA team stop then the iPhone came to the U.S.\n"
    expected = "We met the USA team stop. Then the iPhone came to the U.S.\n"
    assert _keep_case(text, True) == expected
    assert _keep_case(text, None) == expected  # already cased: kept
    assert _keep_case(text, False) == ("We met the usa team stop. Then the iphone came to the "
                                       "u.s.\n")
    # the same words with a non-speech token: the row path, the same forms
    noisy = text.replace("team", "team [noise]")
    assert _keep_case(noisy, True) == expected.replace("team", "team [noise]")


def test_keep_case_refuses_segments_that_do_not_match_the_words_read() -> None:
    words = [InputWord(w) for w in "the USA team".split()]
    keeper = CaseKeeper(True)
    doc = next(iter(keeper.documents([Document("d", words)])))
    seen = list(doc.words)
    assert [w.word for w in seen] == ["the", "usa", "team"]
    segs = list(_restorer().restore([Document("d", seen)]))
    assert segs[0].columns is not None
    assert isinstance(doc.words, list)  # a list stays a list (read at once)
    ahead = CaseKeeper(True)
    streamed = next(iter(ahead.documents([Document("d", iter(words))])))
    next(iter(streamed.words))  # 1 word of 3 read from a stream
    with pytest.raises(RuntimeError, match="no input word"):
        next(ahead.segments([segs[0]]))
    short = Segment("d", segs[0].rows[:2])
    with pytest.raises(RuntimeError, match="read but never restored"):
        next(keeper.segments([short]))
    other = CaseKeeper(True)
    list(next(iter(other.documents([Document("e", words)]))).words)
    with pytest.raises(RuntimeError, match="came out where word 0 of 'e'"):
        next(other.segments(segs))


def test_token_splits_are_remembered_per_map_and_case_and_counted_each_time() -> None:
    text = "Hello, U.S. 😀 [noise], Hello 😀 [noise]"
    with tally(None) as counter:
        first = split_tokens(text)
        again = split_tokens(text)
    assert first == again == (["hello", "u.s", "😀", "[noise]", "hello", "😀", "[noise]"],
                               [False, False, False, True, False, False, True])
    assert counter.words == 4 and counter.nonspeech == 4  # every occurrence, both calls
    with tally(None), cased_input():
        assert split_tokens(text)[0] == ["Hello", "U.S.", "😀", "[noise]", "Hello", "😀",
                                         "[noise]"]
    uhm = NonSpeechMap("uhm", nonspeech=frozenset({"uhm"}))
    with tally(uhm):
        assert split_tokens("so uhm, yes") == (["so", "uhm", "yes"], [False, True, False])
    with tally(None):
        assert split_tokens("so uhm, yes") == (["so", "uhm", "yes"], [False, False, False])


def test_a_full_split_table_starts_afresh_with_the_same_splits(
        monkeypatch: pytest.MonkeyPatch) -> None:
    text = " ".join(f"Word{k}, x{k % 3}." for k in range(50))
    with tally(None):
        expected = split_tokens(text)
    monkeypatch.setattr(symbols, "_SPLIT_CACHE_SIZE", 4)
    fresh = NonSpeechMap("fresh")  # no table yet
    with tally(fresh):
        assert split_tokens(text) == expected
        assert split_tokens(text) == expected
    assert list(fresh.splits) == [False] and 0 < len(fresh.splits[False]) <= 4
    assert NonSpeechMap("fresh") == fresh  # the tables are not part of the map's value


def test_cased_forms_write_each_class_and_keep_pass_through_words() -> None:
    forms = CasedForms(limit=1)
    words = ["hello", "😀x", "usa", "hello", "ñu", "2nd"]
    caps = np.array([1, 1, 2, 0, 1, 1])
    expected = ["Hello", "😀x", "USA", "hello", "Ñu", "2Nd"]
    assert forms.of(words, caps) == expected
    assert forms.of(words, caps) == expected  # from the tables (cleared when full)
    assert all(len(table) <= 1 for table in forms.known)


@pytest.mark.parametrize("n_words", [0, 4, 7, 9, 12, 13, 30])
def test_a_list_of_words_is_cut_into_the_units_of_a_stream(n_words: int) -> None:
    words = _timed([WORDS[k % len(WORDS)] for k in range(n_words)])
    restorer = Restorer(RuleModel(), WordFeaturizer(), IWSLT, SETTINGS, "cpu",
                        block_words=4, context_words=3)
    from_list = [(u.words, u.doc_start, u.keep, u.first, u.last)
                 for u in restorer._units(Document("d", words))]
    from_stream = [(u.words, u.doc_start, u.keep, u.first, u.last)
                   for u in restorer._units(Document("d", iter(words)))]
    assert from_list == from_stream
    # a cut each time block + context (7) words wait beyond the last cut, then the rest
    assert len(from_list) == 1 + ((n_words - 7) // 4 + 1 if n_words >= 7 else 0)
    assert list(_restorer().restore([Document("d", words)])) == list(
        _restorer().restore([Document("d", iter(words))]))


@pytest.mark.parametrize("doc_words", [1, 3, 4, 5, 9, 40])
def test_a_flush_on_cuda_makes_a_whole_decoding_batch(doc_words: int) -> None:
    """On CUDA ``default_batch_words`` words give at least ``batch_size`` windows, however
    long the documents (one piece per word: the fewest windows)."""
    settings = DecodeSettings(window=4, stride=2, batch_size=700, aggregate="mean",
                              bf16=False, threshold=0.5)
    words = default_batch_words(settings, "cuda")
    assert words == 700 * 4
    seqs = [WordSeq(f"d{k}", ["w"] * len(chunk), np.zeros(len(chunk), dtype=np.float32),
                    np.zeros((len(chunk), 3), dtype=np.float32),
                    np.zeros(len(chunk), dtype=np.int64), k)
            for k, chunk in enumerate(np.array_split(np.arange(words), -(-words // doc_words)))]
    assert sum(len(s) for s in seqs) == words
    assert len(WordFeaturizer().windows(seqs, settings.window, settings.stride)) >= 700


def test_the_flush_size_is_the_cpus_elsewhere() -> None:
    nagy_gpu = DecodeSettings(window=128, stride=64, batch_size=256, aggregate="mean",
                              bf16=False, threshold=0.5)
    assert default_batch_words(nagy_gpu, "cpu") == BATCH_WORDS == 2048
    assert default_batch_words(nagy_gpu, "cuda:0") == 256 * 128
    assert default_batch_words(SETTINGS, "cuda") == BATCH_WORDS  # small batches: the floor
    assert _restorer().batch_words == 7
    assert Restorer(RuleModel(), WordFeaturizer(), IWSLT, SETTINGS, "cpu").batch_words == 2048
    assert rule_restorer().engine.batch_words == 2048  # the API's default on the CPU


def test_rows_once_read_are_the_segment() -> None:
    seg = next(_restorer().restore([Document("d", _timed(WORDS[:3]))]))
    copy = seg.replace(first=False)
    assert seg.columns is not None and copy.columns is seg.columns and not copy.first
    seg.rows[0] = dataclasses.replace(seg.rows[0], form="WE")
    assert seg.columns is None and seg.texts()[0] == "WE" and len(seg) == 3
    seg.rows = seg.rows[:2]
    assert len(seg) == 2 and seg.texts() == ["WE", "stop."]
    assert seg.replace(last=False).rows == seg.rows
    with pytest.raises(TypeError, match="no field"):
        seg.replace(words=[])


def test_keep_case_facts_table_starts_afresh_when_full(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "we met the USA team stop then the iPhone came to the U.S.\n"
    expected = _keep_case(text, True)
    monkeypatch.setattr(CaseKeeper, "FACTS_LIMIT", 2)
    assert _keep_case(text, True) == expected


def rounded(probs: dict[str, float]) -> dict[str, float]:
    """Each probability rounded to 4 digits, one at a time (what JSONL showed before)."""
    return {label: round(p, 4) for label, p in probs.items()}


def test_rounded_rows_are_pythons_round_even_at_ties() -> None:
    rng = np.random.default_rng(0)
    values = [rng.random(4000), rng.random(4000) * 1e-3, -rng.random(200)]
    # decimal ties and their neighbours: k/10^4 + 5e-5 (not exact in binary) one ulp apart
    ties = (np.arange(2000) + 0.5) / 1e4
    values += [ties, np.nextafter(ties, 0), np.nextafter(ties, 1)]
    values.append(np.array([0.0, -0.0, 1.0, 0.99995, 0.00005, 0.12345, np.nan, np.inf,
                            -np.inf, 5e-324, 933429532502.2261, 1e305, -1e20, 1e10 + 0.00005]))
    flat = np.concatenate(values)
    with np.errstate(all="raise"):  # no overflow warning either
        got = rounded_rows(flat.reshape(-1, 1))
    want = [round(float(v), 4) for v in flat]
    assert [str(g[0]) for g in got] == [str(w) for w in want]  # -0.0 and nan included
    assert rounded_rows(np.zeros((2, 0))) == [[], []]
    probs = {"COMMA": 0.123456789, "PERIOD": 0.00005}
    assert dict(zip(probs, rounded_rows(np.array([list(probs.values())]))[0],
                    strict=True)) == rounded(probs)


def test_confidences_are_the_word_by_word_ones() -> None:
    rng = np.random.default_rng(1)
    labels = ("COMMA", "PERIOD", "QUESTION")
    values = rng.random((300, 3))
    values[7, 1] = np.nan
    values[8] = [0.5, 0.5, 0.5]
    values[10] = [0.0, -0.0, 1.0]  # Python's min keeps the first of equal zeros
    marks_10 = ("PERIOD",)
    marks = [tuple(label for label in labels if rng.random() < 0.3) for _ in range(300)]
    marks[9] = ("UNKNOWN",)  # a mark outside the columns counts for nothing, as before
    marks[10] = marks_10
    got = confidences(values, labels, marks)
    want = [confidence(dict(zip(labels, row, strict=True)), m)
            for row, m in zip(values.tolist(), marks, strict=True)]
    assert [str(g) for g in got] == [str(w) for w in want]
    assert confidences(np.zeros((2, 0)), (), [(), ()]) == [1.0, 1.0]


def test_jsonl_scores_are_those_of_the_probabilities() -> None:
    segs = list(_restorer().restore([Document("d", _timed(WORDS))]))
    out = io.StringIO()
    write_segments(segs, out, "jsonl")
    words = json.loads(out.getvalue())["words"]
    probs = [p for seg in segs for p in seg.probs]
    rows = [r for seg in segs for r in seg.rows]
    assert [w["probs"] for w in words] == [rounded(p) for p in probs]
    assert [w["probability"] for w in words] == [round(confidence(p, r.punct), 4)
                                                 for p, r in zip(probs, rows, strict=True)]
