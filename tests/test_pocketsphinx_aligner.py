"""The ``pocketsphinx`` aligner: eSpeak pronunciations, real English speech, mismatches."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from punct.align.base import AlignRequest, get_aligner
from punct.align.evaluate import evaluate
from punct.align.pocketsphinx_aligner import espeak_phones
from punct.data.textgrid import textgrid_words
from punct.errors import PunctInputError

MFA = Path("/work/shared/data/mfa_english_word_alignments")
needs_mfa = pytest.mark.skipif(not MFA.is_dir(), reason="MFA test recordings not present")


def test_espeak_pronunciations_in_arpabet() -> None:
    assert espeak_phones("judge") == ["JH", "AH", "JH"]
    assert espeak_phones("sing") == ["S", "IH", "NG"]
    assert espeak_phones("thoughtful") == ["TH", "AO", "T", "F", "AH", "L"]


def _request(name: str, words: tuple[str, ...] | None = None) -> AlignRequest:
    ref = textgrid_words(MFA / f"{name}.TextGrid")
    return AlignRequest(name, words or tuple(w.word.lower() for w in ref),
                        str(MFA / f"{name}.wav"), lang="en", wav_scp="wav.scp", wav_line=4)


@needs_mfa
def test_aligns_real_speech_close_to_mfa() -> None:
    req = _request("acoustic_corpus")  # 26.7 s, 58 words, 11 pauses
    result = get_aligner("pocketsphinx").align(req)
    assert result is not None and result.duration == pytest.approx(26.723, abs=1e-3)
    report = evaluate(result.words, textgrid_words(MFA / "acoustic_corpus.TextGrid"))
    assert report["boundary_error_ms"]["median"] <= 20.0
    assert report["pauses"]["f1"] >= 0.7


@needs_mfa
def test_out_of_dictionary_word_is_pronounced() -> None:
    req = _request("acoustic_corpus")
    assert "yknow" in req.words  # not in the CMU dictionary
    result = get_aligner("pocketsphinx").align(req)
    assert result is not None
    at = req.words.index("yknow")
    ref = textgrid_words(MFA / "acoustic_corpus.TextGrid")[at]
    assert abs(result.words[at].start - ref.start) < 0.1


@needs_mfa
def test_swapped_transcript_fails_naming_the_utterance() -> None:
    other = _request("cold_corpus").words
    req = dataclasses.replace(_request("acoustic_corpus"), words=other[:58])
    with pytest.raises(PunctInputError, match=r"wav.scp:4: utterance acoustic_corpus: "
                                              r"transcript does not fit the audio"):
        get_aligner("pocketsphinx").align(req)


def test_other_languages_are_refused(tmp_path: Path) -> None:
    wav = tmp_path / "a.wav"
    sf.write(wav, np.zeros(1600, dtype=np.int16), 16000)
    req = AlignRequest("u1", ("hola",), str(wav), lang="es")
    with pytest.raises(PunctInputError, match="English model only, not 'es'"):
        get_aligner("pocketsphinx").align(req)
