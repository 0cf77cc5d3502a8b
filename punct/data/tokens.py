"""The token stage: a sentencepiece model trained on a recipe's training words.

The model sees what the punctuation models see: the lower-cased words of
``data/<train>/words.tsv`` without marks, one utterance per line. It is stored as
``<out>/sp.model`` and ``<out>/sp.vocab`` (ESPnet keeps its BPE model in
``data/token_list/``). ``oov_report`` compares a word vocabulary (words seen at least
``min_count`` times) with the sub-word units on held-out words.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import sentencepiece as spm

from punct.errors import MissingDataError, PunctInputError
from punct.wordtable import read_word_table

MODEL_FILE = "sp.model"
MODEL_TYPES = ("unigram", "bpe")


def table_lines(words_tsv: str | Path) -> list[str]:
    """One line of lower-cased words per utterance of a word table."""
    path = Path(words_tsv)
    if not path.is_file():
        raise MissingDataError("word table not found", path)
    return [" ".join(r.word for r in rows) for rows in read_word_table(path).values()]


def train_sentencepiece(lines: Sequence[str], out_dir: str | Path, vocab_size: int,
                        model_type: str = "unigram") -> Path:
    """Train a sentencepiece model on ``lines``; returns ``<out_dir>/sp.model``."""
    if model_type not in MODEL_TYPES:
        raise PunctInputError(f"model type {model_type!r} not in {MODEL_TYPES}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, vocab_size=vocab_size,
        model_type=model_type, character_coverage=1.0,
        num_threads=1, minloglevel=2, hard_vocab_limit=False, bos_id=-1, eos_id=-1,
        unk_id=0, pad_id=-1, input_sentence_size=0, shuffle_input_sentence=False)
    path = out / MODEL_FILE
    path.write_bytes(model.getvalue())
    sp = load_processor(path.read_bytes())
    vocab = "".join(f"{sp.id_to_piece(i)}\t{sp.get_score(i):.4f}\n"
                    for i in range(sp.get_piece_size()))
    (out / "sp.vocab").write_text(vocab, encoding="utf-8")
    return path


def load_processor(model: bytes) -> Any:
    """A ``SentencePieceProcessor`` from the serialised model."""
    sp = spm.SentencePieceProcessor()
    sp.load_from_serialized_proto(model)
    return sp


class WordPieces:
    """Sub-word pieces of single words (cached), ids offset by ``offset``."""

    def __init__(self, model: bytes, offset: int = 0):
        self.model = model
        self.sp = load_processor(model)
        self.offset = offset
        self.unk_id = self.sp.unk_id()
        self._ids = lru_cache(maxsize=200_000)(self._encode)

    def __len__(self) -> int:
        return int(self.sp.get_piece_size())

    def _encode(self, word: str) -> tuple[int, ...]:
        ids = self.sp.encode(word, out_type=int)
        # A word sentencepiece encodes as nothing still needs a position: <unk>.
        return tuple(i + self.offset for i in ids) or (self.unk_id + self.offset,)

    def ids(self, word: str) -> tuple[int, ...]:
        return self._ids(word)

    def pieces(self, word: str) -> list[str]:
        return list(self.sp.encode(word, out_type=str))


def word_vocab(lines: Iterable[str], min_count: int) -> set[str]:
    counts = Counter(w for line in lines for w in line.split())
    return {w for w, c in counts.items() if c >= min_count}


def oov_report(train_lines: Sequence[str], test_lines: Sequence[str], sp_model: bytes,
               min_count: int = 2) -> dict[str, Any]:
    """OOV rate of the word vocabulary vs sentencepiece on ``test_lines`` (word tokens)."""
    vocab = word_vocab(train_lines, min_count)
    words = [w for line in test_lines for w in line.split()]
    if not words:
        raise PunctInputError("no test words for the OOV report")
    pieces = WordPieces(sp_model)
    n_pieces = unk_pieces = words_with_unk = 0
    for w in words:
        ids = pieces.ids(w)
        n_pieces += len(ids)
        unks = sum(i == pieces.unk_id for i in ids)
        unk_pieces += unks
        words_with_unk += unks > 0
    oov = sum(w not in vocab for w in words)
    return {"test_words": len(words), "word_vocab_size": len(vocab),
            "word_min_count": min_count, "word_oov_rate": oov / len(words),
            "sp_vocab_size": len(pieces), "sp_pieces_per_word": n_pieces / len(words),
            "sp_unk_piece_rate": unk_pieces / n_pieces,
            "sp_word_with_unk_rate": words_with_unk / len(words)}


def write_json(path: str | Path, obj: dict[str, Any]) -> None:
    Path(path).write_text(json.dumps(obj, indent=2) + "\n", encoding="utf-8")
