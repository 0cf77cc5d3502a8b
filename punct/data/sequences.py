"""Word table -> model input sequences (``WordSeq``, cut into ``Window``), label set applied.

Each utterance becomes one ``WordSeq``; ``offset`` numbers the words globally (in file
order) so that the decoder can aggregate windows of many utterances at once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from punct.errors import MissingDataError, PunctInputError
from punct.extras import require
from punct.kaldi import ends_mid_stream, read_utt2lang
from punct.labels import CAP_LABELS, LabelSet
from punct.wordtable import WordRow, read_word_table


@dataclass
class WordSeq:
    """One utterance as model input and targets.

    ``pauses`` holds seconds (NaN where unknown); ``punct`` a multi-hot matrix over the
    label set in use (N, P); ``cap`` indices into CAP_LABELS (N,). Targets are zeros
    at inference time. ``offset`` is the global index of the first word (set by
    the caller so that windows of many utterances can be aggregated together).
    """

    utt_id: str
    words: list[str]
    pauses: np.ndarray
    punct: np.ndarray
    cap: np.ndarray
    offset: int = 0
    lang: str | None = None
    feats: dict[str, np.ndarray] = field(default_factory=dict)
    times: np.ndarray | None = None
    # False for an utterance cut out of a longer stream (the data dir's ``mid_stream``
    # marker, ``punct.kaldi.ends_mid_stream``): its end is no document end
    ends_document: bool = True

    def __len__(self) -> int:
        return len(self.words)


Window = dict[str, np.ndarray]
"""One training or decoding window. Must contain ``word_ids`` (T,) int64: the
global word index predicted at each position, or -1 where nothing is predicted
(padding, non-initial sub-tokens, special tokens)."""


def rows_to_seq(rows: Sequence[WordRow], label_set: LabelSet, offset: int = 0,
                lang: str | None = None) -> WordSeq:
    """One utterance: words, pauses (NaN unknown), multi-hot marks of ``label_set``, caps."""
    n, n_labels = len(rows), len(label_set.labels)
    punct = np.zeros((n, n_labels), dtype=np.float32)
    cap = np.zeros(n, dtype=np.int64)
    pauses = np.full(n, np.nan, dtype=np.float32)
    times = np.full((n, 2), np.nan, dtype=np.float64)
    for i, row in enumerate(rows):
        for label in label_set.map(row.punct):
            punct[i, label_set.index(label)] = 1.0
        cap[i] = CAP_LABELS.index(row.cap)
        if row.pause_after is not None and not math.isnan(row.pause_after):
            pauses[i] = row.pause_after
        if row.start is not None and row.end is not None:
            times[i] = (row.start, row.end)
    utt_id = rows[0].utt_id if rows else ""
    return WordSeq(utt_id, [r.word for r in rows], pauses, punct, cap, offset, lang,
                   times=times)


def cut_seq(seq: WordSeq, at: int) -> list[WordSeq]:
    """``seq`` cut before word ``at`` into two utterances (the same words, marks and
    global offsets); ``[seq]`` when ``at`` is 0 or past the end. Text only: frame-level
    acoustic streams cannot be cut at a word without its times."""
    if at <= 0 or at >= len(seq):
        return [seq]
    if seq.feats:
        raise PunctInputError(f"utterance {seq.utt_id}: cannot cut a sequence with acoustic "
                              f"streams ({', '.join(sorted(seq.feats))})")

    def part(lo: int, hi: int) -> WordSeq:
        return WordSeq(seq.utt_id, seq.words[lo:hi], seq.pauses[lo:hi], seq.punct[lo:hi],
                       seq.cap[lo:hi], seq.offset + lo, seq.lang,
                       times=None if seq.times is None else seq.times[lo:hi])

    return [part(0, at), part(at, len(seq))]


def table_to_seqs(utts: Mapping[str, Sequence[WordRow]], label_set: LabelSet,
                  utt2lang: Mapping[str, str] | None = None) -> list[WordSeq]:
    """All utterances of a word table, with consecutive global word offsets."""
    seqs: list[WordSeq] = []
    offset = 0
    for utt_id, rows in utts.items():
        lang = utt2lang.get(utt_id) if utt2lang else None
        seqs.append(rows_to_seq(rows, label_set, offset, lang))
        offset += len(rows)
    return seqs


def attach_streams(seqs: Sequence[WordSeq], data_dir: Path, streams: Sequence[str]) -> None:
    """Attach acoustic feature matrices from ``<data_dir>/<stream>.scp`` (Kaldi ark/scp).

    Utterances missing from an scp simply lack that stream (e.g. audio withheld);
    a missing scp file is an error naming the stage that writes it.
    """
    if not streams:
        return
    kaldiio = require("kaldiio", "train", "reading acoustic features")  # optional extra

    for stream in streams:
        scp = data_dir / f"{stream}.scp"
        if not scp.is_file():
            raise MissingDataError(f"no {stream} features in {data_dir} "
                                   f"(run the feature stage for '{stream}' first)", scp)
        table = kaldiio.load_scp(str(scp))
        for seq in seqs:
            if seq.utt_id in table:
                seq.feats[stream] = np.asarray(table[seq.utt_id], dtype=np.float32)


def load_data_dir(data_dir: str | Path, label_set: LabelSet, streams: Sequence[str] = ()
                  ) -> tuple[dict[str, list[WordRow]], list[WordSeq]]:
    """Read ``<data_dir>/words.tsv`` (and ``utt2lang``, the acoustic ``streams`` and the
    ``mid_stream`` marker: ``WordSeq.ends_document``)."""
    data_dir = Path(data_dir)
    table = data_dir / "words.tsv"
    if not table.is_file():
        raise MissingDataError(f"no word table in {data_dir} (run stage 1 first)", table)
    utts = read_word_table(table)
    if not utts:
        raise PunctInputError("word table has no rows", table)
    seqs = table_to_seqs(utts, label_set, read_utt2lang(data_dir / "utt2lang", missing_ok=True))
    attach_streams(seqs, data_dir, streams)
    if ends_mid_stream(data_dir):
        for seq in seqs:
            seq.ends_document = False
    return utts, seqs
