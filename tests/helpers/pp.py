"""Synthetic utterances of the prosodic-phrase tests (COMMA/PERIOD, prosody stream)."""

from __future__ import annotations

import numpy as np

from punct.models.base import WordSeq

LABELS = ("COMMA", "PERIOD")


def seq_of(times: list[tuple[float, float]], marks: list[str | None], frames: int,
           offset: int = 0) -> WordSeq:
    n = len(times)
    t = np.array(times, dtype=np.float64)
    pauses = np.append(t[1:, 0] - t[:-1, 1], frames * 0.01 - t[-1, 1]).astype(np.float32)
    punct = np.zeros((n, 2), np.float32)
    for i, m in enumerate(marks):
        if m:
            punct[i, LABELS.index(m)] = 1.0
    return WordSeq("u", [f"w{i}" for i in range(n)], pauses, punct, np.zeros(n, np.int64),
                   offset, feats={"prosody": np.zeros((frames, 9), np.float32)}, times=t)


def synthetic_corpus(n_utts: int, rng: np.random.Generator, offset: int = 0
                      ) -> list[WordSeq]:
    """Utterances of 6 words; a COMMA before a short pause, a PERIOD before a long one,
    with a falling F0 on the last word of each group."""
    seqs = []
    for u in range(n_utts):
        times, marks, f0 = [], [], []
        t = 0.1
        for i in range(6):
            dur = rng.uniform(0.3, 0.45)
            times.append((t, t + dur))
            mark = "PERIOD" if i in (2, 5) else ("COMMA" if i in (0, 3) else None)
            marks.append(mark)
            t += dur + (0.5 if mark == "PERIOD" else 0.3 if mark == "COMMA" else 0.0)
        frames = int(np.ceil((t + 0.1) / 0.01))
        f0 = rng.normal(0, 0.1, frames)
        for (s, e), m in zip(times, marks, strict=True):
            a, b = int(s / 0.01), int(e / 0.01)
            f0[a:b] += np.linspace(1.0, -1.0 if m else 0.5, b - a)
        feats = np.zeros((frames, 9), np.float32)
        feats[:, 0] = f0
        feats[:, 2] = -2.0
        for s, e in times:
            feats[int(s / 0.01):int(e / 0.01), 2] = 1.0
        seq = seq_of(times, marks, frames, offset)
        seq.utt_id = f"u{u}"
        seq.feats = {"prosody": feats}
        seqs.append(seq)
        offset += len(seq)
    return seqs
