"""Alignment quality against a reference: word boundary error and pause detection.

- Boundary error: ``|hyp - ref|`` over every word start and every word end; median,
  90th percentile and mean in milliseconds.
- Pauses: the internal gaps (after word i, i < last; :func:`punct.data.timed.pauses`)
  of at least ``pause_threshold`` seconds. A hypothesised pause after word i is a hit
  when the reference also has a pause of at least the threshold after word i;
  precision, recall and F1 follow.
- Coverage: utterances/words of the reference that the hypothesis aligned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from punct.align.pauses import match_words
from punct.data.timed import TimedWord, pauses

PAUSE_THRESHOLD = 0.15


def _internal_pauses(words: Sequence[TimedWord], utt: str,
                     source: str | Path | None) -> np.ndarray:
    """The pauses after words 1 .. n-1 (:func:`punct.data.timed.pauses`, last one left out)."""
    return np.array(pauses(words, doc_id=f"utterance {utt}" if utt else "", path=source)[:-1],
                    dtype=float)


def _ratio(num: float, den: float) -> float | None:
    return round(num / den, 4) if den else None


def evaluate(
    hyp: Mapping[str, Sequence[TimedWord]] | Sequence[TimedWord],
    ref: Mapping[str, Sequence[TimedWord]] | Sequence[TimedWord],
    pause_threshold: float = PAUSE_THRESHOLD,
    source: str | Path | None = None,
) -> dict:
    """Compare ``hyp`` with ``ref`` (``{utt: words}`` or one utterance's word list).

    Utterances of ``ref`` missing from ``hyp`` count as unaligned; utterances only in
    ``hyp`` are ignored. Word sequences must match (PunctInputError otherwise, naming
    ``source``). Statistics without data are None.
    """
    if not isinstance(hyp, Mapping):
        hyp = {"": hyp}
    if not isinstance(ref, Mapping):
        ref = {"": ref}
    errors: list[np.ndarray] = []
    tp = fp = fn = 0
    n_words = n_aligned = n_utts_aligned = 0
    for utt, ref_words in ref.items():
        n_words += len(ref_words)
        hyp_words = hyp.get(utt)
        if hyp_words is None:
            continue
        match_words([w.word for w in ref_words], hyp_words, source, utt)
        n_utts_aligned += 1
        n_aligned += len(ref_words)
        if not ref_words:
            continue
        h = np.array([(w.start, w.end) for w in hyp_words], dtype=float)
        r = np.array([(w.start, w.end) for w in ref_words], dtype=float)
        errors.append(np.abs(h - r).ravel())
        hp = _internal_pauses(hyp_words, utt, source) >= pause_threshold - 1e-9
        rp = _internal_pauses(ref_words, utt, source) >= pause_threshold - 1e-9
        tp += int((hp & rp).sum())
        fp += int((hp & ~rp).sum())
        fn += int((~hp & rp).sum())
    err = np.concatenate(errors) * 1000.0 if errors else np.zeros(0)
    precision = _ratio(tp, tp + fp)
    recall = _ratio(tp, tp + fn)
    f1 = (
        round(2 * precision * recall / (precision + recall), 4)
        if precision is not None and recall is not None and precision + recall > 0
        else (0.0 if precision is not None and recall is not None else None)
    )
    stat = (lambda f: round(float(f(err)), 1)) if err.size else (lambda f: None)
    return {
        "utterances": len(ref),
        "utterances_aligned": n_utts_aligned,
        "words": n_words,
        "words_aligned": n_aligned,
        "share_aligned": _ratio(n_aligned, n_words),
        "boundary_error_ms": {
            "median": stat(np.median),
            "p90": stat(lambda e: np.percentile(e, 90)),
            "mean": stat(np.mean),
            "n": int(err.size),
        },
        "pauses": {
            "threshold_ms": round(pause_threshold * 1000),
            "tp": tp,
            "fp": fp,
            "fn": fn,
            "precision": precision,
            "recall": recall,
            "f1": f1,
        },
    }
