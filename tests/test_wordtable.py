"""Word table I/O and Kaldi data directories."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from punct.errors import MissingDataError, PunctInputError
from punct.kaldi import read_kv, spk2utt_from_utt2spk, validate_data_dir, write_kv
from punct.labels import normalise_text
from punct.wordtable import (
    COLUMNS,
    WordRow,
    read_word_table,
    render_rows,
    rows_from_text,
    write_word_table,
)

TEXTS = {
    "en1-a": "“Where is NASA?” asked Ann – quietly… She left.",
    "es1-b": "—¿Vienes mañana? —preguntó Ane; «sí», dijo EiTB.",
}


def write_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    utts = {u: rows_from_text(u, t) for u, t in TEXTS.items()}
    write_word_table(data / "words.tsv", utts)
    write_kv(data / "text", {u: render_rows(r) for u, r in utts.items()})
    utt2spk = {u: u.split("-")[0] for u in utts}
    write_kv(data / "utt2spk", utt2spk)
    write_kv(data / "spk2utt", spk2utt_from_utt2spk(utt2spk))
    write_kv(data / "utt2lang", {u: u[:2] for u in utts})
    return data


def test_word_row_init_is_the_declared_fields() -> None:
    """WordRow's hand-written ``__init__`` takes the declared fields, in order, with
    their defaults, and the row behaves as a generated frozen dataclass would."""
    params = list(inspect.signature(WordRow.__init__).parameters.values())[1:]
    fields = dataclasses.fields(WordRow)
    assert [p.name for p in params] == [f.name for f in fields] == list(COLUMNS)
    assert [p.default for p in params] == [
        inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default
        for f in fields]
    row = WordRow("u", 3, "hi", "Hi", ("COMMA",), "FIRST_CAP", 0.5, end=0.9)
    assert dataclasses.astuple(row) == ("u", 3, "hi", "Hi", ("COMMA",), "FIRST_CAP", 0.5,
                                        0.9, None)
    assert row == WordRow(**dataclasses.asdict(row)) and hash(row) == hash(
        dataclasses.replace(row))
    assert dataclasses.replace(row, cap="O").cap == "O" and row.cap == "FIRST_CAP"
    assert row.with_timing(1.0, 1.2, 0.1).pause_after == 0.1
    assert pickle.loads(pickle.dumps(row)) == row
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.word = "x"  # type: ignore[misc]
    assert "WordRow(utt_id='u', idx=3" in repr(row)


def test_round_trip_and_render(tmp_path: Path) -> None:
    data = write_dir(tmp_path)
    table = read_word_table(data / "words.tsv")
    assert list(table) == list(TEXTS)
    for utt, text in TEXTS.items():
        assert render_rows(table[utt]) == normalise_text(text)
    rows = table["en1-a"]
    assert [r.word for r in rows[:4]] == ["where", "is", "nasa", "asked"]
    assert rows[2].cap == "ALL_CAPS" and rows[2].punct == ("QUESTION", "QUOTE")
    assert rows[0].punct == ("OPEN_QUOTE",) and rows[4].punct == ("DASH",)
    assert validate_data_dir(data) == {"utterances": 2, "speakers": 2, "words": 15}


@settings(max_examples=30)
@given(st.lists(st.floats(min_value=0, max_value=1e4, allow_nan=False), min_size=3, max_size=3))
def test_timings_round_trip_to_the_millisecond(tmp_path_factory, times: list[float]) -> None:
    rows = rows_from_text("u1", "one two.")
    start, end, pause = times
    rows = [rows[0].with_timing(start, end, pause), rows[1]]
    path = tmp_path_factory.mktemp("wt") / "words.tsv"
    write_word_table(path, {"u1": rows})
    back = read_word_table(path)["u1"]
    assert back[0].start == pytest.approx(start, abs=5e-4)
    assert back[0].pause_after == pytest.approx(pause, abs=5e-4)
    assert back[1].start is None and back[1].pause_after is None


def test_invalid_utf8_names_line(tmp_path: Path) -> None:
    path = tmp_path / "words.tsv"
    good = "\t".join(COLUMNS) + "\nu1\t0\tok\tok\tO\tO\t\t\t\n"
    path.write_bytes(good.encode() + b"u1\t1\tb\xffad\tbad\tO\tO\t\t\t\n")
    with pytest.raises(PunctInputError, match=r"words.tsv:3: invalid UTF-8 at byte offset"):
        read_word_table(path)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("u1\t0\tok\tok\tBANG\tO\t\t\t", "unknown punctuation label 'BANG'"),
        ("u1\t0\tok\tok\tO\tUPPER\t\t\t", "unknown capitalisation label"),
        ("u1\t1\tok\tok\tO\tO\t\t\t", "expected word index 0"),
        ("u1\t0\tok\tok\tO\tO\t-1\t\t", "invalid time"),
        ("u1\t0\tok\tOK\tO\tO\tx\t\t", "not a number"),
        ("u1\t0\tok\tok\tO\tO", "expected 9 tab-separated fields"),
        ("u1\t0\tok\tNo\tO\tO\t\t\t", "is not the lower-cased form"),
    ],
)
def test_malformed_rows_name_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "words.tsv"
    path.write_text("\t".join(COLUMNS) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(PunctInputError, match=message) as err:
        read_word_table(path)
    assert str(err.value).startswith(f"{path}:2: ")


def test_empty_utterance_is_an_error() -> None:
    with pytest.raises(PunctInputError, match="text:4: empty utterance 'u9'"):
        rows_from_text("u9", "   ", "text", 4)


def test_validation_catches_inconsistency(tmp_path: Path) -> None:
    data = write_dir(tmp_path)
    (data / "text").write_text(
        "en1-a Something else.\n" + (data / "text").read_text().split("\n", 1)[1], encoding="utf-8"
    )
    with pytest.raises(PunctInputError, match="text:1: utterance en1-a"):
        validate_data_dir(data)
    (data / "utt2spk").write_text("es1-b es1\nen1-a en1\n", encoding="utf-8")
    with pytest.raises(PunctInputError, match="not sorted"):
        validate_data_dir(data)
    with pytest.raises(MissingDataError):
        validate_data_dir(tmp_path / "nothing")


def test_kv_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "utt2spk"
    path.write_text("a x\na y\n", encoding="utf-8")
    with pytest.raises(PunctInputError, match="utt2spk:2: duplicate key 'a'"):
        read_kv(path)
