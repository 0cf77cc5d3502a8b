"""Stage 0 of the mini recipe: plan and synthesise one utterance per corpus document.

Each document becomes one utterance spoken by eSpeak NG with one of (at least) two
voice settings per language, chosen by the document's index within its language.
The synthesiser's events give the reference word timings: a word starts at its
first WORD event; it ends where the next word starts, unless a pause (a run of
eSpeak pause phonemes of at least ``PAUSE_MIN_S``) comes first, in which case it
ends where the pause begins, refined on the audio energy. Words inside a phrase are
therefore contiguous and the pauses produced by punctuation show up as gaps.

With a :class:`~punct.synth.style.SpeechStyle` (the recipe's default) the speech is
then made more like real speech: some marks lose their pause, some unpunctuated
boundaries get a hesitation, and each utterance's speaking rate is jittered, all seeded
(:mod:`punct.synth.style`); the reference timings move with the audio.
"""

from __future__ import annotations

import bisect
import itertools
import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from punct.atomic import atomic_path, atomic_write_text
from punct.data.ctm import ctm_lines
from punct.data.mini_corpus import Doc
from punct.data.timed import TimedWord
from punct.errors import PunctInputError
from punct.extras import require
from punct.features.resample import resample_int16
from punct.labels import Token, parse_text
from punct.synth.espeak import RATE_RANGE, Engine, SynthEvent, SynthResult, get_engine
from punct.synth.style import SpeechStyle, jitter_rate, restyle

OUT_RATE = 16000
PAUSE_MIN_S = 0.03  # shorter pause phonemes (glottal stops, syllable marks) stay inside words
FRAME_S = 0.005  # energy frames for refining word edges at pauses
SILENCE_DB = -40.0  # a frame this far below the utterance's loud frames counts as silence


@dataclass(frozen=True)
class VoiceSetting:
    """An eSpeak voice name (language + variant), speaking rate (wpm) and pitch (0-100)."""

    voice: str
    rate: int
    pitch: int


# Speaker k of language L (spk = f"{L}{k}") uses VOICE_SETTINGS[L][k - 1].
VOICE_SETTINGS: dict[str, tuple[VoiceSetting, ...]] = {
    "en": (VoiceSetting("en-us+m3", 165, 45), VoiceSetting("en-us+f3", 180, 60)),
    "es": (VoiceSetting("es+m1", 160, 40), VoiceSetting("es+f2", 175, 65)),
    "eu": (VoiceSetting("eu+m3", 155, 45), VoiceSetting("eu+f4", 170, 60)),
    "hu": (VoiceSetting("hu+m2", 160, 40), VoiceSetting("hu+f3", 175, 60)),
}


@dataclass(frozen=True)
class UttPlan:
    """What to synthesise for one document (the recording id equals ``utt_id``)."""

    utt_id: str
    spk: str
    lang: str
    split: str
    doc_id: str
    voice: str
    rate: int
    pitch: int
    text: str
    style: SpeechStyle | None = None  # None: eSpeak's reading as it is


@dataclass(frozen=True)
class Utterance:
    """A synthesised utterance: 16 kHz int16 audio and reference word timings."""

    plan: UttPlan
    samples: np.ndarray
    sample_rate: int
    words: tuple[TimedWord, ...]

    @property
    def duration(self) -> float:
        return len(self.samples) / self.sample_rate


def plan_utterances(docs: Sequence[Doc], style: SpeechStyle | None = None) -> list[UttPlan]:
    """One utterance per document, in the documents' order.

    The text is the document's sentences joined by single spaces; the k-th document
    of a language (0-based, in the given order) gets setting ``k % n`` of that
    language, i.e. speaker ``f"{lang}{k % n + 1}"``. With a ``style`` the setting's
    rate is jittered per utterance (seeded by the style's seed and the utterance id)
    and the plan carries the style for :func:`synthesize_utterance`.
    """
    plans: list[UttPlan] = []
    per_lang: dict[str, int] = {}
    for doc in docs:
        if doc.lang not in VOICE_SETTINGS:
            raise PunctInputError(
                f"no voices for language {doc.lang!r} (known: {', '.join(VOICE_SETTINGS)})",
                doc.path,
                doc.line,
            )
        settings = VOICE_SETTINGS[doc.lang]
        index = per_lang.get(doc.lang, 0)
        per_lang[doc.lang] = index + 1
        k = index % len(settings)
        setting = settings[k]
        spk = f"{doc.lang}{k + 1}"
        utt_id = f"{spk}-{doc.doc_id}"
        rate = setting.rate
        if style is not None:
            rate = jitter_rate(rate, style, utt_id, RATE_RANGE)
        plans.append(
            UttPlan(
                utt_id=utt_id,
                spk=spk,
                lang=doc.lang,
                split=doc.split,
                doc_id=doc.doc_id,
                voice=setting.voice,
                rate=rate,
                pitch=setting.pitch,
                text=" ".join(doc.sentences),
                style=style,
            )
        )
    return plans


# ---------------------------------------------------------------------------
# Text as given to eSpeak

_ELLIPSIS = re.compile(r"\.{2,}|…")


def espeak_text(text: str, lang: str) -> str:
    """The text handed to eSpeak: ``text`` with the marks it would read aloud replaced.

    The result has the same length, so eSpeak's character offsets index ``text``.
    eSpeak NG 1.52 reads an ellipsis as "pont pont pont" in Hungarian; a semicolon
    plus spaces gives the same pause without speech.
    """
    if lang == "hu":
        text = _ELLIPSIS.sub(lambda m: ";" + " " * (len(m.group()) - 1), text)
    return text


# ---------------------------------------------------------------------------
# Word timings from the synthesiser's events


def _is_pause(event: SynthEvent) -> bool:
    return event.phoneme.startswith("_")


def pause_intervals(
    events: Sequence[SynthEvent], n_samples: int, min_len: int
) -> list[tuple[int, int]]:
    """Silent stretches ``[a, b)`` in samples, at least ``min_len`` long.

    They are the audio before the first phoneme and every run of pause phonemes
    that contains a long pause ``_:`` (what eSpeak puts at punctuation and before
    some conjunctions), up to the next spoken phoneme or the end. Runs of only short
    marks (``_!`` glottal stop, ``_|`` syllable break, ``_``), up to ~40 ms in
    Hungarian, are part of the speech.
    """
    phonemes = [e for e in events if e.kind == "phoneme"]
    out: list[tuple[int, int]] = []
    run_start: int | None = 0
    long_run = True  # the leading silence counts as a pause
    for ev in phonemes:
        if _is_pause(ev):
            if run_start is None:
                run_start, long_run = ev.sample, False
            long_run = long_run or ev.phoneme.startswith("_:")
        elif run_start is not None:
            if long_run:
                out.append((run_start, ev.sample))
            run_start = None
    if run_start is not None and long_run:
        out.append((run_start, n_samples))
    return [(a, b) for a, b in out if b - a >= min_len]


def _frame_db(samples: np.ndarray, frame: int) -> np.ndarray:
    """Frame energies in dB relative to the loud frames (95th percentile) of the utterance."""
    n = len(samples) // frame
    if n == 0:
        return np.zeros(0)
    x = samples[: n * frame].astype(np.float64).reshape(n, frame)
    power = (x * x).mean(axis=1) + 1e-3
    ref = float(np.percentile(power, 95))
    return 10.0 * np.log10(power / max(ref, 1e-3))


def _map_word_events(
    tokens: Sequence[Token], events: Sequence[SynthEvent]
) -> tuple[list[int | None], list[int | None]]:
    """The earliest and latest WORD event samples of each token (None without events).

    An event belongs to the first token that ends after its character offset, so
    events pointing at an opening mark go to the following word and the several
    events of a number or hyphenated word all go to that word.
    """
    ends = [tok.span[1] for tok in tokens]
    first: list[int | None] = [None] * len(tokens)
    last: list[int | None] = [None] * len(tokens)
    for ev in events:
        if ev.kind != "word":
            continue
        k = bisect.bisect_right(ends, ev.char_pos)
        if k >= len(tokens):
            continue
        lo, hi = first[k], last[k]
        first[k] = ev.sample if lo is None else min(lo, ev.sample)
        last[k] = ev.sample if hi is None else max(hi, ev.sample)
    return first, last


def _speech_end(start: int, bound: int, pauses: Sequence[tuple[int, int]]) -> int:
    """Where speech starting at ``start`` stops before ``bound``: the first pause inside."""
    for a, b in pauses:
        if b > start and a < bound and a > start:
            return a
    return bound


def _speech_start(start: int, bound: int, pauses: Sequence[tuple[int, int]]) -> int:
    """``start`` moved past a pause it lies in (e.g. the silence before the first phoneme)."""
    for a, b in pauses:
        if a <= start < b:
            return min(b, bound - 1)
    return start


def _split_group(
    tokens: Sequence[Token], a: int, e: int, events: Sequence[SynthEvent]
) -> list[int]:
    """Start samples for words that eSpeak spoke as one unit over ``[a, e)``.

    The unit's spoken phonemes are shared out in proportion to the words' lengths in
    characters ("in the" = I n | D @, "nem jött" = n E m | j Y t); each word starts at
    the onset of its first phoneme. With fewer phonemes than words, the interval is
    split in proportion to the lengths instead.
    """
    lengths = [max(1, len(tok.form)) for tok in tokens]
    total = sum(lengths)
    onsets = sorted(
        {
            ev.sample
            for ev in events
            if ev.kind == "phoneme" and not _is_pause(ev) and a <= ev.sample < e
        }
    )
    n = len(onsets)
    starts = [a]
    index = 0
    acc = 0
    for k, length in enumerate(lengths[:-1], start=1):
        acc += length
        if n >= len(tokens):
            # word k takes phonemes from ``index`` on; leave one for each later word
            index = min(max(round(n * acc / total), index + 1), n - (len(tokens) - k))
            candidate = onsets[index]
        else:
            candidate = round(a + (e - a) * acc / total)
        starts.append(max(int(candidate), starts[-1] + 1))
    return starts


def word_timings(
    text: str,
    result: SynthResult,
    path: str | None = None,
    line: int | None = None,
) -> list[TimedWord]:
    """Reference timings (seconds) of the words of ``parse_text(text)`` from eSpeak events.

    Raises PunctInputError when no word of the text got a WORD event, or when the
    event order cannot be reconciled with the text (non-increasing starts).
    """
    tokens = parse_text(text, path, line)
    if not tokens:
        raise PunctInputError("utterance text has no words", path, line)
    sr = result.sample_rate
    n_samples = len(result.samples)
    events = result.events
    pauses = pause_intervals(events, n_samples, round(PAUSE_MIN_S * sr))
    mapped, last_events = _map_word_events(tokens, events)
    timed = [i for i, s in enumerate(mapped) if s is not None]
    if not timed:
        raise PunctInputError(
            f"eSpeak gave no word timing for any word of {text[:60]!r}", path, line
        )
    starts: list[int | None] = list(mapped)
    # Words without events share the interval of the neighbour eSpeak merged them with.
    i = 0
    while i < len(tokens):
        if starts[i] is not None:
            i += 1
            continue
        j = i
        while j < len(tokens) and mapped[j] is None:
            j += 1
        if i > 0:
            lo, hi = i - 1, j  # group: previous timed word + untimed run
        else:
            lo, hi = i, j + 1  # leading run: joins the first timed word
        owner = i - 1 if i > 0 else j
        a, a_last = mapped[owner], last_events[owner]
        assert a is not None and a_last is not None
        nxt = next((mapped[k] for k in range(hi, len(tokens)) if mapped[k] is not None), n_samples)
        assert nxt is not None
        e = _speech_end(a_last, nxt, pauses)
        if e - a < hi - lo:
            raise PunctInputError(
                f"cannot time the words {[t.form for t in tokens[i:j]]}: eSpeak gave them no "
                "word events and no speech to share",
                path,
                line,
            )
        for k, s in zip(range(lo, hi), _split_group(tokens[lo:hi], a, e, events), strict=True):
            starts[k] = s
        i = j
    final_starts = [int(s) for s in starts if s is not None]
    if len(final_starts) != len(tokens) or any(b <= a for a, b in itertools.pairwise(final_starts)):
        raise PunctInputError(
            f"eSpeak word events are not in text order for {text[:60]!r}", path, line
        )
    # a word read as several eSpeak words (numbers, "2,500") speaks at least until its last one
    inner = [
        max(s, x) if x is not None else s for s, x in zip(final_starts, last_events, strict=True)
    ]
    return _refine(tokens, final_starts, inner, pauses, result)


def _refine(
    tokens: Sequence[Token],
    starts: list[int],
    inner: list[int],
    pauses: Sequence[tuple[int, int]],
    result: SynthResult,
) -> list[TimedWord]:
    """Ends at pauses, starts after leading silence, both tightened on the energy.

    ``inner[i]`` is the last sample known to lie in word i's speech (its last WORD
    event): pauses before it are inside the word.
    """
    sr = result.sample_rate
    n_samples = len(result.samples)
    frame = max(1, round(FRAME_S * sr))
    db = _frame_db(result.samples, frame)
    silent = db < SILENCE_DB
    out: list[TimedWord] = []
    prev_end = 0
    for i, tok in enumerate(tokens):
        bound = starts[i + 1] if i + 1 < len(tokens) else n_samples
        start = _speech_start(starts[i], bound, pauses)
        end = _speech_end(max(start, inner[i]), bound, pauses)
        if i == 0 or start > prev_end:
            # onset after silence: skip silent frames (keep at least one frame of the word)
            f = start // frame
            while f < len(silent) and silent[f] and (f + 2) * frame < end:
                f += 1
            start = max(start, f * frame)
        if end < bound or i + 1 == len(tokens):
            # offset before a pause: drop trailing silent frames
            f = (end - 1) // frame
            while f >= 0 and f < len(silent) and silent[f] and (f - 1) * frame > start:
                f -= 1
            end = min(end, (f + 1) * frame)
        prev_end = end
        out.append(TimedWord(tok.word, start / sr, end / sr))
    return out


# ---------------------------------------------------------------------------
# Synthesis and output files


def synthesize_utterance(plan: UttPlan, engine: Engine | None = None) -> Utterance:
    """Speak ``plan.text`` and return 16 kHz audio with reference word timings (restyled
    by ``plan.style`` when it has one)."""
    engine = engine or get_engine()
    spoken = espeak_text(plan.text, plan.lang)
    result = engine.synthesize(spoken, plan.voice, plan.rate, plan.pitch)
    words = word_timings(plan.text, result, path=plan.utt_id)
    samples = resample_int16(result.samples, result.sample_rate, OUT_RATE)
    duration = len(samples) / OUT_RATE
    clipped = [TimedWord(w.word, min(w.start, duration), min(w.end, duration)) for w in words]
    if plan.style is not None:
        tokens = parse_text(plan.text, plan.utt_id)
        samples, clipped, _ = restyle(samples, OUT_RATE, tokens, clipped, plan.style,
                                      plan.utt_id)
    return Utterance(plan, samples, OUT_RATE, tuple(clipped))


def output_paths(out_dir: str | Path, utt_id: str) -> dict[str, Path]:
    """The three files of an utterance: wav, ref (CTM) and meta (JSON)."""
    out = Path(out_dir)
    return {
        "wav": out / "wav" / f"{utt_id}.wav",
        "ref": out / "ref" / f"{utt_id}.ctm",
        "meta": out / "meta" / f"{utt_id}.json",
    }


def utterance_done(out_dir: str | Path, plan: UttPlan) -> bool:
    """True when all three files exist and the meta file (written last) records this very
    plan (same text, voice settings and speech style); a changed corpus entry or style is
    synthesised again."""
    paths = output_paths(out_dir, plan.utt_id)
    if not all(p.is_file() for p in paths.values()):
        return False
    try:
        meta = json.loads(paths["meta"].read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and all(meta.get(k) == v for k, v in asdict(plan).items())


def meta_dict(utt: Utterance) -> dict:
    """The JSON metadata of an utterance."""
    meta = asdict(utt.plan)
    meta.update(
        duration=round(utt.duration, 6),
        sample_rate=utt.sample_rate,
        n_words=len(utt.words),
    )
    return meta


def write_utterance(out_dir: str | Path, utt: Utterance) -> dict[str, Path]:
    """Write wav, CTM and meta atomically (meta last, so it marks completion)."""
    paths = output_paths(out_dir, utt.plan.utt_id)
    sf = require("soundfile", "align", "writing wav files")  # optional extra: audio I/O
    with atomic_path(paths["wav"]) as tmp:
        sf.write(tmp, utt.samples, utt.sample_rate, subtype="PCM_16", format="WAV")
    atomic_write_text(paths["ref"], "".join(ctm_lines(utt.plan.utt_id, utt.words)))
    meta = json.dumps(meta_dict(utt), ensure_ascii=False, indent=1, sort_keys=True) + "\n"
    atomic_write_text(paths["meta"], meta)
    return paths
