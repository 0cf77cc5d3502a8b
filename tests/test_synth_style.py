"""The mini synthesis' speech style: pauses that are not the label, hesitations, rate jitter.

Seeded and deterministic, the configured shares roughly respected, the reference timings
moved exactly with the audio, and the options reachable from the command line.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from punct.bin import synth_mini
from punct.data.mini_corpus import Doc
from punct.data.timed import TimedWord
from punct.errors import PunctInputError
from punct.labels import parse_text
from punct.synth.espeak import RATE_RANGE
from punct.synth.mini import VOICE_SETTINGS, plan_utterances, synthesize_utterance
from punct.synth.style import (
    AS_READ,
    SpeechStyle,
    boundary_kind,
    jitter_rate,
    plan_edits,
    restyle,
    rng_for,
)

SR = 1000  # one sample per millisecond keeps the arithmetic readable


def long_text(n_sentences: int = 300) -> str:
    """Sentences of 12 words with a comma after the 5th word."""
    sentences = []
    for s in range(n_sentences):
        words = [f"w{s}x{k}" for k in range(12)]
        words[4] += ","
        sentences.append(" ".join(words).capitalize() + ".")
    return " ".join(sentences)


def as_read(tokens: list) -> tuple[np.ndarray, list[TimedWord]]:
    """Audio of eSpeak's shape: word i is 100 ms of the value i + 1; 200 ms of silence
    after a comma or period, none elsewhere (words are contiguous)."""
    pieces, words, t = [], [], 0
    for i, tok in enumerate(tokens):
        pieces.append(np.full(100, i + 1, dtype=np.int32))
        words.append(TimedWord(tok.word, t / SR, (t + 100) / SR))
        t += 100
        if i + 1 < len(tokens) and tok.punct:
            pieces.append(np.zeros(200, dtype=np.int32))
            t += 200
    pieces.append(np.zeros(80, dtype=np.int32))
    return np.concatenate(pieces), words


def shares(tokens: list, edits: list) -> dict[str, float]:
    kinds = [boundary_kind(tokens[i], tokens[i + 1]) for i in range(len(tokens) - 1)]
    out = {}
    for kind, edit_kind in (("comma", "shortened"), ("sentence_end", "shortened"),
                            ("none", "hesitation")):
        idx = {i for i, k in enumerate(kinds) if k == kind}
        out[kind] = sum(e.after in idx and e.kind == edit_kind for e in edits) / len(idx)
    return out


def test_shares_are_roughly_respected_and_deterministic() -> None:
    tokens = parse_text(long_text())
    _, words = as_read(tokens)
    style = SpeechStyle(seed=7, comma_no_pause=0.5, sentence_no_pause=0.25, hesitation=0.1)
    edits = plan_edits(tokens, words, SR, style, rng_for(style, "u1", "pauses"))
    got = shares(tokens, edits)
    assert got["comma"] == pytest.approx(0.5, abs=0.07)  # 300 commas
    assert got["sentence_end"] == pytest.approx(0.25, abs=0.07)  # 299 sentence ends
    assert got["none"] == pytest.approx(0.1, abs=0.03)  # about 3000 plain boundaries
    # the same seed and utterance give the same edits; another seed or utterance do not
    assert plan_edits(tokens, words, SR, style, rng_for(style, "u1", "pauses")) == edits
    other = SpeechStyle(seed=8, comma_no_pause=0.5, sentence_no_pause=0.25, hesitation=0.1)
    assert plan_edits(tokens, words, SR, other, rng_for(other, "u1", "pauses")) != edits
    assert plan_edits(tokens, words, SR, style, rng_for(style, "u2", "pauses")) != edits
    # a larger share only adds edits: every boundary draws the same numbers
    more = SpeechStyle(seed=7, comma_no_pause=0.8, sentence_no_pause=0.25, hesitation=0.1)
    assert set(edits) <= set(plan_edits(tokens, words, SR, more, rng_for(more, "u1", "pauses")))
    # nothing at all as read
    assert plan_edits(tokens, words, SR, AS_READ, rng_for(AS_READ, "u1", "pauses")) == []


def test_edits_move_audio_and_timings_together() -> None:
    tokens = parse_text(long_text(40))
    samples, words = as_read(tokens)
    style = SpeechStyle(seed=3, comma_no_pause=0.6, sentence_no_pause=0.4, hesitation=0.2,
                        short_pause_max=0.05, hesitation_min=0.1, hesitation_max=0.3)
    audio, moved, edits = restyle(samples, SR, tokens, words, style, "u")
    assert audio.dtype == samples.dtype
    assert len(audio) == len(samples) + sum(e.insert - e.remove for e in edits)
    assert [w.word for w in moved] == [w.word for w in words]
    by_after = {e.after: e for e in edits}
    for i, w in enumerate(moved):
        a, b = round(w.start * SR), round(w.end * SR)
        block = audio[a:b]
        assert b - a == 100
        # the word's own samples (the fades of a hesitation touch only 5 ms at its edges)
        assert np.all(block[5:-5] == i + 1), i
        if i + 1 == len(moved):
            break
        gap = moved[i + 1].start - w.end
        before = words[i + 1].start - words[i].end
        e = by_after.get(i)
        if e is None:
            assert gap == pytest.approx(before)
        elif e.kind == "shortened":
            assert 0.0 <= gap <= 0.05 + 1e-9 and before == pytest.approx(0.2)
        else:
            assert before == 0.0 and 0.1 - 1e-9 <= gap <= 0.3 + 1e-9
            assert np.all(audio[round(w.end * SR):round(moved[i + 1].start * SR)] == 0)
    assert {e.kind for e in edits} == {"shortened", "hesitation"}
    # the document's last word and its trailing silence are never touched
    assert len(audio) - round(moved[-1].end * SR) == 80


def test_rate_jitter_is_seeded_and_bounded() -> None:
    style = SpeechStyle(seed=5, rate_jitter=0.2)
    rates = [jitter_rate(170, style, f"u{k}", RATE_RANGE) for k in range(400)]
    assert min(rates) >= 136 and max(rates) <= 204
    assert min(rates) < 145 and max(rates) > 195  # the whole range is used
    assert rates == [jitter_rate(170, style, f"u{k}", RATE_RANGE) for k in range(400)]
    assert jitter_rate(170, AS_READ, "u0", RATE_RANGE) == 170
    assert jitter_rate(440, SpeechStyle(rate_jitter=0.5), "u3", RATE_RANGE) <= RATE_RANGE[1]


def test_style_validation_and_mapping_errors() -> None:
    with pytest.raises(ValueError, match="comma_no_pause"):
        SpeechStyle(comma_no_pause=1.5)
    with pytest.raises(ValueError, match="hesitation_min"):
        SpeechStyle(hesitation_min=0.5, hesitation_max=0.2)
    assert SpeechStyle.from_mapping({"seed": 3, "hesitation": 0}) == SpeechStyle(
        seed=3, hesitation=0.0)
    with pytest.raises(PunctInputError, match=r"s\.yaml: unknown speech style key 'pauses'"):
        SpeechStyle.from_mapping({"pauses": 1}, "s.yaml")
    with pytest.raises(PunctInputError, match=r"s\.yaml: .*rate_jitter"):
        SpeechStyle.from_mapping({"rate_jitter": 2}, "s.yaml")
    with pytest.raises(PunctInputError, match="expected a number"):
        SpeechStyle.from_mapping({"seed": "one"}, "s.yaml")


DOCS = [Doc("en_a01", "en", "train",
            ["Hello, my old friend, how are you today?", "The weather is fine and the sun is "
             "out, so we walk along the river.", "It was a long day. We are tired now."],
            "en.txt", 1),
        Doc("en_b02", "en", "test", ["Good night, everyone.", "See you tomorrow."],
            "en.txt", 6)]


def test_plans_carry_the_style_and_the_jittered_rate() -> None:
    style = SpeechStyle(seed=2, rate_jitter=0.15)
    plans = plan_utterances(DOCS, style)
    assert plans == plan_utterances(DOCS, style)
    for plan, setting in zip(plans, VOICE_SETTINGS["en"], strict=False):
        assert plan.style == style
        assert abs(plan.rate - setting.rate) <= 0.15 * setting.rate + 1
    assert [p.rate for p in plan_utterances(DOCS)] == [s.rate for s in VOICE_SETTINGS["en"]]
    assert all(p.style is None for p in plan_utterances(DOCS))


def test_synthesised_speech_follows_the_style() -> None:
    """eSpeak NG: every comma and sentence end loses its pause, a hesitation is put at
    every plain boundary, the words stay in order and the result is reproducible."""
    style = SpeechStyle(seed=1, comma_no_pause=1.0, sentence_no_pause=1.0,
                        short_pause_max=0.0, hesitation=1.0, hesitation_min=0.2,
                        hesitation_max=0.2, rate_jitter=0.0)
    plan = plan_utterances(DOCS[:1], style)[0]
    read = synthesize_utterance(plan_utterances(DOCS[:1])[0])
    utt = synthesize_utterance(plan)
    tokens = parse_text(plan.text)
    assert [w.word for w in utt.words] == [t.word for t in tokens]
    for i in range(len(tokens) - 1):
        kind = boundary_kind(tokens[i], tokens[i + 1])
        gap = utt.words[i + 1].start - utt.words[i].end
        as_read_gap = read.words[i + 1].start - read.words[i].end
        if kind in ("comma", "sentence_end"):
            assert as_read_gap > 0.1 and gap < 0.002, (tokens[i].form, gap)
        elif kind == "none":
            assert gap == pytest.approx(as_read_gap + 0.2, abs=0.002), (tokens[i].form, gap)
        assert gap >= 0
    again = synthesize_utterance(plan)
    assert np.array_equal(again.samples, utt.samples) and again.words == utt.words


def test_cli_style_file_flags_and_as_read(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "en.txt").write_text("@doc e1 train\nHello, my friend. How are you, then?\n",
                                   encoding="utf-8")
    style = tmp_path / "style.yaml"
    style.write_text("seed: 4\nhesitation: 0.0\nrate_jitter: 0.1\n", encoding="utf-8")
    out = tmp_path / "out"
    args = ["--corpus-dir", str(corpus), "--out-dir", str(out)]
    assert synth_mini.main([*args, "--style", str(style), "--comma-no-pause", "1"]) == 0
    meta = json.loads((out / "meta" / "en1-e1.json").read_text(encoding="utf-8"))
    assert meta["style"] == {**SpeechStyle().__dict__, "seed": 4, "hesitation": 0.0,
                             "rate_jitter": 0.1, "comma_no_pause": 1.0}
    styled = sf.read(out / "wav" / "en1-e1.wav")[0]
    assert json.loads((out / "style.json").read_text(encoding="utf-8")) == meta["style"]
    # the same style again: nothing to do; as read: synthesised again, and different
    assert synth_mini.main([*args, "--style", str(style), "--comma-no-pause", "1"]) == 0
    assert "skipped 1" in capsys.readouterr().out
    assert synth_mini.main([*args, "--as-read"]) == 0
    meta = json.loads((out / "meta" / "en1-e1.json").read_text(encoding="utf-8"))
    assert meta["style"] is None and meta["rate"] == VOICE_SETTINGS["en"][0].rate
    assert json.loads((out / "style.json").read_text(encoding="utf-8")) == {"as_read": True}
    assert len(sf.read(out / "wav" / "en1-e1.wav")[0]) > len(styled)  # the comma pauses
    style.write_text("seed: 4\nsilence: 1\n", encoding="utf-8")
    assert synth_mini.main([*args, "--style", str(style)]) == 1
    assert f"{style}: unknown speech style key 'silence'" in capsys.readouterr().err
