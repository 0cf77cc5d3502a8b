"""A learnable synthetic word table and a tiny BRNN experiment config."""

from __future__ import annotations

import random
from pathlib import Path

from punct.wordtable import WordRow, write_word_table

FILLERS = [f"w{i}" for i in range(15)]


ENDS = {"PERIOD", "QUESTION", "EXCLAMATION"}


def make_set(path: Path, n: int, seed: int) -> None:
    """Learnable labels: yes -> COMMA, stop -> PERIOD, huh -> QUESTION, ¡hola!, PERIOD at
    the end (unless the last word has a mark); long pauses after sentence ends. The
    labels obey the document rules (paired ¡!, a final mark at each end)."""
    rng = random.Random(seed)
    utts = {}
    for u in range(n):
        words = [rng.choice([*FILLERS, "yes", "stop", "huh", "hola"])
                 for _ in range(rng.randint(4, 12))]
        rows, t, starts = [], 0.0, True
        uid = f"{path.name}{u:04d}"
        for i, w in enumerate(words):
            marks = ["OPEN_EXCL", "EXCLAMATION"] if w == "hola" else []  # ¡hola!
            marks += {"yes": ["COMMA"], "stop": ["PERIOD"], "huh": ["QUESTION"]}.get(w, [])
            if i == len(words) - 1 and not ENDS & set(marks):
                marks = [m for m in marks if m != "COMMA"] + ["PERIOD"]
            pause = 0.6 if ENDS & set(marks) else 0.05
            cap = "FIRST_CAP" if starts else "O"
            rows.append(WordRow(uid, i, w, w.capitalize() if starts else w, tuple(marks), cap,
                                t, t + 0.3, pause))
            t += 0.3 + pause
            starts = bool(ENDS & set(marks))
        utts[uid] = rows
    path.mkdir(parents=True, exist_ok=True)
    write_word_table(path / "words.tsv", utts)


TINY = {
    "family": "brnn", "label_set": "full13", "featurizer": {"min_count": 1},
    "model": {"hidden": 16},
    "train": {"epochs": 6, "batch_size": 8, "window": 16, "stride": 16, "patience": 10,
              "optimizer": {"name": "adam", "lr": 0.01}, "grad_clip": 2.0, "seed": 7,
              "early_stopping": "micro_f1"},
    "decode": {"window": 16, "stride": 8, "batch_size": 32},
}
