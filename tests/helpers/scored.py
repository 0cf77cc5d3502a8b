"""Scored systems on disk for the comparison tools: a reference word table and, per
system, a hypothesis table and the scores.json the real scorer writes for it."""

from __future__ import annotations

import random
from pathlib import Path

from punct.bin import score as score_cli
from punct.wordtable import WordRow, write_word_table

MARKS = ("COMMA", "PERIOD", "QUESTION")


def reference(utterances: int, words: int, seed: int = 0) -> dict[str, list[WordRow]]:
    """Utterances of ``words`` words, about one in four marked (the last one PERIOD)."""
    rng = random.Random(seed)
    out: dict[str, list[WordRow]] = {}
    for u in range(utterances):
        utt = f"utt{u:03d}"
        rows = []
        for i in range(words):
            mark = ("PERIOD",) if i == words - 1 else ((rng.choice(MARKS),)
                                                       if rng.random() < 0.25 else ())
            word = f"w{rng.randrange(50)}"
            rows.append(WordRow(utt, i, word, word, mark, "O"))
        out[utt] = rows
    return out


def hypothesis(ref: dict[str, list[WordRow]], miss: float, seed: int,
               utterance_miss: dict[str, float] | None = None) -> dict[str, list[WordRow]]:
    """``ref`` with each mark dropped with probability ``miss`` (per utterance:
    ``utterance_miss``), and the same share of unmarked words given a COMMA."""
    rng = random.Random(seed)
    out = {}
    for utt, rows in ref.items():
        rate = (utterance_miss or {}).get(utt, miss)
        new = []
        for r in rows:
            marked = bool(r.punct)
            if rng.random() < rate:
                marked = not marked
            punct = (r.punct or ("COMMA",)) if marked else ()
            new.append(WordRow(r.utt_id, r.idx, r.word, r.form, punct, r.cap))
        out[utt] = new
    return out


def score_system(exp: Path, system: str, test_set: str, ref_path: Path,
                 hyp: dict[str, list[WordRow]], label_set: str = "iwslt4",
                 nonspeech: str = "default") -> Path:
    """Write ``exp/<system>/decode_<set>/words.tsv`` and score it; the scores.json path."""
    out = exp / system / f"decode_{test_set}"
    out.mkdir(parents=True, exist_ok=True)
    write_word_table(out / "words.tsv", hyp)
    assert score_cli.main(["--ref", str(ref_path), "--hyp", str(out / "words.tsv"),
                           "--out", str(out / "scores.json"), "--label-set", label_set,
                           "--system", system, "--test-set", test_set,
                           "--nonspeech", nonspeech]) == 0
    return out / "scores.json"
