"""eSpeak NG synthesis through ctypes: audio, reference word timings, CLI output and resume."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from punct.bin import synth_mini
from punct.data.ctm import ctm_lines
from punct.errors import PunctInputError
from punct.features.resample import resample_int16
from punct.labels import parse_text
from punct.synth.espeak import SAMPLE_RATE, EspeakError, SynthEvent, SynthResult, get_engine
from punct.synth.mini import (
    OUT_RATE,
    VOICE_SETTINGS,
    UttPlan,
    espeak_text,
    pause_intervals,
    synthesize_utterance,
    word_timings,
)

# One sentence pair per language: a comma and a period inside, plain words elsewhere.
TEXTS = {
    "en": "The old man walked home, and the dog followed him. It was late... Very late.",
    "es": "El perro corre por el parque, y los niños juegan. ¿Hace mucho sol?",
    "eu": "Gaur goizean etxera joan naiz, eta ama ikusi dut. Oso ondo dago!",
    "hu": "A kutya a parkban fut, és a gyerekek játszanak. Süt a nap… és meleg van.",
}
PAUSE_MARKS = {"COMMA", "PERIOD", "QUESTION", "EXCLAMATION", "SEMICOLON", "COLON", "ELLIPSIS"}


def plan_for(lang: str, text: str, k: int = 0) -> UttPlan:
    s = VOICE_SETTINGS[lang][k]
    return UttPlan(
        f"{lang}{k + 1}-t", f"{lang}{k + 1}", lang, "test", "t", s.voice, s.rate, s.pitch, text
    )


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(x.astype(np.float64) ** 2))) if len(x) else 0.0


@pytest.mark.parametrize("lang", sorted(TEXTS))
@pytest.mark.parametrize("k", [0, 1])
def test_synthesis_and_reference_timings(lang: str, k: int) -> None:
    text = TEXTS[lang]
    utt = synthesize_utterance(plan_for(lang, text, k))
    tokens = parse_text(text)
    assert utt.sample_rate == OUT_RATE == 16000
    assert utt.samples.dtype == np.int16 and utt.samples.ndim == 1
    n = len(tokens)
    assert 0.15 * n < utt.duration < 0.8 * n + 1.0
    assert [w.word for w in utt.words] == [t.word for t in tokens]
    words = utt.words
    for i, w in enumerate(words):
        assert 0.0 <= w.start < w.end <= utt.duration + 1e-9
        if i + 1 < n:
            gap = words[i + 1].start - w.end
            assert gap >= 0.0
            if set(tokens[i].punct) & PAUSE_MARKS:
                assert gap > 0.1, (tokens[i].form, gap)
                # the reference pause is silence in the audio, the words around it are not
                a, b = round(w.end * OUT_RATE), round(words[i + 1].start * OUT_RATE)
                word_rms = rms(utt.samples[round(w.start * OUT_RATE) : a])
                assert rms(utt.samples[a + 160 : b - 160]) < 0.05 * word_rms
            else:
                assert gap == 0.0, (tokens[i].form, gap)
    speech = utt.samples[round(words[0].start * OUT_RATE) : round(words[-1].end * OUT_RATE)]
    assert rms(speech) > 300


def test_hungarian_ellipsis_is_not_read_aloud() -> None:
    text = "Alma... körte… szilva."
    spoken = espeak_text(text, "hu")
    assert spoken == "Alma;   körte; szilva."
    assert espeak_text(text, "en") == text
    phonemes = "".join(e.phoneme for e in get_engine().synthesize(spoken, "hu").events)
    assert "pont" not in phonemes
    assert "pont" in "".join(e.phoneme for e in get_engine().synthesize(text, "hu").events)


def test_multiple_and_missing_word_events_on_real_output() -> None:
    # eSpeak speaks "nem jött" as one unit (one WORD event) and a number as several.
    text = "Ő nem jött el, mert 1984-ben volt."
    result = get_engine().synthesize(text, "hu", 170, 50)
    tokens = parse_text(text)
    words = word_timings(text, result)
    assert [w.word for w in words] == [t.word for t in tokens]
    starts = [w.start for w in words]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    assert words[1].end == words[2].start  # nem | jött: contiguous
    assert words[3].end + 0.1 < words[4].start  # pause after "el,"
    number = words[5]
    assert number.end - number.start > 0.8  # "ezerkilencszáznyolcvannégy-ben" is long


def test_short_breaks_are_speech_long_pauses_are_not() -> None:
    # Hungarian: "fok között alakul:" is one eSpeak unit with 40 ms "_|" breaks inside
    text = "A hőmérséklet fok között alakul: Budapesten nyolc."
    result = get_engine().synthesize(text, "hu+m2", 160, 40)
    words = word_timings(text, result)
    fok, kozott, alakul, budapesten = words[2:6]
    assert fok.end == kozott.start and kozott.end == alakul.start
    assert alakul.end - alakul.start > 0.2
    assert 0.1 < budapesten.start - alakul.end < 0.5


def test_pause_intervals() -> None:
    events = [
        ev("phoneme", 100, 0, "k"),  # leading silence [0, 100) is a pause
        ev("phoneme", 1000, 0, "_|"),  # 1000 samples of syllable break: speech
        ev("phoneme", 2000, 0, "a"),
        ev("phoneme", 3000, 0, "_:"),  # long pause
        ev("phoneme", 5000, 0, "_"),
        ev("phoneme", 6000, 0, "t"),
        ev("phoneme", 7000, 0, "_:"),  # too short to count
        ev("phoneme", 7200, 0, "o"),
        ev("phoneme", 8000, 0, "_:"),  # final pause up to the end of the audio
    ]
    assert pause_intervals(events, 9000, 300) == [(3000, 6000), (8000, 9000)]
    assert pause_intervals(events, 9000, 50) == [(0, 100), (3000, 6000), (7000, 7200), (8000, 9000)]


def ev(kind: str, sample: int, char_pos: int = 0, phoneme: str = "") -> SynthEvent:
    return SynthEvent(kind, sample, sample * 1000 // SAMPLE_RATE, char_pos, 0, 0, phoneme)


def fake_result(events: list[SynthEvent], n: int) -> SynthResult:
    samples = np.full(n, 3000, dtype=np.int16)
    return SynthResult(samples, SAMPLE_RATE, tuple(events))


def test_event_mapping_rules() -> None:
    text = "¿Uno dos, 1984 tres?"
    # offsets: ¿0 Uno1-4 dos5-8 1984 10-14 tres15-19
    events = [
        ev("word", 0, 0),  # at the opening mark -> "Uno"
        ev("phoneme", 0, 0, "u"),
        ev("word", 2000, 5),
        ev("phoneme", 2000, 5, "d"),
        ev("phoneme", 4000, 8, "_:"),  # pause after the comma
        ev("word", 8000, 10),  # the number is read as several words
        ev("phoneme", 8000, 10, "m"),
        ev("word", 9000, 11),
        ev("phoneme", 9000, 11, "n"),
        ev("word", 10000, 15),
        ev("phoneme", 10000, 15, "t"),
        ev("phoneme", 12000, 19, "_"),
    ]
    words = word_timings(text, fake_result(events, 12000))
    sr = SAMPLE_RATE
    got = [(w.word, round(w.start * sr), round(w.end * sr)) for w in words]
    assert got == [
        ("uno", 0, 2000),
        ("dos", 2000, 4000),
        ("1984", 8000, 10000),
        ("tres", 10000, 12000),
    ]


def test_words_without_events_share_the_merged_interval() -> None:
    text = "nem jött el"
    events = [
        ev("word", 0, 0),
        *[
            ev("phoneme", s, 0, p)
            for s, p in [(0, "n"), (1000, "E"), (2000, "m"), (3000, "j"), (4000, "Y"), (5000, "t")]
        ],
        ev("word", 6000, 9),
        ev("phoneme", 6000, 9, "E"),
        ev("phoneme", 7000, 9, "l"),
    ]
    words = word_timings(text, fake_result(events, 8000))
    got = [(w.word, round(w.start * SAMPLE_RATE), round(w.end * SAMPLE_RATE)) for w in words]
    # 3 + 4 characters: the split lands on the phoneme onset nearest 3/7 of 6000
    assert got == [("nem", 0, 3000), ("jött", 3000, 6000), ("el", 6000, 8000)]


def test_no_word_events_is_an_error() -> None:
    with pytest.raises(PunctInputError, match="no word timing"):
        word_timings("two words", fake_result([ev("phoneme", 0, 0, "t")], 5000), path="u1")


def test_engine_rejects_bad_settings() -> None:
    engine = get_engine()
    with pytest.raises(EspeakError, match="voice 'no-such-voice'"):
        engine.synthesize("Hello.", "no-such-voice")
    with pytest.raises(ValueError, match="rate"):
        engine.synthesize("Hello.", "en-us", rate=10)
    # the engine still works after a failed call
    assert engine.synthesize("Hello.", "en-us").duration > 0.2


def test_engine_is_deterministic_in_any_order() -> None:
    engine = get_engine()
    a = engine.synthesize("Hello, my dear friend.", "en-us+f3", 180, 60)
    engine.synthesize("Kaixo, zer moduz?", "eu+m3", 150, 40)
    b = engine.synthesize("Hello, my dear friend.", "en-us+f3", 180, 60)
    assert a.samples.tobytes() == b.samples.tobytes()
    assert a.events == b.events
    assert a.sample_rate == SAMPLE_RATE == 22050


def test_engine_is_deterministic_across_processes() -> None:
    # eSpeak seeds its breath-noise generator from the clock: processes started in
    # different seconds must still give the same samples.
    code = (
        "import hashlib; from punct.synth.espeak import get_engine; "
        "r = get_engine().synthesize('Hello, my dear friend. It is late.', 'en-us+f3', 180, 60); "
        "print(hashlib.sha256(r.samples.tobytes()).hexdigest())"
    )
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    digests = []
    for _ in range(2):
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        digests.append(out.stdout.strip())
        time.sleep(1.1)
    assert len(digests[0]) == 64 and digests[0] == digests[1]


def test_resample_to_16k() -> None:
    t = np.arange(SAMPLE_RATE) / SAMPLE_RATE
    x = (8000 * np.sin(2 * np.pi * 440 * t)).astype(np.int16)
    y = resample_int16(x, SAMPLE_RATE, 16000)
    assert y.dtype == np.int16 and len(y) == 16000
    spectrum = np.abs(np.fft.rfft(y.astype(np.float64)))
    assert int(np.argmax(spectrum)) == 440  # 1 Hz bins over one second
    assert abs(rms(y) - rms(x)) < 0.01 * rms(x)


def test_ctm_lines_format() -> None:
    utt = synthesize_utterance(plan_for("en", "Yes, indeed."))
    lines = ctm_lines("en1-t", utt.words)
    assert len(lines) == 2
    for line in lines:
        assert re.fullmatch(r"en1-t 1 \d+\.\d{3} \d+\.\d{3} \S+\n", line), line


CORPUS = {
    "en.txt": "@doc e1 train\nHello, my friend.\nHow are you?\n\n@doc e2 dev\nIt is late.\n\n"
    "@doc e3 test\nGood night, everyone.\n",
    "es.txt": "@doc s1 train\n¿Vienes mañana? Sí, claro.\n",
    "hu.txt": "@doc h1 test\nSzép napunk van, ugye?\n",
}


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    d = tmp_path / "corpus"
    d.mkdir()
    for name, text in CORPUS.items():
        (d / name).write_text(text, encoding="utf-8")
    return d


def snapshot(out: Path) -> dict[str, bytes]:
    """The utterance files under ``out`` (style.json, the run's speech style, left out)."""
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != "style.json"}


def test_cli_outputs_determinism_jobs_and_resume(
    corpus_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_a, out_b = tmp_path / "a", tmp_path / "b"
    assert synth_mini.main(["--corpus-dir", str(corpus_dir), "--out-dir", str(out_a)]) == 0
    summary = capsys.readouterr().out
    assert "synthesised 5 utterances" in summary and "skipped 0" in summary
    files_a = snapshot(out_a)
    ids = ["en1-e1", "en2-e2", "en1-e3", "es1-s1", "hu1-h1"]
    assert sorted(files_a) == sorted(
        f"{sub}/{u}.{ext}"
        for u in ids
        for sub, ext in [("wav", "wav"), ("ref", "ctm"), ("meta", "json")]
    )
    # the same files, byte for byte, from two jobs run in the opposite order
    for job in ("2", "1"):
        argv = [
            "--corpus-dir",
            str(corpus_dir),
            "--out-dir",
            str(out_b),
            "--job",
            job,
            "--num-jobs",
            "2",
        ]
        assert synth_mini.main(argv) == 0
    assert "synthesised 3 utterances" in capsys.readouterr().out.splitlines()[-1]
    files_b = snapshot(out_b)
    # the jobs read (and the first one wrote) their splits: every 2nd utterance
    assert files_b.pop("split2/1/ids") == b"en1-e1\nen1-e3\nhu1-h1\n"
    assert files_b.pop("split2/2/ids") == b"en2-e2\nes1-s1\n"
    assert files_b == files_a

    info = sf.info(str(out_a / "wav" / "en1-e1.wav"))
    assert (info.samplerate, info.channels, info.subtype) == (16000, 1, "PCM_16")
    meta = json.loads((out_a / "meta" / "en1-e1.json").read_text(encoding="utf-8"))
    assert meta["text"] == "Hello, my friend. How are you?"
    assert (meta["spk"], meta["lang"], meta["split"], meta["doc_id"]) == (
        "en1",
        "en",
        "train",
        "e1",
    )
    assert meta["n_words"] == 6 and meta["sample_rate"] == 16000
    assert abs(meta["duration"] - info.frames / 16000) < 1e-6
    ctm = (out_a / "ref" / "en1-e1.ctm").read_text(encoding="utf-8").splitlines()
    assert [line.split()[4] for line in ctm] == ["hello", "my", "friend", "how", "are", "you"]

    # resume: nothing to do; an incomplete utterance (no meta) is redone
    wav = out_a / "wav" / "en1-e1.wav"
    mtime = wav.stat().st_mtime_ns
    (out_a / "meta" / "es1-s1.json").unlink()
    argv = ["--corpus-dir", str(corpus_dir), "--out-dir", str(out_a), "--langs", "en,es"]
    assert synth_mini.main(argv) == 0
    summary = capsys.readouterr().out
    assert "synthesised 1 utterances" in summary and "skipped 3" in summary
    assert wav.stat().st_mtime_ns == mtime
    assert snapshot(out_a) == files_a
    assert not list(out_a.rglob(".*tmp*"))

    # a document whose text changed is synthesised again, the others are kept
    (corpus_dir / "hu.txt").write_text("@doc h1 test\nSzép napunk van.\n", encoding="utf-8")
    assert synth_mini.main(["--corpus-dir", str(corpus_dir), "--out-dir", str(out_a)]) == 0
    summary = capsys.readouterr().out
    assert "synthesised 1 utterances" in summary and "skipped 4" in summary
    meta = json.loads((out_a / "meta" / "hu1-h1.json").read_text(encoding="utf-8"))
    assert meta["text"] == "Szép napunk van." and meta["n_words"] == 3


def test_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "out")
    assert synth_mini.main(["--corpus-dir", str(tmp_path / "none"), "--out-dir", out]) == 2
    (tmp_path / "en.txt").write_text("Stray.\n", encoding="utf-8")
    assert synth_mini.main(["--corpus-dir", str(tmp_path), "--out-dir", out]) == 1
    assert f"{tmp_path / 'en.txt'}:1:" in capsys.readouterr().err
