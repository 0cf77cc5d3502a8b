"""Speech more like real speech: pauses that are not the label, rate jitter (mini stage 0).

eSpeak NG puts a pause at every punctuation mark it reads and nowhere else, so on the
synthesised mini corpus the pause after a word all but *is* its label. A
:class:`SpeechStyle` loosens that, reproducibly:

- **Marked boundaries without their pause.** A share (``comma_no_pause``) of commas
  and a share (``sentence_no_pause``) of sentence ends (``.``, ``?``, ``!``, ``…``
  inside the document) lose eSpeak's pause: it is cut down to between none and
  ``short_pause_max`` seconds (uniformly), by removing silence from its middle. Other
  marks (``:``, ``;``, dashes, quotes) keep eSpeak's pause.
- **Hesitations.** A share (``hesitation``) of unpunctuated word boundaries (no closing
  mark on the word before, no opening mark on the word after) gets a silence of
  ``hesitation_min`` to ``hesitation_max`` seconds (uniformly), with 5 ms fades so the
  cut makes no click.
- **Speaking rate.** Each utterance's eSpeak rate is its voice setting's rate times a
  factor drawn uniformly from ``1 ± rate_jitter`` (applied when the plan is made, so the
  plan and the meta file record the rate used).

The document's last word is never touched (its pause is the end-of-document pause
anyway, ``punct.data.timed.END_OF_DOCUMENT_PAUSE``). Every draw comes from a generator
seeded by ``(seed, utterance id)``: the corpus is the same whatever the job split or
order, and every boundary draws the same two numbers whatever the shares, so raising
one share only adds edits. The reference word timings are moved with the audio, so
they stay exact.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from punct.data.timed import TimedWord
from punct.errors import PunctInputError
from punct.labels import OPENING_LABELS, Token

#: Closing marks that end a sentence (their pause is dropped at ``sentence_no_pause``).
SENTENCE_END_MARKS = frozenset({"PERIOD", "QUESTION", "EXCLAMATION", "ELLIPSIS"})
FADE_S = 0.005  # fade out / in around an inserted hesitation


@dataclass(frozen=True)
class SpeechStyle:
    """How the synthesised speech departs from eSpeak's reading (shares in [0, 1], s)."""

    seed: int = 1
    comma_no_pause: float = 0.5
    sentence_no_pause: float = 0.25
    short_pause_max: float = 0.08
    hesitation: float = 0.06
    hesitation_min: float = 0.15
    hesitation_max: float = 0.6
    rate_jitter: float = 0.15

    def __post_init__(self) -> None:
        for name in ("comma_no_pause", "sentence_no_pause", "hesitation"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise PunctInputError(f"speech style: {name} must be a share in [0, 1], "
                                      f"got {value}")
        if not 0.0 <= self.rate_jitter < 1.0:
            raise PunctInputError(f"speech style: rate_jitter must be in [0, 1), got "
                                  f"{self.rate_jitter}")
        if self.short_pause_max < 0 or not 0 <= self.hesitation_min <= self.hesitation_max:
            raise PunctInputError("speech style: need short_pause_max >= 0 and "
                                  "0 <= hesitation_min <= hesitation_max")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], path: str | Path | None = None
                     ) -> SpeechStyle:
        """A style from a mapping (e.g. a YAML file); unknown keys and bad values are
        PunctInputErrors naming ``path`` and the key."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key not in fields:
                raise PunctInputError(f"unknown speech style key {key!r} (known: "
                                      f"{', '.join(fields)})", path)
            kind = int if key == "seed" else float
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise PunctInputError(f"speech style key {key!r}: expected a number, got "
                                      f"{value!r}", path)
            values[key] = kind(value)
        try:
            return cls(**values)
        except ValueError as err:
            raise PunctInputError(str(err), path) from None


#: eSpeak's reading untouched: every mark's pause kept, no hesitation, voice rates as set.
AS_READ = SpeechStyle(comma_no_pause=0.0, sentence_no_pause=0.0, hesitation=0.0,
                      rate_jitter=0.0)


def rng_for(style: SpeechStyle, utt_id: str, purpose: str) -> np.random.Generator:
    """The generator of one utterance and purpose (``rate``, ``pauses``)."""
    return np.random.default_rng([style.seed, zlib.crc32(f"{utt_id}/{purpose}".encode())])


def jitter_rate(rate: int, style: SpeechStyle, utt_id: str, bounds: tuple[int, int]) -> int:
    """``rate`` times a factor from ``1 ± rate_jitter``, rounded, inside ``bounds``."""
    u = float(rng_for(style, utt_id, "rate").random())
    factor = 1.0 + style.rate_jitter * (2.0 * u - 1.0)
    return int(min(max(round(rate * factor), bounds[0]), bounds[1]))


@dataclass(frozen=True)
class Edit:
    """At boundary ``after`` (word index), remove ``remove`` samples at ``pos`` or insert
    ``insert`` samples of silence there; ``kind`` is ``shortened`` or ``hesitation``."""

    after: int
    pos: int
    remove: int
    insert: int
    kind: str


def boundary_kind(left: Token, right: Token) -> str:
    """``comma``, ``sentence_end``, ``other_mark`` or ``none`` for the boundary between
    two tokens."""
    closing = [m for m in left.punct if m not in OPENING_LABELS]
    if "COMMA" in closing:
        return "comma"
    if SENTENCE_END_MARKS.intersection(closing):
        return "sentence_end"
    if closing or any(m in OPENING_LABELS for m in right.punct):
        return "other_mark"
    return "none"


def plan_edits(tokens: Sequence[Token], words: Sequence[TimedWord], sample_rate: int,
               style: SpeechStyle, rng: np.random.Generator) -> list[Edit]:
    """The edits of one utterance (see the module docstring), in time order."""
    edits: list[Edit] = []
    for i in range(len(words) - 1):
        u_apply, u_length = float(rng.random()), float(rng.random())  # always two draws
        kind = boundary_kind(tokens[i], tokens[i + 1])
        a = round(words[i].end * sample_rate)
        b = round(words[i + 1].start * sample_rate)
        if kind in ("comma", "sentence_end"):
            share = style.comma_no_pause if kind == "comma" else style.sentence_no_pause
            keep = round(u_length * style.short_pause_max * sample_rate)
            if u_apply < share and b - a > keep:
                edits.append(Edit(i, a + keep // 2, b - a - keep, 0, "shortened"))
        elif kind == "none" and u_apply < style.hesitation:
            length = style.hesitation_min + u_length * (style.hesitation_max
                                                        - style.hesitation_min)
            edits.append(Edit(i, b, 0, round(length * sample_rate), "hesitation"))
    return edits


def apply_edits(samples: np.ndarray, sample_rate: int, words: Sequence[TimedWord],
                edits: Sequence[Edit]) -> tuple[np.ndarray, list[TimedWord]]:
    """The edited audio (same dtype) and the word timings moved with it."""
    x = samples.astype(np.float64)
    fade = max(1, round(FADE_S * sample_rate))
    for e in edits:
        if e.insert:
            lo, hi = max(0, e.pos - fade), min(len(x), e.pos + fade)
            x[lo:e.pos] *= np.linspace(1.0, 0.0, e.pos - lo, endpoint=False)
            x[e.pos:hi] *= np.linspace(0.0, 1.0, hi - e.pos, endpoint=False)
    pieces: list[np.ndarray] = []
    pos = 0
    shift = [0] * len(words)  # samples added before word i
    total = 0
    by_after = {e.after: e for e in edits}
    for i in range(len(words)):
        shift[i] = total
        e = by_after.get(i)
        if e is None:
            continue
        pieces.append(x[pos:e.pos])
        if e.insert:
            pieces.append(np.zeros(e.insert))
        pos = e.pos + e.remove
        total += e.insert - e.remove
    pieces.append(x[pos:])
    out = np.concatenate(pieces)
    if np.issubdtype(samples.dtype, np.integer):
        info = np.iinfo(samples.dtype)
        out = np.clip(np.rint(out), info.min, info.max)
    moved: list[TimedWord] = []
    for i, w in enumerate(words):
        start = w.start + shift[i] / sample_rate
        if moved and i - 1 in by_after:
            # times are not on the sample grid: a cut whole samples long may leave the
            # next word starting a fraction of a sample before the word before ends
            start = max(start, moved[-1].end)
        moved.append(TimedWord(w.word, start, max(start, w.end + shift[i] / sample_rate)))
    return out.astype(samples.dtype), moved


def restyle(samples: np.ndarray, sample_rate: int, tokens: Sequence[Token],
            words: Sequence[TimedWord], style: SpeechStyle, utt_id: str
            ) -> tuple[np.ndarray, list[TimedWord], list[Edit]]:
    """Apply ``style``'s pause edits to one utterance: (audio, word timings, edits)."""
    if len(tokens) != len(words):
        raise PunctInputError(f"{utt_id}: {len(tokens)} tokens but {len(words)} timed words")
    edits = plan_edits(tokens, words, sample_rate, style, rng_for(style, utt_id, "pauses"))
    audio, moved = apply_edits(samples, sample_rate, words, edits)
    duration = len(audio) / sample_rate
    moved = [TimedWord(w.word, min(w.start, duration), min(w.end, duration)) for w in moved]
    return audio, moved, edits
