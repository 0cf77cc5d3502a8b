"""Timed words and the one pause formula (every stage and ``restore`` use it).

A :class:`TimedWord` is a word with its start and end time in seconds. :func:`pauses`
turns a document's timed words into the pause after each word; :func:`iter_pauses` is
the same formula for a stream (one word of lookahead), so the restore readers never
hold a whole document. Nothing else in the package computes a pause.

The formula:

- **Inside a document**, the pause after word ``i`` is ``start(i+1) - end(i)``, rounded
  to the millisecond (the resolution of CTMs and of ``words.tsv``, so that a pause
  read back from either is bit-identical to the one computed here).
- **Overlaps** up to :data:`OVERLAP_TOLERANCE` (1 ms, float and rounding noise) are
  clipped to 0. A larger overlap, a word that ends before it starts, or a last word
  that ends after ``end_of_audio`` is a :class:`~punct.errors.PunctInputError` naming
  the document (utterance or recording), the file and the line where known. Timings
  are never silently repaired.
- **The last word of a document** gets :data:`END_OF_DOCUMENT_PAUSE`, always, whether
  or not the end of the audio is known. See the constant for why.

A *document* is what a system decodes as one unit: an utterance of a data dir
(``words.tsv``), a CTM recording, a TextGrid, a JSONL record. Words without timings
(text-only input, an utterance without audio) have no pauses at all (None / NaN).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from punct.errors import PunctInputError

#: Overlaps up to this many seconds are float/rounding noise and are clipped to 0.
OVERLAP_TOLERANCE = 0.001

#: Pauses are rounded to this many decimals (seconds): 1 ms, as CTMs and words.tsv store.
PAUSE_DIGITS = 3

END_OF_DOCUMENT_PAUSE = 2.0
"""The pause after the last word of every document, in seconds (training and restore).

Why a constant, and why a long one:

- *One convention for training and inference.* At training time the audio end is
  known; at restore time (a CTM, a JSONL record) it is not. Giving the last word the
  trailing silence of the audio in training and "unknown" at restore meant a
  pause-aware model saw, at every document end, an input it never saw there in
  training. A value that depends on neither makes a document decoded by ``restore``
  from a CTM and by stage 6 from the data dir get identical inputs.
- *The truth about a document end is "the speaker stopped".* The trailing silence of a
  recording is an accident of where the file was cut (on the synthesised mini corpus
  about 80 ms, shorter than the 230 ms median pause at a sentence-internal mark), so a
  model trained on it learns "short pause, no mark" exactly where every document ends
  with a sentence-final mark.
- *Long, but inside every encoding's range and rarely seen elsewhere.* 2 s is longer
  than nearly all sentence-internal pauses and hesitations, inside the 0-10 s range of
  AutoPunct's continuous and discrete silence encodings (the discrete encoding's 1 s
  averaging window around 2 s then learns mostly from document ends) and below the
  BRNN's 5 s clip. "Unknown" (NaN) was the alternative; it tells the continuous
  encoding and the BRNN "0 s pause", the very signal that suppressed the final mark.
"""


@dataclass(frozen=True, init=False)
class TimedWord:
    """A word with its start and end time in seconds (``line``: its source line, if any).

    Frozen; one is made per word a timed reader reads (a CTM line), so its ``__init__``
    fills the instance dictionary in one call, as ``WordRow``'s does (tests/test_timed.py
    holds it to the declared fields)."""

    word: str
    start: float
    end: float
    line: int | None = field(default=None, compare=False)

    def __init__(self, word: str, start: float, end: float, line: int | None = None) -> None:
        self.__dict__.update(word=word, start=start, end=end, line=line)

    @property
    def duration(self) -> float:
        """End minus start, in seconds."""
        return self.end - self.start


def _error(doc_id: str, message: str, path: str | Path | None, line: int | None
           ) -> PunctInputError:
    who = f"{doc_id}: " if doc_id else ""
    return PunctInputError(f"{who}{message}", path, line)


def iter_pauses(
    words: Iterable[TimedWord],
    end_of_audio: float | None = None,
    doc_id: str = "",
    path: str | Path | None = None,
    on_overlap: Callable[[str], None] | None = None,
) -> Iterator[tuple[TimedWord, float]]:
    """``(word, pause after it)`` for a document's words, reading one word ahead.

    The formula of the module docstring. ``end_of_audio`` (seconds, same origin as the
    times) is only checked: the last word must not end after it. ``doc_id`` (e.g.
    ``"utterance u1"``, ``"recording r1"``) and ``path`` name the document in errors;
    a word's ``line`` is the error's line. ``on_overlap`` (inference: ASR output may
    overlap words) turns a larger overlap into a pause of 0 and is called with the
    message instead of raising it; training data keeps the error.
    """
    prev: TimedWord | None = None
    pos = 0
    for word in words:
        pos += 1
        _check_word(word, pos, doc_id, path)
        if prev is not None:
            try:
                gap = _gap(prev, word, pos - 1, doc_id, path)
            except PunctInputError as err:
                if on_overlap is None or "overlapping words" not in err.message:
                    raise
                on_overlap(str(err))
                gap = 0.0
            yield prev, gap
        prev = word
    if prev is None:
        return
    if end_of_audio is not None and prev.end - end_of_audio > OVERLAP_TOLERANCE:
        raise _error(doc_id, f"word {pos} {prev.word!r} ends at {prev.end:.3f} s, "
                     f"{(prev.end - end_of_audio) * 1000:.1f} ms after the end of the audio "
                     f"({end_of_audio:.3f} s)", path, prev.line)
    yield prev, END_OF_DOCUMENT_PAUSE


def pauses(
    words: Sequence[TimedWord],
    end_of_audio: float | None = None,
    doc_id: str = "",
    path: str | Path | None = None,
) -> list[float]:
    """The pause after each of a document's words (seconds); see :func:`iter_pauses`."""
    return [p for _, p in iter_pauses(words, end_of_audio, doc_id, path)]


def _check_word(word: TimedWord, pos: int, doc_id: str, path: str | Path | None) -> None:
    if word.end < word.start - OVERLAP_TOLERANCE:
        raise _error(doc_id, f"word {pos} {word.word!r} ends ({word.end:.3f} s) before it "
                     f"starts ({word.start:.3f} s)", path, word.line)


def _gap(prev: TimedWord, nxt: TimedWord, pos: int, doc_id: str,
         path: str | Path | None) -> float:
    gap = nxt.start - prev.end
    if gap < -OVERLAP_TOLERANCE:
        raise _error(doc_id, f"word {pos + 1} {nxt.word!r} starts at {nxt.start:.3f} s, "
                     f"{-gap * 1000:.1f} ms before word {pos} {prev.word!r} ends "
                     f"({prev.end:.3f} s): overlapping words", path, nxt.line)
    return max(0.0, round(gap, PAUSE_DIGITS)) + 0.0  # + 0.0: never -0.0
