"""The mini corpus parser (good and bad files) and the utterance plan built from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from punct.data.mini_corpus import Doc, load_corpus, parse_corpus_file
from punct.errors import MissingDataError, PunctInputError
from punct.synth.mini import VOICE_SETTINGS, plan_utterances

EN = """# English part of a test corpus
# comments may appear anywhere

@doc en-001 train
Hello, my dear friend.
Where are you going?

@doc en-002 dev
# a comment inside a document
It rained all day; we stayed in.

@doc en-003 test
“Yes,” she said.
@doc en-004 train
No blank line before this document, which is fine.
"""

ES = """@doc es-001 train
¿Vienes mañana?
—Sí, claro.

@doc es-002 test
Hace frío.
"""


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    write(tmp_path, "es.txt", ES)
    write(tmp_path, "en.txt", EN)
    return tmp_path


def test_load_good_corpus(corpus: Path) -> None:
    docs = load_corpus(corpus)
    assert [d.doc_id for d in docs] == ["en-001", "en-002", "en-003", "en-004", "es-001", "es-002"]
    first = docs[0]
    assert first == Doc(
        "en-001",
        "en",
        "train",
        ["Hello, my dear friend.", "Where are you going?"],
        str(corpus / "en.txt"),
        4,
    )
    assert docs[1].sentences == ["It rained all day; we stayed in."]
    assert docs[1].split == "dev" and docs[1].line == 8
    assert docs[3].line == 14 and docs[3].split == "train"
    assert docs[4].lang == "es" and docs[4].sentences == ["¿Vienes mañana?", "—Sí, claro."]
    assert [d.doc_id for d in load_corpus(corpus, ["es"])] == ["es-001", "es-002"]


def test_bom_and_crlf_are_accepted(tmp_path: Path) -> None:
    path = write(tmp_path, "en.txt", "\ufeff@doc a train\r\nOne line.\r\n\r\n".encode())
    (doc,) = parse_corpus_file(path)
    assert doc.sentences == ["One line."]


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("Stray sentence.\n", 1, "sentence outside a document"),
        ("@doc a train\nOne.\n\nAnother stray one.\n", 4, "sentence outside a document"),
        ("@doc a\nOne.\n", 1, "bad document line"),
        ("@doc a train extra\nOne.\n", 1, "bad document line"),
        ("@document a train\nOne.\n", 1, "bad document line"),
        ("@doc a training\nOne.\n", 1, "unknown split 'training'"),
        ("@doc a train\nOne.\n\n@doc a dev\nTwo.\n", 4, "duplicate document id 'a'"),
        ("@doc a train\n\n@doc b train\nTwo.\n", 1, "document 'a' has no sentences"),
        ("@doc a train\nOne.\n@doc b train\n", 3, "document 'b' has no sentences"),
        ("@doc a train\n# only a comment\n\n", 1, "document 'a' has no sentences"),
        ("@doc a train\nFine.\nBad ] mark.\n", 3, "unknown punctuation mark"),
    ],
)
def test_bad_corpus_names_file_and_line(
    tmp_path: Path, text: str, line: int, fragment: str
) -> None:
    path = write(tmp_path, "en.txt", text)
    with pytest.raises(PunctInputError) as info:
        load_corpus(tmp_path)
    err = info.value
    assert err.path == str(path)
    assert err.line == line
    assert fragment in err.message
    assert str(err).startswith(f"{path}:{line}: ")


def test_invalid_utf8_reports_line_and_byte_offset(tmp_path: Path) -> None:
    data = b"@doc a train\nGood line.\nBad " + b"\xff\xfe" + b" bytes.\n"
    path = write(tmp_path, "hu.txt", data)
    with pytest.raises(PunctInputError) as info:
        load_corpus(tmp_path)
    err = info.value
    assert err.path == str(path) and err.line == 3
    offset = data.index(b"\xff")
    assert f"byte offset {offset} " in err.message
    assert "0xff" in err.message


def test_duplicate_ids_across_files(tmp_path: Path) -> None:
    write(tmp_path, "en.txt", "@doc x train\nOne.\n")
    es = write(tmp_path, "es.txt", "# header\n@doc x test\nUno.\n")
    with pytest.raises(PunctInputError) as info:
        load_corpus(tmp_path)
    assert info.value.path == str(es) and info.value.line == 2
    assert "en.txt:1" in info.value.message


def test_missing_inputs(tmp_path: Path) -> None:
    with pytest.raises(MissingDataError):
        load_corpus(tmp_path / "nope")
    with pytest.raises(MissingDataError):
        load_corpus(tmp_path)  # no .txt files
    write(tmp_path, "en.txt", "@doc a train\nOne.\n")
    with pytest.raises(MissingDataError):
        load_corpus(tmp_path, ["en", "eu"])


def test_plan_alternates_voice_settings(corpus: Path) -> None:
    plans = plan_utterances(load_corpus(corpus))
    assert [p.utt_id for p in plans] == [
        "en1-en-001",
        "en2-en-002",
        "en1-en-003",
        "en2-en-004",
        "es1-es-001",
        "es2-es-002",
    ]
    p = plans[0]
    assert p.text == "Hello, my dear friend. Where are you going?"
    assert (p.spk, p.lang, p.split, p.doc_id) == ("en1", "en", "train", "en-001")
    en1, en2 = VOICE_SETTINGS["en"][:2]
    assert (p.voice, p.rate, p.pitch) == (en1.voice, en1.rate, en1.pitch)
    assert (plans[1].voice, plans[1].rate, plans[1].pitch) == (en2.voice, en2.rate, en2.pitch)
    assert plans[4].text == "¿Vienes mañana? —Sí, claro."
    # deterministic
    assert plans == plan_utterances(load_corpus(corpus))


def test_voice_settings_differ_per_language() -> None:
    for lang in ("en", "es", "eu", "hu"):
        settings = VOICE_SETTINGS[lang]
        assert len(settings) >= 2
        assert len({s.voice for s in settings}) == len(settings)
        assert len({s.rate for s in settings}) == len(settings)
        assert len({s.pitch for s in settings}) == len(settings)


def test_plan_rejects_unknown_language(tmp_path: Path) -> None:
    path = write(tmp_path, "xx.txt", "@doc a train\nOne.\n")
    with pytest.raises(PunctInputError) as info:
        plan_utterances(load_corpus(tmp_path))
    assert info.value.path == str(path) and info.value.line == 1
