"""The ``auto`` aligner: per-language table, delegation, bad tables; the plausibility check."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from punct.align.auto import DEFAULT_TABLE, AutoAligner, read_table
from punct.align.base import AlignRequest, check_plausible, get_aligner
from punct.data.timed import TimedWord
from punct.errors import MissingDataError, PunctInputError


def _table(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "align.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_recipe_table_names_known_aligners() -> None:
    default, langs = read_table(DEFAULT_TABLE)
    assert set(langs) == {"en", "es", "eu", "hu"}
    assert default == ("dtw",)


def test_choose_per_language_with_default(tmp_path: Path) -> None:
    path = _table(tmp_path, "default: vad\nlanguages:\n  en: [pocketsphinx, dtw]\n  ES: dtw\n")
    auto = AutoAligner(align_table=path)
    assert auto.choose("en") == ("pocketsphinx", "dtw")
    assert auto.choose("es") == ("dtw",)  # codes are case-insensitive
    assert auto.choose("hu") == ("vad",)
    assert auto.choose(None) == ("vad",)


def test_bad_tables_name_file_and_line(tmp_path: Path) -> None:
    path = _table(tmp_path, "default: dtw\nlanguages:\n  en: sphinx\n")
    with pytest.raises(PunctInputError, match=r"align.yaml:3: en: unknown aligner 'sphinx'"):
        read_table(path)
    with pytest.raises(PunctInputError, match="auto"):  # auto cannot name itself
        read_table(_table(tmp_path, "default: auto\n"))
    with pytest.raises(PunctInputError, match="expected 'default"):
        read_table(_table(tmp_path, "- dtw\n"))
    with pytest.raises(MissingDataError, match="aligner table not found"):
        read_table(tmp_path / "none.yaml")


def test_delegates_with_the_given_options(tmp_path: Path) -> None:
    ref = tmp_path / "ref"
    ref.mkdir()
    (ref / "u_en.ctm").write_text("u_en 1 0.10 0.30 hello\nu_en 1 0.60 0.25 there\n",
                                  encoding="utf-8")
    wav = tmp_path / "a.wav"
    rng = np.random.default_rng(0)
    speech = (rng.standard_normal(16000) * 3000).astype(np.int16)
    speech[4000:8000] = 0
    sf.write(wav, speech, 16000)
    path = _table(tmp_path, "default: vad\nlanguages:\n  en: reference\n")
    auto = get_aligner("auto", align_table=str(path), source=str(ref))
    en = auto.align(AlignRequest("u_en", ("hello", "there"), str(wav), lang="en"))
    assert en is not None
    assert [(w.start, w.end) for w in en.words] == [(0.1, 0.4), (0.6, 0.85)]
    hu = auto.align(AlignRequest("u_hu", ("szia", "világ"), str(wav), lang="hu"))
    assert hu is not None and [w.word for w in hu.words] == ["szia", "világ"]
    assert sorted(auto._built) == ["reference", "vad"]


def test_chain_falls_back_then_fails(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    ref = tmp_path / "ref"
    ref.mkdir()
    (ref / "u1.ctm").write_text("u1 1 0.10 0.30 goodbye\n", encoding="utf-8")
    wav = tmp_path / "a.wav"
    sf.write(wav, (np.random.default_rng(0).standard_normal(8000) * 3000).astype(np.int16),
             16000)
    path = _table(tmp_path, "default: [reference, vad]\n")
    auto = get_aligner("auto", align_table=str(path), source=str(ref))
    result = auto.align(AlignRequest("u1", ("hello",), str(wav)))  # reference: wrong word
    assert result is not None and [w.word for w in result.words] == ["hello"]
    assert "warning: reference failed" in capsys.readouterr().err
    last = get_aligner("auto", align_table=str(_table(tmp_path, "default: [vad, reference]\n")),
                       source=str(ref))
    with pytest.raises(MissingDataError, match="audio file not found"):
        last.align(AlignRequest("u1", ("hello",), str(tmp_path / "none.wav")))


def _words(durations: list[float], gap: float = 0.05) -> list[TimedWord]:
    out, t = [], 0.0
    for i, d in enumerate(durations):
        out.append(TimedWord(f"w{i}", t, t + d))
        t += d + gap
    return out


def test_plausibility_check() -> None:
    req = AlignRequest("u9", tuple(f"w{i}" for i in range(6)), wav_scp="wav.scp", wav_line=9)
    check_plausible(req, _words([0.3] * 6), 3.0)  # 6 words in 2.05 s: fine
    with pytest.raises(PunctInputError, match=r"wav.scp:9: utterance u9: .* 3 of 6 words "
                                              r"are shorter than 20 ms"):
        check_plausible(req, _words([0.3, 0.01, 0.01, 0.3, 0.01, 0.3]), 3.0)
    with pytest.raises(PunctInputError, match=r"6 words in 0.55 s \(10.9 words/s"):
        check_plausible(req, _words([0.05] * 6, gap=0.05), 3.0)
    check_plausible(req, _words([0.01] * 4), 1.0)  # fewer than 5 words: not checked
