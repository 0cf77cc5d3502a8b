"""Speech for a text data dir: each utterance read aloud by eSpeak NG, for a real-ASR view.

:func:`render_set` turns a data dir with a word table (``data/<set>``, e.g. IWSLT's
validation blocks) into a data dir with audio (``data/<set>_tts``) that a recogniser can
decode (:mod:`punct.align.asr_condition`):

- **What is read.** The reference text as a speaker would read it: the words' surface
  forms with their marks (eSpeak pauses at punctuation), the split clitics of tokenised
  corpora joined to their word (IWSLT's ``do n't``, ``it 's`` are read ``don't``,
  ``it's``), each sentence's first letter and a lone ``i`` upper-cased (eSpeak NG takes
  a period before a lower-case word for an abbreviation and makes no pause there).
- **Who reads it.** One voice of ``voices`` and a rate (words per minute) in ``rates``
  per utterance, drawn from a generator seeded by (seed, utterance id): the choice does
  not depend on which other utterances are rendered, nor in what order.
- **In pieces.** An utterance is synthesised one sentence at a time (a sentence longer
  than ``2 * piece_words`` is cut after a word with a mark once it has ``piece_words``
  words, or at ``2 * piece_words``), and the pieces are resampled to 16 kHz and appended
  to the WAV file as they come, so memory stays bounded for 1000-word blocks. Between
  two pieces goes the pause eSpeak itself makes at the mark that ends the first one:
  measured once per voice, rate and mark as the extra length of two probe sentences read
  together over the two read apart.

Outputs: ``wav/<utt>.wav`` (16 kHz mono PCM-16), ``wav.scp``, ``utt2spk``/``spk2utt``
(each utterance its own speaker), ``utt2lang`` (``en``), ``text`` (the reference),
``words.tsv`` (the reference rows, no timings), ``score_label_set`` (copied when the
source has one) and ``style.json`` (voice, rate and pitch of every utterance). Rendering
resumes: a WAV file is written to a temporary name and renamed when complete, and an
utterance whose WAV exists with the setting ``style.json`` records for it is skipped.
"""

from __future__ import annotations

import json
import re
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from punct.atomic import atomic_path, atomic_write_text
from punct.errors import PunctInputError
from punct.extras import require
from punct.features.resample import resample_int16
from punct.kaldi import copy_set_markers, read_utt2lang, spk2utt_from_utt2spk, write_kv
from punct.labels import CANONICAL, OPENING_LABELS
from punct.synth.espeak import Engine, EspeakError, get_engine
from punct.synth.style import SENTENCE_END_MARKS
from punct.wordtable import WordRow, read_word_table, render_rows, write_word_table

OUT_RATE = 16000
LANGUAGE = "en"
#: The English eSpeak NG voices that pocketsphinx recognises best (WER on 120 IWSLT words
#: at 160 wpm: +f2 51%, +f5 55%, +klatt4 59%; +f1 70%, +m3 83%, plain en-us 85%): two
#: female voices and a male one on eSpeak's Klatt synthesiser (docs/ASR.md).
DEFAULT_VOICES: tuple[str, ...] = ("en-us+f2", "en-us+f5", "en-us+klatt4")
DEFAULT_RATES: tuple[int, int] = (140, 175)
DEFAULT_PITCH = 50
DEFAULT_MAX_WORDS = 6000
PIECE_WORDS = 40
MAX_GAP_S = 1.0
#: Tokens that tokenised English splits off the word before (``do n't``, ``it 's``).
CLITICS = frozenset({"n't", "'s", "'re", "'m", "'ll", "'ve", "'d"})


@dataclass(frozen=True)
class RenderSetting:
    """The eSpeak voice, rate (words per minute) and pitch (0-100) of one utterance."""

    voice: str
    rate: int
    pitch: int = DEFAULT_PITCH


@dataclass(frozen=True)
class Piece:
    """Text given to eSpeak in one call, and the mark its last word closes with ("": none)."""

    text: str
    end_mark: str
    words: int


def choose_setting(utt_id: str, seed: int, voices: Sequence[str] = DEFAULT_VOICES,
                   rates: tuple[int, int] = DEFAULT_RATES) -> RenderSetting:
    """The voice and rate of ``utt_id``, drawn uniformly with a generator seeded by
    (``seed``, utterance id); ``rates`` is an inclusive range."""
    if not voices:
        raise PunctInputError("no voices to choose from")
    if rates[0] > rates[1]:
        raise PunctInputError(f"empty rate range {rates}")
    rng = np.random.default_rng([seed, zlib.crc32(f"{utt_id}/voice".encode())])
    voice = voices[int(rng.integers(len(voices)))]
    rate = int(rng.integers(rates[0], rates[1] + 1))
    return RenderSetting(voice, rate)


def _closing(row: WordRow) -> str:
    return "".join(CANONICAL[p] for p in row.punct if p not in OPENING_LABELS)


def _opening(row: WordRow) -> str:
    return "".join(CANONICAL[p] for p in row.punct if p in OPENING_LABELS)


def _spoken_form(form: str, sentence_start: bool) -> str:
    if form == "i" or form.startswith("i'"):
        return "I" + form[1:]
    if sentence_start and form[:1].islower():
        return form[0].upper() + form[1:]
    return form


def spoken_pieces(rows: Sequence[WordRow], piece_words: int = PIECE_WORDS) -> list[Piece]:
    """The text of one utterance as eSpeak reads it (module docstring), in pieces."""
    if piece_words < 1:
        raise PunctInputError(f"piece_words must be positive, got {piece_words}")
    pieces: list[Piece] = []
    parts: list[str] = []
    count = 0
    sentence_start = True
    for i, row in enumerate(rows):
        attached = i > 0 and row.word in CLITICS and not _opening(row)
        text = _spoken_form(row.form, sentence_start and not attached)
        if attached and parts:
            parts[-1] += text + _closing(row)
        else:
            parts.append(_opening(row) + text + _closing(row))
            count += 1
        closing = [p for p in row.punct if p not in OPENING_LABELS]
        sentence_start = bool(SENTENCE_END_MARKS.intersection(closing))
        nxt = rows[i + 1] if i + 1 < len(rows) else None
        if nxt is not None and nxt.word in CLITICS and not _opening(nxt):
            continue  # the clitic belongs to this piece
        if (sentence_start or nxt is None or count >= 2 * piece_words
                or (count >= piece_words and closing)):
            pieces.append(Piece(" ".join(parts), _closing(row)[-1:], count))
            parts, count = [], 0
    return pieces


@lru_cache(maxsize=256)
def pause_samples(engine: Engine, setting: RenderSetting, mark: str) -> int:
    """Samples (at the engine's rate) of the pause eSpeak makes after ``mark`` beyond the
    silence that ends and starts separately read sentences (0 without a mark)."""
    if not mark:
        return 0
    first = f"It was one{mark}"
    second = "It was two." if mark in ".?!…" else "it was two."

    def length(text: str) -> int:
        return len(engine.synthesize(text, setting.voice, setting.rate, setting.pitch).samples)

    extra = length(f"{first} {second}") - length(first) - length(second)
    return int(min(max(extra, 0), MAX_GAP_S * engine.sample_rate))


def render_utterance(rows: Sequence[WordRow], setting: RenderSetting, path: Path,
                     engine: Engine | None = None, piece_words: int = PIECE_WORDS) -> float:
    """Read ``rows`` with ``setting`` into the 16 kHz WAV file ``path`` (written to a
    temporary name, renamed when complete); the seconds of audio are returned."""
    engine = engine or get_engine()
    sf = require("soundfile", "align", "writing wav files")  # optional extra: audio I/O
    n_out = 0
    with atomic_path(path) as tmp:
        with sf.SoundFile(tmp, "w", samplerate=OUT_RATE, channels=1, subtype="PCM_16",
                          format="WAV") as out:
            pieces = spoken_pieces(rows, piece_words)
            for k, piece in enumerate(pieces):
                result = engine.synthesize(piece.text, setting.voice, setting.rate,
                                           setting.pitch)
                samples = result.samples
                if k + 1 < len(pieces):
                    gap = pause_samples(engine, setting, piece.end_mark)
                    samples = np.concatenate([samples, np.zeros(gap, dtype=np.int16)])
                audio = resample_int16(samples, result.sample_rate, OUT_RATE)
                out.write(audio)
                n_out += len(audio)
    return n_out / OUT_RATE


def select_utterances(table: Mapping[str, Sequence[WordRow]], max_words: int | None
                      ) -> list[str]:
    """Whole utterances in table order until they hold at least ``max_words`` words
    (all of them when ``max_words`` is None or 0)."""
    chosen: list[str] = []
    total = 0
    for utt, rows in table.items():
        if max_words and total >= max_words:
            break
        chosen.append(utt)
        total += len(rows)
    return chosen


def _read_styles(path: Path) -> dict[str, dict]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return dict(data["utterances"])
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def render_set(data_dir: Path, out_dir: Path, seed: int = 1,
               voices: Sequence[str] = DEFAULT_VOICES, rates: tuple[int, int] = DEFAULT_RATES,
               max_words: int | None = DEFAULT_MAX_WORDS, piece_words: int = PIECE_WORDS,
               progress: Callable[[str], None] | None = None,
               engine: Engine | None = None) -> dict[str, object]:
    """Write ``out_dir`` (module docstring) from the first ``max_words`` words of
    ``data_dir``; returns the summary (utterances rendered and skipped, words, seconds
    of audio and of rendering)."""
    data_dir, out_dir = Path(data_dir), Path(out_dir)
    table = read_word_table(data_dir / "words.tsv")
    langs = read_utt2lang(data_dir / "utt2lang", missing_ok=True)
    utts = select_utterances(table, max_words)
    for utt in utts:
        if langs.get(utt, LANGUAGE) != LANGUAGE:
            raise PunctInputError(f"utterance {utt} is in {langs[utt]!r}: only English "
                                  "(en) is rendered", data_dir / "utt2lang")
    out_dir.mkdir(parents=True, exist_ok=True)
    style_path = out_dir / "style.json"
    styles = _read_styles(style_path)
    header = {"seed": seed, "voices": list(voices), "rates": list(rates),
              "sample_rate": OUT_RATE}
    rendered = skipped = words = 0
    audio_s = render_s = 0.0
    for i, utt in enumerate(utts):
        setting = choose_setting(utt, seed, voices, rates)
        wav = out_dir / "wav" / f"{utt}.wav"
        entry = {**asdict(setting), "words": len(table[utt])}
        old = styles.get(utt)
        if wav.is_file() and old is not None and all(old.get(k) == v
                                                      for k, v in entry.items()):
            skipped += 1
            continue
        start = time.perf_counter()
        try:
            seconds = render_utterance(table[utt], setting, wav, engine, piece_words)
        except EspeakError as err:
            reason = str(err).splitlines()[0]
            raise PunctInputError(f"eSpeak could not read utterance {utt} with voice "
                                  f"{setting.voice!r} at {setting.rate} wpm: {reason}",
                                  data_dir / "words.tsv") from None
        elapsed = time.perf_counter() - start
        rendered, words = rendered + 1, words + len(table[utt])
        audio_s, render_s = audio_s + seconds, render_s + elapsed
        styles[utt] = {**entry, "seconds": round(seconds, 3)}
        atomic_write_text(style_path, json.dumps({**header, "utterances": styles}, indent=1) + "\n")
        if progress:
            progress(f"{i + 1}/{len(utts)} {utt}: {setting.voice} at {setting.rate} wpm, "
                     f"{len(table[utt])} words, {seconds:.1f} s of audio in {elapsed:.1f} s")
    chosen = {u: styles[u] for u in utts}
    atomic_write_text(style_path, json.dumps({**header, "utterances": chosen}, indent=1) + "\n")
    write_kv(out_dir / "wav.scp", {u: str(out_dir / "wav" / f"{u}.wav") for u in utts})
    utt2spk = {u: u for u in utts}
    write_kv(out_dir / "utt2spk", utt2spk)
    write_kv(out_dir / "spk2utt", spk2utt_from_utt2spk(utt2spk))
    write_kv(out_dir / "utt2lang", {u: LANGUAGE for u in utts})
    write_kv(out_dir / "text", {u: render_rows(table[u]) for u in utts})
    write_word_table(out_dir / "words.tsv", {
        u: [r.with_timing(None, None, None) for r in table[u]] for u in utts})
    copy_set_markers(data_dir, out_dir)
    return {"utterances": len(utts), "rendered": rendered, "skipped": skipped,
            "words": sum(len(table[u]) for u in utts), "rendered_words": words,
            "audio_seconds": round(audio_s, 3), "render_seconds": round(render_s, 3)}


def parse_voices(text: str) -> tuple[str, ...]:
    """Comma-separated voice names (empty entries dropped; at least one)."""
    voices = tuple(v.strip() for v in text.split(",") if v.strip())
    if not voices or any(re.search(r"\s", v) for v in voices):
        raise PunctInputError(f"expected comma-separated voice names, got {text!r}")
    return voices
