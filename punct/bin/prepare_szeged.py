"""Stage 1 of the Hungarian Szeged recipe: Kaldi data dirs and word tables (text only).

Example:
  python -m punct.bin.prepare_szeged --ud-dir downloads/szeged/ud \
      --nerkor-dir downloads/szeged/nerkor --data-dir data

Sets (``text``, ``utt2spk``, ``spk2utt``, ``utt2lang``, ``words.tsv``, ``score_label_set``
= nagy4, ``prep.json``):

- train: UD_Hungarian-Szeged train + NerKor news train;
- dev: UD dev + NerKor news devel;
- test: UD test;
- test_szeged_ner: Szeged NER valid.txt (business news of the Szeged Treebank), when
  ``--szeged-ner`` is given;
- with ``--treebank`` (the licence-gated full Szeged Treebank, CoNLL-U or a CoNLL
  file with the form in column 2): its sentences are shuffled (seed 1) as in Nagy et al.
  and split 80/10/10 into train, dev and test_treebank.

UD text is rebuilt from ``SpaceAfter=No``; NerKor, Szeged NER and CoNLL files without
spacing are detokenised by rule (``punct.data.conll.rule_detokenize``).
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from punct.bin.prepare_common import positive, run_preparation
from punct.data.conll import (
    Sentence,
    iter_files,
    read_columns,
    read_conllu,
    read_conllup,
    spacing_agreement,
)
from punct.data.szeged import CleanStats, group_rows, group_sentences
from punct.errors import MissingDataError
from punct.kaldi import validate_data_dir, write_word_dir
from punct.wordtable import WordRow

LABEL_SET = "nagy4"


def ud_file(ud_dir: Path, split: str) -> Path:
    """``hu_szeged-ud-<split>.conllu`` in ``ud_dir``."""
    path = ud_dir / f"hu_szeged-ud-{split}.conllu"
    if not path.is_file():
        raise MissingDataError(f"UD_Hungarian-Szeged {split} file not found (stage 0; "
                               "SZEGED_UD in conf/db.sh)", path)
    return path


def nerkor_sentences(nerkor_dir: Path, split: str) -> list[Sentence]:
    """All sentences of ``<nerkor_dir>/<split>/**.conllup`` (file names sorted)."""
    root = nerkor_dir / split
    files = list(iter_files(root, (".conllup",))) if root.is_dir() else []
    if not files:
        raise MissingDataError(f"no NerKor {split} .conllup files (stage 0; NERKOR in "
                               "conf/db.sh)", root)
    return [s for f in files for s in read_conllup(f)]


def treebank_sentences(path: Path) -> list[Sentence]:
    """The full Szeged Treebank: CoNLL-U files, or CoNLL files with the form in column 2."""
    if not path.exists():
        raise MissingDataError("Szeged Treebank not found (SZEGED_TREEBANK in conf/db.sh)",
                               path)
    out: list[Sentence] = []
    for f in iter_files(path, (".conllu", ".conll", ".conll09", ".unshuffled")):
        out += read_conllu(f) if f.name.endswith(".conllu") else read_columns(f, 1)
    if not out:
        raise MissingDataError("no sentences in the Szeged Treebank copy", path)
    return out


class Writer:
    """Writes data dirs from named sentence sources, collecting statistics."""

    def __init__(self, data_dir: Path, doc_words: int):
        self.data_dir = data_dir
        self.doc_words = doc_words
        self.summary: list[str] = []
        self.info: dict[str, Any] = {}

    def write(self, name: str, sources: Sequence[tuple[str, Sequence[Sentence]]]) -> None:
        stats = CleanStats()
        utts: dict[str, list[WordRow]] = {}
        for prefix, sentences in sources:
            for i, group in enumerate(group_sentences(sentences, self.doc_words)):
                utt = f"{prefix}-{i:05d}"
                rows = group_rows(utt, group, stats)
                if rows:
                    utts[utt] = rows
        out = self.data_dir / name
        write_word_dir(out, utts, {u: u for u in utts}, dict.fromkeys(utts, "hu"))
        (out / "score_label_set").write_text(LABEL_SET + "\n", encoding="utf-8")
        marks = Counter(p for rows in utts.values() for r in rows for p in r.punct)
        info = {"sources": {p: len(s) for p, s in sources}, "doc_words": self.doc_words,
                "utterances": len(utts), "words": sum(len(r) for r in utts.values()),
                "label_counts": dict(sorted(marks.items())),
                "removed_chars": dict(stats.dropped.most_common()),
                "removed_mark_tokens": stats.tokens_dropped, "score_label_set": LABEL_SET}
        (out / "prep.json").write_text(json.dumps(info, indent=2, ensure_ascii=False) + "\n",
                                       encoding="utf-8")
        counts = validate_data_dir(out)
        self.summary.append(f"{name}: {counts['utterances']} utts, {counts['words']} words")


def split_treebank(sentences: list[Sentence]) -> dict[str, list[Sentence]]:
    """Nagy's set-up: merged, shuffled (seed 1), 80/10/10 train/dev/test."""
    order = list(sentences)
    random.Random(1).shuffle(order)
    n = len(order)
    a, b = int(0.8 * n), int(0.9 * n)
    return {"train": order[:a], "dev": order[a:b], "test": order[b:]}


def prepare(args: argparse.Namespace) -> Writer:
    ud = {s: read_conllu(ud_file(args.ud_dir, s)) for s in ("train", "dev", "test")}
    nerkor = {s: nerkor_sentences(args.nerkor_dir, s) for s in ("train", "devel")}
    writer = Writer(args.data_dir, args.doc_words)
    train: list[tuple[str, Sequence[Sentence]]] = [("ud_train", ud["train"]),
                                                   ("nerkor_train", nerkor["train"])]
    dev: list[tuple[str, Sequence[Sentence]]] = [("ud_dev", ud["dev"]),
                                                 ("nerkor_devel", nerkor["devel"])]
    if args.treebank is not None:
        tb = split_treebank(treebank_sentences(args.treebank))
        train.append(("tb_train", tb["train"]))
        dev.append(("tb_dev", tb["dev"]))
        writer.write("test_treebank", [("tb_test", tb["test"])])
    writer.write("train", train)
    writer.write("dev", dev)
    writer.write("test", [("ud_test", ud["test"])])
    if args.szeged_ner is not None:
        path = args.szeged_ner
        if path.is_dir():
            path = path / "valid.txt"
        if not path.is_file():
            raise MissingDataError("Szeged NER valid.txt not found (SZEGED_NER in "
                                   "conf/db.sh)", path)
        writer.write("test_szeged_ner", [("szeged_ner", read_columns(path, 0))])
    ok, n, gaps_ok, gaps = spacing_agreement([s for v in ud.values() for s in v])
    rule = {"sentences_exact": ok, "sentences": n, "gaps_correct": gaps_ok, "gaps": gaps}
    local = args.data_dir / "local"
    local.mkdir(parents=True, exist_ok=True)
    (local / "detok_rule_on_ud.json").write_text(json.dumps(rule, indent=2) + "\n",
                                                  encoding="utf-8")
    writer.summary.append(f"spacing rule on UD: {ok}/{n} sentences exact, "
                          f"{gaps_ok}/{gaps} gaps")
    return writer


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m punct.bin.prepare_szeged", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ud-dir", type=Path, required=True,
                   help="UD_Hungarian-Szeged (hu_szeged-ud-{train,dev,test}.conllu)")
    p.add_argument("--nerkor-dir", type=Path, required=True,
                   help="NerKor news: train/ and devel/ with .conllup files")
    p.add_argument("--szeged-ner", type=Path, help="Szeged NER valid.txt (or its folder)")
    p.add_argument("--treebank", type=Path, help="the full Szeged Treebank (licence-gated)")
    p.add_argument("--data-dir", type=Path, required=True, help="where data/<set> go")
    p.add_argument("--doc-words", type=positive, default=200,
                   help="tokens per utterance (whole sentences; default: %(default)s)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return run_preparation("prepare_szeged", lambda: prepare(args).summary, args.data_dir)


if __name__ == "__main__":
    raise SystemExit(main())
