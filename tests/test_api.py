"""The Python API (``from punct import Restorer``) and tolerant input at restore."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.rules import IWSLT, RULE_CONFIG, RuleModel, WordFeaturizer, rule_restorer
from helpers.tiny import tiny_brnn_exp

from punct import Restorer, Word
from punct.bin import restore as restore_cli
from punct.engine.symbols import is_passthrough, split_words, tally
from punct.errors import PunctInputError
from punct.export.system import System
from punct.infer.inputs import read_jsonl
from punct.models.unipunc.audio import AudioOptions
from punct.wordtable import rows_from_text

# ----------------------------------------------------------------------------- symbols


@pytest.mark.parametrize(("text", "words"), [
    ("Hello, World!", ["hello", "world"]),
    ("hello 😀 world", ["hello", "😀", "world"]),
    ("wow😀! 東京に行く。", ["wow😀", "東京に行く"]),  # CJK are letters; 。 is a PERIOD
    ("see https://Ex.com/A?b=1.", ["see", "https://Ex.com/A?b=1"]),
    ("x ≤ 2×y (ok) ؟", ["x", "≤", "2×y", "(ok)", "؟"]),
    ("«¿Qué?» — ...", ["qué"]),
    ("l'amour '90s", ["l'amour", "'90s"]),
])
def test_split_words_keeps_foreign_symbols(text: str, words: list[str]) -> None:
    assert split_words(text) == words


def test_tally_counts_passthrough_words() -> None:
    with tally() as counter:
        split_words("a 😀 b≥c ok 😀")
    assert (counter.words, counter.symbols) == (3, 3)
    assert counter.examples == ["😀", "b≥c"]
    assert "3 words with 3 symbols" in counter.message()
    assert split_words("😀") == ["😀"] and counter.words == 3  # outside the block: not counted
    assert is_passthrough("a+b") and not is_passthrough("don't")


def test_corpus_parsing_still_stops_at_unknown_symbols() -> None:
    with pytest.raises(PunctInputError, match=r"corpus.txt:7: unknown punctuation mark '😀'"):
        rows_from_text("u1", "hello 😀 world", "corpus.txt", 7)


def test_restore_keeps_symbols_and_reports_a_count(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    exp = tiny_brnn_exp(tmp_path / "exp")
    src = tmp_path / "in.txt"
    src.write_text("hello 😀 world\nmail me@x.org at 3×4 o'clock\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    assert restore_cli.main(["--exp-dir", str(exp), str(src), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "restore: 3 words with 3 symbols outside the label set" in err
    assert "Loading" not in err
    lines = out.read_text(encoding="utf-8").splitlines()
    assert [w.strip(",.?") for w in lines[0].split()] == ["Hello", "😀", "world"]
    assert lines[1].split()[1] in ("me@x.org", "me@x.org,", "me@x.org.", "me@x.org?")
    assert "3×4" in lines[1]


# ----------------------------------------------------------------------------- API


def test_restore_str_and_list() -> None:
    r = rule_restorer()
    assert r.restore("go stop then go") == "Go stop. Then go."
    assert r.restore(["a stop", "", "b"]) == ["A stop.", "", "B."]
    assert r.restore([]) == []


def test_restore_words_pauses_from_times_as_the_jsonl_reader() -> None:
    r = rule_restorer()
    words, starts, ends = ["a", "b", "stop", "c"], [0.0, 1.0, 1.2, 1.6], [0.4, 1.1, 1.5, 1.9]
    out = r.restore_words(words, starts=starts, ends=ends)
    record = ('{"id": "x", "words": [' + ", ".join(
        f'{{"word": "{w}", "start": {s}, "end": {e}}}'
        for w, s, e in zip(words, starts, ends, strict=True)) + "]}\n")
    reader = list(next(read_jsonl(io.BytesIO(record.encode()), "x")).words)
    assert [w.pause_after for w in out] == [w.pause_after for w in reader]
    assert out[0].pause_after == pytest.approx(0.6)
    assert out[0] == Word("A", "a", ("COMMA",), "FIRST_CAP", 0.0, 0.4, out[0].pause_after)
    assert [w.text for w in out][:3] == ["A,", "b", "stop."] and out[3].form == "C"
    plain = r.restore_words(["a", "b", "stop"])  # no times: no pauses, no comma
    assert [w.text for w in plain] == ["A", "b", "stop."] and plain[0].start is None
    with pytest.raises(ValueError, match="both starts and ends"):
        r.restore_words(["a"], starts=[0.0])
    with pytest.raises(ValueError, match="1 words but 2 starts"):
        r.restore_words(["a"], starts=[0.0, 1.0], ends=[0.1, 1.1])


def test_restore_stream_is_lazy_and_in_order() -> None:
    read: list[int] = []

    def lines() -> Iterator[str]:
        for k, text in enumerate(["a stop", "b 😀", "c", "d stop"], 1):
            read.append(k)
            yield text

    r = rule_restorer(batch_words=1)
    stream = r.restore_stream(lines())
    assert next(stream) == "A stop." and read == [1]
    assert list(stream) == ["B. 😀", "C.", "D stop."]
    assert r.symbols.words == 1 and r.symbols.examples == ["😀"]


def test_from_pretrained_errors(tmp_path: Path) -> None:
    with pytest.raises(PunctInputError, match="neither an experiment dir"):
        Restorer.from_pretrained(tmp_path)
    with pytest.raises(ValueError, match="precision"):
        Restorer(System(RULE_CONFIG, WordFeaturizer(), RuleModel(), IWSLT, None, tmp_path, False),
                 precision="fp8")
    audio = RULE_CONFIG.replace(featurizer=AudioOptions(streams=["fbank"]))
    with pytest.raises(PunctInputError, match="acoustic feature streams"):
        Restorer(System(audio, WordFeaturizer(), RuleModel(), IWSLT, None, tmp_path, False))


def test_punct_command_dispatches_to_the_tools(capsys: pytest.CaptureFixture[str]) -> None:
    from punct.__main__ import main as punct_main

    assert punct_main(["--help"]) == 0
    listing = capsys.readouterr().out
    assert "  restore " in listing and "  export " in listing and "  bench_backends " in listing
    assert punct_main(["restore", "--help"]) == 0
    assert "--input-format" in capsys.readouterr().out
    assert punct_main(["nope"]) == 2 and "unknown tool 'nope'" in capsys.readouterr().err
    assert punct_main([]) == 2
