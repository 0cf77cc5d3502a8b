"""Stage 1 of the IWSLT 2012 recipe: Kaldi data dirs and word tables from Che's package.

Example:
  python -m punct.bin.prepare_iwslt --db-dir downloads/iwslt2012 --data-dir data

Sets written under --data-dir (text, utt2spk, spk2utt, utt2lang, words.tsv, plus
``score_label_set`` = the label set to score it with, and ``prep.json`` = provenance):

- train / dev: ``train2012`` / ``dev2012`` when train2012 exists; otherwise (the
  fallback) dev2012 is split into contiguous blocks: its first blocks train, the last
  ``--valid-blocks`` blocks validate. Talk boundaries cannot be recovered from Che's
  files (no markers), so the split is by fixed blocks, not by talk.
- test2011 (and test2011asr when present): Che's 4-class labels, scored with iwslt4.
- test2011_full: the cased, fully punctuated mteval XML reference of test2011 (clitics
  split as in Che's files), scored with full13 and capitalisation.

Che's files have no segmentation: the word stream is cut into pseudo-documents of
``--doc-words`` words regardless of the labels (a block end never reveals a sentence
end); the XML is cut the same way within each talk. Invalid UTF-8 bytes and empty
tokens are removed, counted, and listed with file and line in
``<data-dir>/local/iwslt2012_repairs.txt``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from punct.bin.prepare_common import positive, run_preparation
from punct.data.iwslt import (
    IwsltWord,
    ParsedFile,
    blocks,
    label_counts,
    parse_che_tsv,
    parse_mteval,
    word_rows,
)
from punct.errors import MissingDataError, PunctInputError
from punct.kaldi import mark_mid_stream, validate_data_dir, write_word_dir
from punct.wordtable import WordRow

XML_NAME = "IWSLT12.TED.MT.tst2011.en-fr.en.xml"
SUBDIRS = ("", "che_original", "raw_xml", "LREC")


def find_file(db_dir: Path, name: str) -> Path | None:
    """``<db>/<name>`` or ``<db>/{che_original,raw_xml,LREC}/<name>`` (None if absent)."""
    for sub in SUBDIRS:
        path = db_dir / sub / name
        if path.is_file():
            return path
    return None


def limit(words: Sequence[IwsltWord], max_words: int | None) -> Sequence[IwsltWord]:
    """The first ``max_words`` words (all when None)."""
    return words if max_words is None else words[:max_words]


class Preparer:
    """Writes data dirs and collects what was repaired."""

    def __init__(self, data_dir: Path, doc_words: int):
        self.data_dir = data_dir
        self.doc_words = doc_words
        self.repairs: list[str] = []
        self.summary: list[str] = []

    def note_repairs(self, parsed: ParsedFile) -> None:
        self.repairs += [str(issue) for issue in parsed.issues] + parsed.notes
        if parsed.issues or parsed.notes:
            notes = sum("music note" in i.what for i in parsed.issues)
            lines = len({i.line for i in parsed.issues})
            print(f"prepare_iwslt: {parsed.path}: removed {len(parsed.issues)} invalid UTF-8 "
                  f"sequence(s) on {lines} line(s) ({notes} damaged music notes); "
                  f"{len(parsed.notes)} other repair(s) (empty tokens dropped, music notes "
                  "removed)"
                  + (f"; first: {parsed.issues[0]}" if parsed.issues else ""))

    def write(self, name: str, docs: dict[str, tuple[str, Sequence[IwsltWord]]],
              label_set: str, info: dict[str, Any]) -> None:
        """One data dir from pseudo-documents (utt id -> (speaker, words))."""
        out = self.data_dir / name
        words: dict[str, list[WordRow]] = {u: word_rows(u, ws) for u, (_, ws) in docs.items()}
        write_word_dir(out, words, {u: spk for u, (spk, _) in docs.items()},
                       dict.fromkeys(docs, "en"))
        (out / "score_label_set").write_text(label_set + "\n", encoding="utf-8")
        mark_mid_stream(out, f"pseudo-documents of {self.doc_words} words cut from the "
                        "talks' word stream")
        all_words = [w for _, ws in docs.values() for w in ws]
        info = {**info, "doc_words": self.doc_words, "utterances": len(docs),
                "words": len(all_words), "label_counts": label_counts(all_words),
                "score_label_set": label_set}
        (out / "prep.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        counts = validate_data_dir(out)
        self.summary.append(f"{name}: {counts['utterances']} docs, {counts['words']} words")

    def che_docs(self, prefix: str, words: Sequence[IwsltWord], first_block: int = 0
                 ) -> dict[str, tuple[str, Sequence[IwsltWord]]]:
        """Pseudo-documents of a Che word stream; each is its own speaker (talks unknown)."""
        docs = {}
        for i, block in enumerate(blocks(words, self.doc_words), start=first_block):
            utt = f"{prefix}-{i:04d}"
            docs[utt] = (utt, block)
        return docs


def prepare(args: argparse.Namespace) -> Preparer:
    db = args.db_dir
    if not db.is_dir():
        raise MissingDataError("IWSLT 2012 directory not found (run stage 0; see "
                               "conf/db.sh)", db)
    prep = Preparer(args.data_dir, args.doc_words)
    paths = {n: find_file(db, n) for n in ("train2012", "dev2012", "test2011", "test2011asr")}
    for needed in ("dev2012", "test2011"):
        if paths[needed] is None:
            raise MissingDataError(f"{needed} not found in the IWSLT 2012 package", db)
    parsed: dict[str, ParsedFile] = {}
    for name, path in paths.items():
        if path is not None:
            parsed[name] = parse_che_tsv(path)
            prep.note_repairs(parsed[name])
    dev = parsed["dev2012"].words
    if "train2012" in parsed and args.train_source in ("auto", "train2012"):
        train_words = limit(parsed["train2012"].words, args.max_train_words)
        prep.write("train", prep.che_docs("train2012", train_words), "iwslt4",
                   {"source": str(paths["train2012"]), "split": "all of train2012"})
        prep.write("dev", prep.che_docs("dev2012", limit(dev, args.max_dev_words)), "iwslt4",
                   {"source": str(paths["dev2012"]), "split": "all of dev2012"})
    else:
        if args.train_source == "train2012":
            raise MissingDataError("train2012 not found in the IWSLT 2012 package", db)
        n_blocks = len(blocks(dev, args.doc_words))
        if args.valid_blocks >= n_blocks:
            raise PunctInputError(f"--valid-blocks {args.valid_blocks} leaves no training "
                                  f"block (dev2012 has {n_blocks})", paths["dev2012"])
        cut = (n_blocks - args.valid_blocks) * args.doc_words
        split = (f"fallback without train2012: dev2012 words [0, {cut}) = blocks "
                 f"0-{n_blocks - args.valid_blocks - 1} train, words [{cut}, {len(dev)}) = "
                 f"blocks {n_blocks - args.valid_blocks}-{n_blocks - 1} validate "
                 f"(contiguous blocks of {args.doc_words} words; talk boundaries are not "
                 "recoverable from the file)")
        print(f"prepare_iwslt: train2012 not found; {split}")
        prep.write("train", prep.che_docs("dev2012", limit(dev[:cut], args.max_train_words)),
                   "iwslt4", {"source": str(paths["dev2012"]), "split": split})
        valid = limit(dev[cut:], args.max_dev_words)
        prep.write("dev", prep.che_docs("dev2012", valid, n_blocks - args.valid_blocks),
                   "iwslt4", {"source": str(paths["dev2012"]), "split": split})
    for name in ("test2011", "test2011asr"):
        if name in parsed:
            words = limit(parsed[name].words, args.max_test_words)
            prep.write(name, prep.che_docs(name, words), "iwslt4",
                       {"source": str(paths[name]), "split": f"all of {name}"})
    xml = find_file(db, XML_NAME)
    if xml is None:
        print(f"prepare_iwslt: {XML_NAME} not found: no test2011_full")
    else:
        talks = parse_mteval(xml)
        docs: dict[str, tuple[str, Sequence[IwsltWord]]] = {}
        budget = args.max_test_words
        for talk_id, talk in talks.items():
            prep.note_repairs(talk)
            words = limit(talk.words, budget)
            if budget is not None:
                budget -= len(words)
            for i, block in enumerate(blocks(words, args.doc_words)):
                docs[f"tst2011_{talk_id}-{i:03d}"] = (f"tst2011_{talk_id}", block)
        prep.write("test2011_full", {u: d for u, d in docs.items() if d[1]}, "full13",
                   {"source": str(xml), "split": "all talks of tst2011, cut per talk",
                    "talks": list(talks)})
    repairs = args.data_dir / "local" / "iwslt2012_repairs.txt"
    repairs.parent.mkdir(parents=True, exist_ok=True)
    repairs.write_text("".join(line + "\n" for line in prep.repairs), encoding="utf-8")
    print(f"prepare_iwslt: {len(prep.repairs)} repairs listed in {repairs}")
    return prep


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m punct.bin.prepare_iwslt", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--db-dir", type=Path, required=True,
                   help="Che's package (files flat or in che_original/ and raw_xml/)")
    p.add_argument("--data-dir", type=Path, required=True, help="where data/<set> go")
    p.add_argument("--doc-words", type=positive, default=1000,
                   help="words per pseudo-document (default: %(default)s)")
    p.add_argument("--valid-blocks", type=positive, default=30,
                   help="fallback only: the last N blocks of dev2012 validate "
                        "(default: %(default)s)")
    p.add_argument("--train-source", choices=("auto", "train2012", "dev2012"), default="auto",
                   help="auto: train2012 when present, else the dev2012 fallback")
    p.add_argument("--max-train-words", type=positive, help="keep the first N training words")
    p.add_argument("--max-dev-words", type=positive, help="keep the first N validation words")
    p.add_argument("--max-test-words", type=positive, help="keep the first N words per test set")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return run_preparation("prepare_iwslt", lambda: prepare(args).summary, args.data_dir)


if __name__ == "__main__":
    raise SystemExit(main())
