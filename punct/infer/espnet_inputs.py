"""Input readers of ``restore`` for ESPnet decode outputs -> ``Document`` stream.

- kaldi: ESPnet's (and Kaldi's) ``text``, ``<utt-id> <word> ...`` (e.g.
  ``exp/asr_*/decode_*/test/text``); one document per utterance, an id alone is an
  empty hypothesis.
- trn: sclite's ``hyp.trn`` as ESPnet scoring writes it (``score_wer/hyp.trn``),
  ``<word> ... (<id>)``, the id in parentheses at the end of the line; one document per
  line. A character-level file (``score_cer``, with ``<space>`` tokens) is refused.
- ctc-segments: the segments that ESPnet's CTC segmentation writes
  (``python -m espnet2.bin.asr_align``), ``<utt-id> <reco-id> <start> <end> <score>
  <text ...>``; one document per recording, whose lines must be contiguous and in time
  order. The words of a segment share its span (as a TextGrid interval holding several
  words), so the pauses between segments reach the model.

Errors name the file and line: a missing id, a duplicate id, a malformed time or score, a
segment without text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import BinaryIO

from punct.data.timed import TimedWord
from punct.errors import PunctInputError
from punct.infer.inputs import iter_lines, split_span, text_words, with_pauses
from punct.infer.stream import Document, InputWord

FORMATS = ("kaldi", "trn", "ctc-segments")
TRN_LINE = re.compile(r"^(?P<text>.*?)\s*\((?P<id>[^()\s]*)\)\s*$")
CHAR_SPACE = "<space>"


def check_new_id(seen: dict[str, int], doc_id: str, name: str, line: int) -> None:
    """Refuse a repeated utterance id (naming the line of its first use)."""
    if doc_id in seen:
        raise PunctInputError(f"utterance id {doc_id!r} appears again (first on line "
                              f"{seen[doc_id]})", name, line)
    seen[doc_id] = line


def read_kaldi_text(stream: BinaryIO, name: str) -> Iterator[Document]:
    """One document per line ``<utt-id> [<word> ...]`` of an ESPnet/Kaldi ``text`` file."""
    seen: dict[str, int] = {}
    for lineno, raw in iter_lines(stream, name):
        fields = raw.split(maxsplit=1)
        if not fields:
            raise PunctInputError("empty line: expected '<utt-id> <word> ...'", name, lineno)
        check_new_id(seen, fields[0], name, lineno)
        text = fields[1] if len(fields) > 1 else ""
        yield Document(fields[0], [InputWord(w) for w in text_words(text, name, lineno)])


def read_trn(stream: BinaryIO, name: str) -> Iterator[Document]:
    """One document per line ``<word> ... (<id>)`` of a word-level sclite trn file."""
    seen: dict[str, int] = {}
    for lineno, raw in iter_lines(stream, name):
        if not raw.strip():
            continue
        match = TRN_LINE.match(raw)
        if match is None or not match["id"]:
            raise PunctInputError(f"expected '<word> ... (<utt-id>)', found {raw.strip()!r}",
                                  name, lineno)
        if CHAR_SPACE in match["text"].split():
            raise PunctInputError(f"character-level trn ({CHAR_SPACE} tokens, score_cer): "
                                  "give the word-level hyp.trn (score_wer)", name, lineno)
        check_new_id(seen, match["id"], name, lineno)
        words = text_words(match["text"], name, lineno)
        yield Document(match["id"], [InputWord(w) for w in words])


def segment_number(text: str, what: str, name: str, line: int) -> float:
    """A finite float of a segments line, or an error naming the field."""
    try:
        value = float(text)
    except ValueError:
        raise PunctInputError(f"{what} {text!r} is not a number", name, line) from None
    if value != value or value in (float("inf"), float("-inf")):
        raise PunctInputError(f"{what} {text!r} is not a finite number", name, line)
    return value


def parse_segment(raw: str, name: str, line: int) -> tuple[str, float, float, str]:
    """``(reco, start, end, text)`` of one CTC segmentation line."""
    fields = raw.split(maxsplit=5)
    if len(fields) < 6:
        raise PunctInputError(
            f"expected '<utt-id> <reco-id> <start> <end> <score> <text ...>', found "
            f"{len(fields)} fields: {raw.strip()!r} (a segment needs its text: run "
            "asr_align with --print_utt_text true)", name, line)
    _utt, reco, start_s, end_s, score_s, text = fields
    start = segment_number(start_s, "start time", name, line)
    end = segment_number(end_s, "end time", name, line)
    segment_number(score_s, "score", name, line)
    if start < 0 or end < start:
        raise PunctInputError(f"bad segment times start={start_s} end={end_s}", name, line)
    return reco, start, end, text


def read_ctc_segments(stream: BinaryIO, name: str) -> Iterator[Document]:
    """One document per recording of a CTC segmentation output."""
    done: set[str] = set()
    reco: str | None = None
    timed: list[TimedWord] = []
    last_start = 0.0
    for lineno, raw in iter_lines(stream, name):
        if not raw.strip():
            continue
        seg_reco, start, end, text = parse_segment(raw, name, lineno)
        if seg_reco != reco:
            if reco is not None:
                yield finish_recording(reco, timed, name)
            if seg_reco in done:
                raise PunctInputError(f"recording {seg_reco!r} appears again after other "
                                      "recordings (sort the segments by recording)",
                                      name, lineno)
            done.add(seg_reco)
            reco, timed, last_start = seg_reco, [], 0.0
        if start < last_start - 1e-6:
            raise PunctInputError(f"segment starts at {start} before the previous segment "
                                  f"({last_start}): not in time order", name, lineno)
        last_start = start
        timed.extend(split_span(text_words(text, name, lineno), start, end, lineno))
    if reco is not None:
        yield finish_recording(reco, timed, name)


def finish_recording(reco: str, timed: list[TimedWord], name: str) -> Document:
    """The document of one recording's segments (pauses between them)."""
    return Document(reco, list(with_pauses(timed, None, f"recording {reco}", name)))
