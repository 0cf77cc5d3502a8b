"""Word table -> model input sequences (``WordSeq``), with the label set applied.

Each utterance becomes one ``WordSeq``; ``offset`` numbers the words globally (in file
order) so that the decoder can aggregate windows of many utterances at once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from punct.errors import MissingDataError, PunctInputError
from punct.labels import CAP_LABELS, LabelSet
from punct.models.base import WordSeq
from punct.wordtable import WordRow, read_word_table


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


def read_utt2lang(path: Path) -> dict[str, str]:
    """``utt2lang`` of a data dir (empty when the file is absent)."""
    if not path.is_file():
        return {}
    out: dict[str, str] = {}
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 2:
            raise PunctInputError("expected '<utt_id> <lang>'", path, lineno)
        out[parts[0]] = parts[1]
    return out


def attach_streams(seqs: Sequence[WordSeq], data_dir: Path, streams: Sequence[str]) -> None:
    """Attach acoustic feature matrices from ``<data_dir>/<stream>.scp`` (Kaldi ark/scp).

    Utterances missing from an scp simply lack that stream (e.g. audio withheld);
    a missing scp file is an error naming the stage that writes it.
    """
    if not streams:
        return
    import kaldiio

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
    """Read ``<data_dir>/words.tsv`` (and ``utt2lang``, and the acoustic ``streams``)."""
    data_dir = Path(data_dir)
    table = data_dir / "words.tsv"
    if not table.is_file():
        raise MissingDataError(f"no word table in {data_dir} (run stage 1 first)", table)
    utts = read_word_table(table)
    if not utts:
        raise PunctInputError("word table has no rows", table)
    seqs = table_to_seqs(utts, label_set, read_utt2lang(data_dir / "utt2lang"))
    attach_streams(seqs, data_dir, streams)
    return utts, seqs


def total_words(seqs: Sequence[WordSeq]) -> int:
    """Number of words over all sequences."""
    return sum(len(s) for s in seqs)


def stack_targets(seqs: Sequence[WordSeq]) -> tuple[np.ndarray, np.ndarray]:
    """Reference multi-hot marks (N, P) and cap indices (N,) in global word order."""
    if not seqs:
        return np.zeros((0, 0), dtype=np.float32), np.zeros(0, dtype=np.int64)
    return (np.concatenate([s.punct for s in seqs], axis=0),
            np.concatenate([s.cap for s in seqs], axis=0))
