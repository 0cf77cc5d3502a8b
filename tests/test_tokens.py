"""The token stage (sentencepiece) and the BRNN over sub-word units."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from punct.bin import train_tokenizer
from punct.config import Config, resolve_config
from punct.data.tokens import WordPieces, oov_report, train_sentencepiece
from punct.errors import MissingDataError, PunctInputError
from punct.labels import get_label_set
from punct.models.base import WordSeq
from punct.models.brnn import IGNORE, BRNNFeaturizer, make_model
from punct.wordtable import rows_from_text, write_word_table

FULL = get_label_set("full13")
L = FULL.labels.index
STEMS = ["ház", "kert", "város", "ember", "nap", "év", "kép", "víz", "föld", "hegy"]
SUFFIXES = ["", "ban", "ben", "ról", "nak", "nek", "hoz", "ként", "ig", "at"]
LINES = [" ".join(f"{STEMS[(i + j) % 10]}{SUFFIXES[(i * j) % 10]}" for j in range(12))
         for i in range(60)]


@pytest.fixture(scope="module")
def sp_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train_sentencepiece(LINES, tmp_path_factory.mktemp("sp"), 40, "unigram")


def seq(words: list[str], marks: list[tuple[str, ...]], offset: int = 0) -> WordSeq:
    punct = np.zeros((len(words), len(FULL.labels)), dtype=np.float32)
    for i, ms in enumerate(marks):
        for m in ms:
            punct[i, L(m)] = 1
    pauses = np.arange(len(words), dtype=np.float32) / 10
    return WordSeq("u", words, pauses, punct, np.zeros(len(words), dtype=np.int64), offset)


def config(sp: Path) -> Config:
    return resolve_config({"family": "brnn", "label_set": "full13",
                           "featurizer": {"tokenizer": "sentencepiece", "sp_model": str(sp)},
                           "model": {"hidden": 8}})


def test_model_files_and_pieces(sp_model: Path) -> None:
    assert sp_model.name == "sp.model"
    vocab = (sp_model.parent / "sp.vocab").read_text(encoding="utf-8").splitlines()
    assert len(vocab) == 40
    pieces = WordPieces(sp_model.read_bytes())
    assert "".join(pieces.pieces("városban")).lstrip("▁") == "városban"
    assert len(pieces.ids("hegynek")) >= 1


def test_oov_report_counts(sp_model: Path) -> None:
    train = ["ház kert ház", "kert víz"]
    test = ["ház kert zzz", "víz qqq ház"]
    rep = oov_report(train, test, sp_model.read_bytes(), min_count=2)
    assert rep["test_words"] == 6
    assert rep["word_vocab_size"] == 2  # ház, kert: "víz" is seen once only
    assert rep["word_oov_rate"] == pytest.approx(3 / 6)
    assert rep["sp_vocab_size"] == 40
    assert rep["sp_pieces_per_word"] >= 1.0
    assert 0 < rep["sp_word_with_unk_rate"] <= 2 / 6  # z and q are not in the pieces


def test_piece_windows_targets_on_gaps(sp_model: Path) -> None:
    feat = BRNNFeaturizer.from_config(config(sp_model))
    words = ["házban", "kertnek", "hegy", "víz"]
    s = seq(words, [("COMMA",), ("OPEN_QUOTE",), ("QUOTE", "PERIOD"), ()], offset=5)
    feat.fit([s])
    assert feat.vocab[4:] == [feat.pieces.sp.id_to_piece(i) for i in range(40)]
    (win,) = feat.windows([s], window=4, stride=4)
    lens = [len(feat.pieces.ids(w)) for w in words]
    ids = win["ids"].tolist()
    assert len(ids) == sum(lens) + 2
    assert ids[1:-1] == [i for w in words for i in feat.pieces.ids(w)]
    # one prediction per word, on its last piece
    last = np.cumsum(lens)  # position of the last piece of each word (1-based window)
    assert [int(i) for i in np.flatnonzero(win["word_ids"] >= 0)] == last.tolist()
    assert win["word_ids"][last].tolist() == [5, 6, 7, 8]
    # the slot before each word's first piece carries the gap; slots inside words ignored
    starts = np.concatenate([[1], last[:-1] + 1])
    slots = feat.slot_combos(s)
    assert win["target"][starts].tolist() == [feat.combo_id(c) for c in slots[:4]]
    inner = sorted(set(range(1, len(ids) - 1)) - set(starts.tolist()))
    assert all(win["target"][i] == IGNORE for i in inner)
    assert win["target"][-1] == feat.combo_id(slots[4])
    # opening marks of word k are read from the slot before its first piece
    assert win["first"][last].tolist() == starts.tolist()


def test_piece_model_predicts_word_marks_and_roundtrips(sp_model: Path, tmp_path: Path
                                                        ) -> None:
    feat = BRNNFeaturizer.from_config(config(sp_model))
    train = [seq(["házban", "kertnek", "hegy"], [("COMMA",), (), ("PERIOD",)])]
    feat.fit(train)
    model = make_model(config(sp_model), feat)
    batch = feat.collate(feat.windows(train, 8, 8))
    loss = model.loss(batch)
    loss.backward()
    assert torch.isfinite(loss)
    probs = model.predict(batch).punct
    assert probs.shape[:2] == batch["ids"].shape
    n = int(batch["lengths"][0])
    assert torch.all(probs[0, [0, n - 1]] == 0)  # the edge tokens
    words = probs[batch["word_ids"] >= 0]
    assert words.shape[0] == 3 and torch.all((words >= 0) & (words <= 1 + 1e-6))
    feat.save(tmp_path)
    back = BRNNFeaturizer.load(tmp_path, config(sp_model))
    assert (tmp_path / "sentencepiece.model").read_bytes() == sp_model.read_bytes()
    assert back.vocab == feat.vocab
    np.testing.assert_array_equal(back.windows(train, 8, 8)[0]["ids"], batch["ids"][0])


def test_missing_model_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(MissingDataError, match="token stage"):
        BRNNFeaturizer.from_config(config(tmp_path / "nope.model"))
    with pytest.raises(PunctInputError, match=r"featurizer\.tokenizer = 'bpe' is not one of"):
        resolve_config({"family": "brnn", "featurizer": {"tokenizer": "bpe"}})


def test_cli_trains_on_a_word_table(tmp_path: Path) -> None:
    table = {f"u{i}": rows_from_text(f"u{i}", line.capitalize() + ".")
             for i, line in enumerate(LINES)}
    (tmp_path / "train").mkdir()
    write_word_table(tmp_path / "train" / "words.tsv", table)
    (tmp_path / "test").mkdir()
    write_word_table(tmp_path / "test" / "words.tsv", {"t": rows_from_text("t", "Ház, zzz.")})
    out = tmp_path / "token_list" / "unigram40"
    assert train_tokenizer.main(["--train-dir", str(tmp_path / "train"), "--out-dir", str(out),
                                 "--vocab-size", "40", "--oov-dir",
                                 str(tmp_path / "test")]) == 0
    assert (out / "sp.model").is_file()
    rep = (out / "oov_test.json").read_text(encoding="utf-8")
    assert '"word_oov_rate": 0.5' in rep
