"""Label derivation from Unicode code points, rendering, label sets."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from punct.errors import PunctInputError
from punct.labels import (
    CAP_LABELS,
    OPENING_LABELS,
    PUNCT_LABELS,
    Token,
    apply_cap,
    cap_label,
    get_label_set,
    normalise_text,
    parse_text,
    punct_from_str,
    punct_to_str,
    render,
)


def labels_of(text: str) -> list[tuple[str, tuple[str, ...]]]:
    return [(t.form, t.punct) for t in parse_text(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hola, ¿qué tal?",
         [("Hola", ("COMMA",)), ("qué", ("OPEN_QUES",)), ("tal", ("QUESTION",))]),
        ("¡Vamos!", [("Vamos", ("OPEN_EXCL", "EXCLAMATION"))]),
        ("dijo «sí».", [("dijo", ()), ("sí", ("OPEN_QUOTE", "QUOTE", "PERIOD"))]),
        ("„Jó” – mondta.", [("Jó", ("OPEN_QUOTE", "QUOTE", "DASH")), ("mondta", ("PERIOD",))]),
        ('he said "no" then', [("he", ()), ("said", ()), ("no", ("OPEN_QUOTE", "QUOTE")),
                               ("then", ())]),
        ("wait... now… ok.",
         [("wait", ("ELLIPSIS",)), ("now", ("ELLIPSIS",)), ("ok", ("PERIOD",))]),
        ("—Kaixo; bai: ez", [("Kaixo", ("OPEN_DASH", "SEMICOLON")), ("bai", ("COLON",)),
                             ("ez", ())]),
        ("word— other", [("word", ("DASH",)), ("other", ())]),
        ("— Hello", [("Hello", ("OPEN_DASH",))]),
        ("Really?!", [("Really", ("QUESTION", "EXCLAMATION"))]),
        ("« Oui »", [("Oui", ("OPEN_QUOTE", "QUOTE"))]),
        ("don't well-known '90s", [("don't", ()), ("well-known", ()), ("'90s", ())]),
    ],
)
def test_parse_examples(text: str, expected: list) -> None:
    assert labels_of(text) == expected


def test_spans_point_at_forms() -> None:
    text = "  «Kaixo»,  ¿zer  moduz?"
    for tok in parse_text(text):
        assert text[tok.span[0]:tok.span[1]] == tok.form


def test_canonical_rendering() -> None:
    assert normalise_text('«Sí» dijo... "vale" -ok') == "“Sí” dijo… “vale” —ok"


@pytest.mark.parametrize("text", ["a (b)", "x % y", "fin¿", "“", "»hola", "a [b"])
def test_unknown_or_misplaced_marks_name_file_and_line(text: str) -> None:
    with pytest.raises(PunctInputError) as err:
        parse_text(text, "corpus.txt", 7)
    assert str(err.value).startswith("corpus.txt:7: ")


def test_capitalisation_labels() -> None:
    assert cap_label("EiTB") == "FIRST_CAP"
    assert cap_label("McDonald") == "FIRST_CAP"
    assert cap_label("NASA") == "ALL_CAPS"
    assert cap_label("I") == "FIRST_CAP"
    assert cap_label("iPhone") == "O"
    assert cap_label("1998") == "O"
    assert cap_label("ÁRPÁD") == "ALL_CAPS"
    assert apply_cap("árpád", "FIRST_CAP") == "Árpád"
    assert apply_cap("'90s", "ALL_CAPS") == "'90S"
    assert set(CAP_LABELS) == {"O", "FIRST_CAP", "ALL_CAPS"}


def test_punct_strings() -> None:
    assert punct_to_str(()) == "O"
    assert punct_to_str(("QUOTE", "PERIOD")) == "QUOTE|PERIOD"
    assert punct_from_str("QUOTE|PERIOD") == ("QUOTE", "PERIOD")
    with pytest.raises(PunctInputError, match=r"f\.tsv:3: unknown punctuation label 'BANG'"):
        punct_from_str("BANG", "f.tsv", 3)


def test_label_sets() -> None:
    iwslt = get_label_set("iwslt4")
    assert iwslt.labels == ("COMMA", "PERIOD", "QUESTION")
    assert iwslt.map(("OPEN_QUOTE", "EXCLAMATION")) == ("PERIOD",)
    assert iwslt.map(("COLON", "DASH")) == ("COMMA",)
    assert get_label_set("full13").labels == PUNCT_LABELS
    assert get_label_set("moro2").map(("QUESTION",)) == ("PERIOD",)
    with pytest.raises(KeyError):
        get_label_set("nope")


LETTERS = "abcdefghijklmnopqrstuvwxyzáéíóöőúüűñçABCDEFGHIJKLMNOPQRSTUVWXYZÁÉÍÓÖŐÚÜŰÑ0123456789"
CLOSING = [lab for lab in PUNCT_LABELS if lab not in OPENING_LABELS]
forms = st.builds(
    lambda a, mid, b: a + mid + b,
    st.sampled_from(LETTERS),
    st.text(alphabet=LETTERS + "'-", max_size=6),
    st.sampled_from(LETTERS),
) | st.sampled_from(LETTERS)


def _no_double_period(closing: list[str]) -> bool:
    return all(not (a == "PERIOD" and b == "PERIOD") for a, b in itertools.pairwise(closing))


tokens = st.builds(
    lambda form, opening, closing: Token(form, tuple(opening) + tuple(closing)),
    forms,
    st.lists(st.sampled_from(sorted(OPENING_LABELS)), max_size=2, unique=True),
    st.lists(st.sampled_from(CLOSING), max_size=3).filter(_no_double_period),
)


@given(st.lists(tokens, min_size=1, max_size=12))
def test_render_then_parse_gives_the_tokens_back(toks: list[Token]) -> None:
    text = render(toks)
    parsed = parse_text(text)
    assert [(t.form, t.punct) for t in parsed] == [(t.form, t.punct) for t in toks]
    assert render(parsed) == text


@given(st.text(alphabet=LETTERS + " ,.;:?!¿¡«»“”„…–—'-\"", max_size=60))
def test_normalisation_is_idempotent(text: str) -> None:
    try:
        once = normalise_text(text)
    except PunctInputError:
        return
    assert normalise_text(once) == once


@given(forms, st.sampled_from(CAP_LABELS))
def test_apply_cap_inverts_cap_label_for_regular_forms(form: str, cap: str) -> None:
    word = form.lower()
    surface = apply_cap(word, cap)
    cased = [c for c in surface if c.isupper() or c.islower()]
    expected = cap if not (cap == "ALL_CAPS" and len(cased) < 2) else cap_label(surface)
    if not cased:
        expected = "O"
    assert cap_label(surface) == expected
    assert surface.lower() == word


def test_closing_mark_after_a_leading_dash_is_an_error_not_a_crash() -> None:
    with pytest.raises(PunctInputError, match="before the first word"):
        normalise_text("–: word")
    assert normalise_text("– word") == "—word"
