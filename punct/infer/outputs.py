"""Output writers of ``restore``: restored segments -> text, Kaldi text, JSONL or word table.

- ``text``: one line per document, the punctuated, cased text (written segment by
  segment, so a very long document streams out);
- ``kaldi``: ``<id> <text>`` per document (like ``data/<set>/text``);
- ``jsonl``: ``{"id", "text", "sentences", "words": [{"word", "form", "punct", "cap",
  "start", "end", "pause_after", "probability", "probs"}]}`` per document (a document
  is held until its last segment); ``probs``: the model's probability of every mark
  label, ``probability``: the word's confidence (``punct.infer.scores``), both absent
  for non-speech tokens;
- ``table``: the word table (``punct.wordtable`` columns, header first), streamed;
- ``srt``/``vtt``: subtitles from timed words, cues chosen over each document
  (``punct.infer.cues``; ``cues``: ``max_chars``, ``max_seconds``, ``min_seconds``,
  ``line_chars``).

JSONL records also carry ``sentences``: the restored text cut after every sentence-final
mark.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

from punct.infer.scores import confidences, rounded_rows
from punct.infer.stream import Segment
from punct.infer.subtitles import SubtitleWriter, sentences
from punct.wordtable import COLUMNS, WordRow, format_row, render_rows

SUBTITLE_FORMATS = ("srt", "vtt")  # cues from timed words
FORMATS = ("text", "kaldi", "jsonl", "table", *SUBTITLE_FORMATS)


def _row_json(row: WordRow, scored: tuple[float, dict[str, float]] | None = None
              ) -> dict[str, Any]:
    out = {"word": row.word, "form": row.form, "punct": list(row.punct), "cap": row.cap,
           "start": row.start, "end": row.end, "pause_after": row.pause_after}
    if scored is not None:
        out["probability"], out["probs"] = scored
    return out


def word_scores(seg: Segment) -> list[tuple[float, dict[str, float]] | None]:
    """Per row of ``seg``, its confidence and its mark probabilities as JSONL shows them
    (rounded to 4 digits), or None (no scores, a non-speech token): the numbers
    ``round(confidence(p, marks), 4)`` and ``round(p[label], 4)`` of ``seg.probs`` would
    give, a segment's rows at a time (``punct.infer.scores``)."""
    rows = seg.rows
    scores = seg.scores
    if scores is None:
        return [None] * len(rows)
    where = range(scores.n_rows) if scores.speech is None else scores.speech
    conf = confidences(scores.values, scores.labels, [rows[i].punct for i in where])
    out: list[tuple[float, dict[str, float]] | None] = [None] * len(rows)
    for i, c, probs in zip(where, conf, rounded_rows(scores.values), strict=True):
        out[i] = (round(c, 4), dict(zip(scores.labels, probs, strict=True)))
    return out


def write_segments(segments: Iterable[Segment], out: TextIO, fmt: str = "text",
                   flush: bool = False, cues: Mapping[str, Any] | None = None) -> int:
    """Write ``segments`` in ``fmt``; return the number of documents written."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown output format {fmt!r} (known: {', '.join(FORMATS)})")
    docs = 0
    held: list[WordRow] = []
    held_probs: list[tuple[float, dict[str, float]] | None] = []
    subs = SubtitleWriter(out, fmt == "vtt", **(cues or {})) if fmt in SUBTITLE_FORMATS else None
    if fmt == "table":
        out.write("\t".join(COLUMNS) + "\n")
    for seg in segments:
        if subs is not None:
            if seg.first:
                subs.start_document(seg.doc_id)
            subs.add(seg.rows)
            if seg.last:
                subs.end_document()
        elif fmt in ("text", "kaldi"):
            text = " ".join(seg.texts())
            if seg.first and fmt == "kaldi":
                out.write(seg.doc_id + (" " if text else ""))
            elif not seg.first and text:
                out.write(" ")
            out.write(text)
            if seg.last:
                out.write("\n")
        elif fmt == "table":
            for r in seg.rows:
                out.write(format_row(r) + "\n")
        else:
            held.extend(seg.rows)
            held_probs.extend(word_scores(seg))
            if seg.last:
                record = {"id": seg.doc_id, "text": render_rows(held),
                          "sentences": sentences(held),
                          "words": [_row_json(r, p)
                                    for r, p in zip(held, held_probs, strict=True)]}
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
                held, held_probs = [], []
        if seg.last:
            docs += 1
            if flush:
                out.flush()
    return docs
