"""train.augment: ASR-like substitutions, deletions and insertions of training words (label
and pause conventions, rates, seeded per epoch and utterance, resume), confusable
neighbours from the CMU dictionary, and the config checks."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from helpers.trainset import TINY, make_set

from punct.bin import train as train_cli
from punct.config import AugmentSection, deep_merge, load_config, resolve_config
from punct.data.augment import Augmenter, TrainingAugmenter, utterance_rng, word_counts
from punct.data.confusable import (
    INSTALL_HINT,
    cmudict_path,
    deletion_keys,
    find_neighbours,
    load_neighbours,
    phone_distance,
    read_dictionary,
)
from punct.data.sequences import table_to_seqs
from punct.errors import MissingDataError, PunctInputError
from punct.labels import get_label_set
from punct.models.brnn import SlotModel
from punct.train.checkpoint import PREEMPTED_EXIT
from punct.wordtable import WordRow, render_rows

ROOT = Path(__file__).resolve().parents[1]
FULL13 = get_label_set("full13")


@pytest.fixture(autouse=True, scope="module")
def one_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def utterance(spec: list[tuple[str, tuple[str, ...]]], utt_id: str = "u",
              timed: bool = True) -> list[WordRow]:
    """Rows of (word, marks); the first word capitalised; word i spoken from i to i+0.5 s
    (pause 0.5 s, the last word the end-of-document 2 s) when ``timed``."""
    rows = []
    for i, (word, marks) in enumerate(spec):
        cap = "FIRST_CAP" if i == 0 else "O"
        start, end = (float(i), i + 0.5) if timed else (None, None)
        pause = (2.0 if i == len(spec) - 1 else 0.5) if timed else None
        rows.append(WordRow(utt_id, i, word, word.capitalize() if i == 0 else word, marks,
                            cap, start, end, pause))
    return rows


def augmenter(**rates: float) -> Augmenter:
    return Augmenter(AugmentSection(**rates), {"the": 1})


def edit(rows: list[WordRow], delete: set[int] = frozenset(), sub: set[int] = frozenset(),
         ins: set[int] = frozenset(), aug: Augmenter | None = None
         ) -> list[WordRow]:
    n = len(rows)
    out, counts = (aug or augmenter()).edit(
        rows, [i in delete for i in range(n)], [i in sub for i in range(n)],
        [i in ins for i in range(n)], np.random.default_rng(0))
    assert (counts.dele, counts.sub, counts.ins) == (len(delete), len(sub), len(ins))
    assert [r.idx for r in out] == list(range(len(out)))
    return out


SENT = [("yes", ("COMMA",)), ("he", ()), ("said", ("COLON",)), ("hola", ("OPEN_QUOTE",)),
        ("amigo", ("QUOTE", "PERIOD"))]


# -- label conventions -----------------------------------------------------------------
def test_deleted_word_closing_marks_move_to_the_word_before() -> None:
    out = edit(utterance(SENT), delete={4})
    assert render_rows(out) == "Yes, he said: “hola”."
    assert out[-1].punct == ("OPEN_QUOTE", "QUOTE", "PERIOD")  # the sentence end is kept
    out = edit(utterance(SENT), delete={2})
    assert [(r.word, r.punct) for r in out[1:3]] == [("he", ("COLON",)), ("hola", ("OPEN_QUOTE",))]
    out = edit(utterance([("a", ("COMMA",)), ("b", ("COMMA", "QUOTE")), ("c", ())]), delete={1})
    assert out[0].punct == ("COMMA", "QUOTE")  # no duplicate COMMA
    # the word before is the one of the augmented utterance: here an inserted word
    out = edit(utterance(SENT), delete={4}, ins={4})
    assert [(r.word, r.punct) for r in out[-2:]] == [("hola", ("OPEN_QUOTE",)),
                                                      ("the", ("QUOTE", "PERIOD"))]


def test_deleted_word_open_marks_move_to_the_word_after() -> None:
    rows = utterance([("so", ()), ("hola", ("OPEN_EXCL",)), ("amigo", ("EXCLAMATION",))])
    out = edit(rows, delete={1})
    assert [(r.word, r.punct) for r in out] == [("so", ()), ("amigo", ("OPEN_EXCL", "EXCLAMATION"))]
    assert render_rows(out) == "So ¡amigo!"
    # OPEN and closing marks of one deleted word go both ways
    rows = utterance([("a", ()), ("b", ("OPEN_QUOTE", "QUOTE")), ("c", ("PERIOD",))])
    out = edit(rows, delete={1})
    assert [r.punct for r in out] == [("QUOTE",), ("OPEN_QUOTE", "PERIOD")]


def test_deleted_first_word_and_sentence_capital() -> None:
    out = edit(utterance(SENT), delete={0})
    assert out[0].word == "he" and out[0].punct == ()  # its COMMA has no word before it
    assert (out[0].cap, out[0].form) == ("FIRST_CAP", "He")  # the sentence start moves on
    rows = utterance([("we", ()), ("stop", ("PERIOD",)), ("the", ()), ("end", ("PERIOD",))])
    rows[2] = WordRow("u", 2, "the", "The", (), "FIRST_CAP", 2.0, 2.5, 0.5)
    out = edit(rows, delete={2})
    assert (out[2].word, out[2].cap, out[2].form) == ("end", "FIRST_CAP", "End")
    rows[2] = WordRow("u", 2, "paris", "Paris", (), "FIRST_CAP", 2.0, 2.5, 0.5)
    rows[1] = WordRow("u", 1, "in", "in", (), "O", 1.0, 1.5, 0.5)  # a name mid-sentence
    assert edit(rows, delete={2})[2].cap == "O"


def test_inserted_word_gets_no_mark_and_o() -> None:
    out = edit(utterance(SENT), ins={0, 4})
    assert [r.word for r in out] == ["the", "yes", "he", "said", "hola", "the", "amigo"]
    for k in (0, 5):
        assert (out[k].punct, out[k].cap, out[k].form) == ((), "O", "the")
    assert [r.punct for r in out if r.word != "the"] == [p for _, p in SENT]


def test_substituted_word_keeps_marks_and_capitalisation() -> None:
    out = edit(utterance(SENT), sub={0, 4})
    assert [(r.word, r.form, r.punct, r.cap) for r in (out[0], out[4])] == [
        ("the", "The", ("COMMA",), "FIRST_CAP"), ("the", "the", ("QUOTE", "PERIOD"), "O")]
    assert [(r.start, r.end, r.pause_after) for r in out] == \
        [(r.start, r.end, r.pause_after) for r in utterance(SENT)]


# -- pauses ------------------------------------------------------------------------------
def test_pauses_follow_the_one_formula() -> None:
    rows = utterance(SENT)
    out = edit(rows, ins={2})  # before "said" (2.0-2.5 s)
    assert [(r.word, r.start, r.end, r.pause_after) for r in out[1:4]] == [
        ("he", 1.0, 1.5, 0.5), ("the", 2.0, 2.0, 0.0), ("said", 2.0, 2.5, 0.5)]
    out = edit(rows, delete={2})  # "he" now ends 1.5 s before "hola" starts at 3.0
    assert out[1].pause_after == pytest.approx(0.5 + 0.5 + 0.5)
    assert out[2].start - out[1].end == pytest.approx(out[1].pause_after)
    out = edit(rows, delete={2, 3})
    assert out[1].pause_after == pytest.approx(2.5)
    out = edit(rows, delete={4})  # the last word: the previous one takes its 2 s
    assert out[-1].pause_after == 2.0
    for deleted in ({0}, {1, 2}, {3}, {4}):
        out = edit(rows, delete=deleted, ins={1, 3})
        for a, b in pairwise(out):
            assert b.start - a.end == pytest.approx(a.pause_after)
    out = edit(utterance(SENT, timed=False), delete={2}, ins={3})
    assert all(r.start is None and r.pause_after is None for r in out)


# -- rates, seeds, epochs ----------------------------------------------------------------
def corpus(n_utts: int = 400, words: int = 50) -> dict[str, list[WordRow]]:
    rng = np.random.default_rng(5)
    vocab = [f"w{i}" for i in range(200)]
    return {f"u{u:04d}": utterance([(str(rng.choice(vocab)), ()) for _ in range(words)],
                                   f"u{u:04d}") for u in range(n_utts)}


def test_measured_rates_match_the_configured_ones() -> None:
    utts = corpus()
    opts = AugmentSection(sub_rate=0.06, del_rate=0.1, ins_rate=0.03)
    aug = Augmenter(opts, word_counts(utts.values()))
    sub = dele = ins = words = out_words = 0
    for utt_id, rows in utts.items():
        out, counts = aug.augment(rows, utterance_rng(1, 1, utt_id))
        sub, dele, ins = sub + counts.sub, dele + counts.dele, ins + counts.ins
        words += len(rows)
        out_words += len(out)
    assert words == 20000 and out_words == words - dele + ins
    assert sub / words == pytest.approx(0.06, abs=0.006)
    assert dele / words == pytest.approx(0.1, abs=0.008)
    assert ins / words == pytest.approx(0.03, abs=0.005)
    # substitutions alone, counted on the words themselves
    aug = Augmenter(AugmentSection(sub_rate=0.2), word_counts(utts.values()))
    changed = 0
    for utt_id, rows in utts.items():
        out, _ = aug.augment(rows, utterance_rng(1, 1, utt_id))
        changed += sum(a.word != b.word for a, b in zip(out, rows, strict=True))
    assert changed / words == pytest.approx(0.2, abs=0.012)


def test_utt_rate_leaves_the_other_utterances_clean() -> None:
    utts = corpus()
    counts = word_counts(utts.values())
    full = AugmentSection(sub_rate=0.06, del_rate=0.06, ins_rate=0.03)
    mixed = dataclasses.replace(full, utt_rate=0.5)
    edited = words = dele = 0
    for utt_id, rows in utts.items():
        out, got = Augmenter(mixed, counts).augment(rows, utterance_rng(1, 1, utt_id))
        if out == list(rows):
            assert (got.sub, got.dele, got.ins) == (0, 0, 0) and got.words == len(rows)
            continue
        edited += 1
        words, dele = words + len(rows), dele + got.dele
    assert edited / len(utts) == pytest.approx(0.5, abs=0.08)
    assert dele / words == pytest.approx(0.06, abs=0.01)  # full rates where edited
    # utt_rate 1 draws nothing more: every utterance as without the key
    same = dataclasses.replace(full, utt_rate=1.0)
    for utt_id, rows in utts.items():
        assert (Augmenter(same, counts).augment(rows, utterance_rng(1, 1, utt_id))
                == Augmenter(full, counts).augment(rows, utterance_rng(1, 1, utt_id)))
    assert not dataclasses.replace(full, utt_rate=0.0).active


def test_unigram_substitutes_follow_the_training_counts() -> None:
    aug = Augmenter(AugmentSection(sub_rate=0.5), {"a": 6, "b": 3, "c": 1})
    rng = np.random.default_rng(3)
    drawn = [aug.substitute("z", rng) for _ in range(20000)]
    shares = {w: drawn.count(w) / len(drawn) for w in "abc"}
    assert shares == pytest.approx({"a": 0.6, "b": 0.3, "c": 0.1}, abs=0.015)
    assert "a" not in {aug.substitute("a", rng) for _ in range(200)}  # never itself


def test_epochs_are_seeded_per_utterance_and_differ() -> None:
    utts = corpus(40, 20)
    seqs = table_to_seqs(utts, FULL13)
    opts = AugmentSection(sub_rate=0.05, del_rate=0.05, ins_rate=0.05)
    aug = TrainingAugmenter(Augmenter(opts, word_counts(utts.values())), utts, seqs, FULL13, 7)
    first, _ = aug.epoch(1)
    again, _ = TrainingAugmenter(Augmenter(opts, word_counts(utts.values())), utts, seqs,
                                 FULL13, 7).epoch(1)
    assert [s.words for s in first] == [s.words for s in again]
    assert [s.words for s in aug.epoch(2)[0]] != [s.words for s in first]
    other_seed = TrainingAugmenter(aug.augmenter, utts, seqs, FULL13, 8).epoch(1)[0]
    assert [s.words for s in other_seed] != [s.words for s in first]
    # an utterance's draws do not depend on the others (nor on their order)
    alone = dict(list(utts.items())[5:6])
    single = TrainingAugmenter(aug.augmenter, alone, seqs[5:6], FULL13, 7).epoch(1)[0]
    assert single[0].words == first[5].words
    # offsets are renumbered over the augmented words
    assert [s.offset for s in first] == list(np.cumsum([0, *(len(s) for s in first[:-1])]))


# -- confusable words ----------------------------------------------------------------------
def test_phone_distance_and_deletion_keys() -> None:
    assert phone_distance(("K", "AE", "T"), ("B", "AE", "T")) == 1
    assert phone_distance(("K", "AE", "T"), ("K", "AE", "T", "S")) == 1
    assert phone_distance(("DH", "EH", "R"), ("AH",)) == 3
    assert deletion_keys(("A", "B"), 1) == {("A", "B"), ("A",), ("B",)}


def test_neighbours_from_a_small_dictionary(tmp_path: Path) -> None:
    dic = tmp_path / "dict"
    dic.write_text("cat K AE1 T\nbat B AE1 T\ncats K AE1 T S\ndog D AO1 G\n"
                   "read R IY1 D\nread(2) R EH1 D\nred R EH1 D\n", encoding="utf-8")
    prons = read_dictionary(dic)
    assert prons["read"] == {("R", "IY", "D"), ("R", "EH", "D")}
    table = find_neighbours(prons, 1, counts={"bat": 1, "cats": 9})
    assert table["cat"] == [("cats", 1), ("bat", 1)]  # closer first, then more frequent
    assert table["dog"] == [] and table["red"] == [("read", 0)]
    assert find_neighbours(prons, 0)["cat"] == []


def test_neighbour_table_is_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dic = tmp_path / "dict"
    dic.write_text("cat K AE T\nbat B AE T\nhat HH AE T\n", encoding="utf-8")
    cache = tmp_path / "exp" / "augment_neighbours.json"
    counts = {"cat": 2, "bat": 1}
    table = load_neighbours(cache, counts, 1, dic)
    assert table == {"cat": [("bat", 1)], "bat": [("cat", 1)]}  # training words only
    assert json.loads(cache.read_text())["key"]["max_distance"] == 1

    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("rebuilt")

    import punct.data.confusable as confusable
    monkeypatch.setattr(confusable, "find_neighbours", fail)
    assert load_neighbours(cache, counts, 1, dic) == table  # read back
    with pytest.raises(AssertionError, match="rebuilt"):
        load_neighbours(cache, {**counts, "hat": 1}, 1, dic)  # another vocabulary


def test_confusable_words_from_the_cmu_dictionary() -> None:
    pytest.importorskip("pocketsphinx")
    words = ["their", "there", "they're", "cat", "bat", "cut", "the", "a", "zebra"]
    table = find_neighbours(read_dictionary(cmudict_path(), words), 1)
    assert {"there", "they're"} <= {w for w, d in table["their"] if d == 0}
    assert {"bat", "cut"} <= {w for w, _ in table["cat"]}
    assert ("the", 1) in table["a"] and table["zebra"] == []
    aug = Augmenter(AugmentSection(sub_rate=0.5, sub_source="confusable"),
                    {w: 1 for w in words}, table)
    rng = np.random.default_rng(0)
    assert {aug.substitute("their", rng) for _ in range(100)} == {"there", "they're"}
    assert {aug.substitute("zebra", rng) for _ in range(100)} <= set(words) - {"zebra"}


def test_missing_pocketsphinx_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pocketsphinx", None)
    with pytest.raises(MissingDataError, match=r"punct-recipes\[speech\]"):
        cmudict_path()
    assert "speech" in INSTALL_HINT


# -- config ------------------------------------------------------------------------------
def brnn(**augment: object) -> dict:
    return deep_merge(TINY, {"train": {"augment": augment}})


def test_augment_is_off_by_default_and_checked() -> None:
    assert not resolve_config(TINY).train.augment.active
    cfg = resolve_config(brnn(sub_rate=0.05, del_rate=0.05, sub_source="confusable"))
    opts = cfg.train.augment
    assert opts.active and (opts.ins_rate, opts.max_phone_distance) == (0.0, 1)
    for augment, message in (
            ({"sub": 0.1}, r"unknown key train\.augment\.sub; allowed: del_rate, "),
            ({"del_rate": 0.6}, r"train\.augment\.del_rate = 0\.6 is outside \[0\.0, 0\.5\]"),
            ({"ins_rate": -0.1}, r"train\.augment\.ins_rate = -0\.1 is outside"),
            ({"sub_rate": "high"}, r"train\.augment\.sub_rate = 'high' is not of type float"),
            ({"sub_source": "random"}, r"train\.augment\.sub_source = 'random' is not one of"),
            ({"max_phone_distance": 5}, r"train\.augment\.max_phone_distance = 5"),
            ({"seed_offset": -1}, r"train\.augment\.seed_offset = -1 is outside \[0, inf\]")):
        with pytest.raises(PunctInputError, match=message):
            resolve_config(brnn(**augment))
    with pytest.raises(PunctInputError, match=r"train\.augment = None is not of type"):
        resolve_config(deep_merge(TINY, {"train": {"augment": None}}))


def test_families_reading_acoustic_streams_refuse_augment() -> None:
    pp = ROOT / "conf/model/tiny/prosodic_pp.yaml"
    assert not load_config(pp).train.augment.active
    with pytest.raises(PunctInputError, match="prosodic_pp reads per-word acoustic streams"):
        load_config(pp, ["train.augment.del_rate=0.1"])
    with pytest.raises(PunctInputError, match=r"unipunc reads .*\(fbank\)"):
        load_config(ROOT / "conf/model/tiny/unipunc.yaml", ["train.augment.sub_rate=0.1",
                                                            "featurizer.streams=[fbank]"])


def test_iwslt_asr_configs() -> None:
    conf = ROOT / "egs/iwslt2012/punct1/conf/model"
    for path in (conf / "nagy_asr.yaml", conf / "tiny/nagy_asr.yaml"):
        cfg = load_config(path)
        opts = cfg.train.augment
        assert cfg.family == "nagy" and opts.sub_source == "confusable"
        assert opts.sub_rate + opts.del_rate + opts.ins_rate == pytest.approx(0.15)
        plain = load_config(path.with_name("nagy.yaml"))
        assert dataclasses.replace(cfg.train, augment=plain.train.augment) == plain.train
        assert cfg.model == plain.model and cfg.decode == plain.decode
    mixed = load_config(conf / "nagy_asr_mix.yaml")
    full = load_config(conf / "nagy_asr.yaml")
    assert mixed.train.augment == dataclasses.replace(full.train.augment, utt_rate=0.5)
    assert dataclasses.replace(mixed.train, augment=full.train.augment) == full.train


# -- training ------------------------------------------------------------------------------
AUG_CONFIG = deep_merge(TINY, {"train": {"epochs": 4, "augment": {
    "sub_rate": 0.1, "del_rate": 0.1, "ins_rate": 0.1}}})
STEPS = 15  # 120 one-window utterances, batch 8


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("augment")
    make_set(root / "train", 120, 1)
    make_set(root / "dev", 20, 2)
    (root / "aug.yaml").write_text(yaml.safe_dump(AUG_CONFIG))
    return root


def cli(data: Path, exp: Path, *extra: str) -> int:
    return train_cli.main(["--config", str(data / "aug.yaml"), "--train-dir",
                           str(data / "train"), "--dev-dir", str(data / "dev"), "--exp-dir",
                           str(exp), "--quiet", *extra])


def weights(exp: Path) -> dict[str, torch.Tensor]:
    return torch.load(exp / "last.pt", weights_only=True)["model"]


@pytest.fixture(scope="module")
def uninterrupted(data: Path) -> Path:
    exp = data / "full"
    assert cli(data, exp) == 0
    return exp


def test_training_augments_every_epoch_afresh(data: Path, uninterrupted: Path) -> None:
    log = (uninterrupted / "train.log").read_text(encoding="utf-8")
    lines = [line.split("augmented: ", 1)[1] for line in log.splitlines()
             if "augmented: " in line]
    assert len(lines) == 4 and len(set(lines)) == 4  # one fresh draw per epoch
    assert all(line.endswith(f"of {sum(1 for _ in (data / 'train/words.tsv').open()) - 1} "
                             "words") for line in lines)
    dev_words = sum(1 for _ in (data / "dev/words.tsv").open()) - 1
    assert f"dev {dev_words} words" in log  # dev is never augmented
    plain = data / "plain"
    assert train_cli.main(["--config", str(data / "aug.yaml"), "--train-dir",
                           str(data / "train"), "--dev-dir", str(data / "dev"), "--exp-dir",
                           str(plain), "--quiet", "--set", "train.augment.sub_rate=0",
                           "--set", "train.augment.del_rate=0",
                           "--set", "train.augment.ins_rate=0"]) == 0
    assert "augmented" not in (plain / "train.log").read_text(encoding="utf-8")
    a, b = weights(uninterrupted), weights(plain)
    assert any(not torch.equal(a[k], b[k]) for k in a)
    hist = json.loads((uninterrupted / "history.json").read_text(encoding="utf-8"))
    assert hist[-1]["dev_micro_f1"] > 0.5  # still learns the marks (all-O gives 0)


def test_preempted_augmented_run_resumes_identically(
        data: Path, uninterrupted: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"n": 0}
    original = SlotModel.loss

    def loss(self: SlotModel, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        if self.training:
            calls["n"] += 1
            if calls["n"] == 2 * STEPS + 5:  # in epoch 3
                os.kill(os.getpid(), signal.SIGTERM)
        return original(self, batch)

    monkeypatch.setattr(SlotModel, "loss", loss)
    exp = data / "preempted"
    assert cli(data, exp) == PREEMPTED_EXIT
    ckpt = torch.load(exp / "last.pt", weights_only=True)
    assert (ckpt["epoch"], ckpt["epoch_done"]) == (3, False)  # stopped inside epoch 3
    monkeypatch.setattr(SlotModel, "loss", original)
    assert cli(data, exp, "--resume") == 0
    for name in ("last.pt", "best.pt"):
        a = torch.load(uninterrupted / name, weights_only=True)["model"]
        b = torch.load(exp / name, weights_only=True)["model"]
        assert all(torch.equal(a[k], b[k]) for k in a), name
    ha = json.loads((uninterrupted / "history.json").read_text(encoding="utf-8"))
    hb = json.loads((exp / "history.json").read_text(encoding="utf-8"))
    assert [h["train_loss"] for h in ha] == [h["train_loss"] for h in hb]


def test_confusable_training_caches_its_neighbours(data: Path) -> None:
    pytest.importorskip("pocketsphinx")
    exp = data / "confusable"
    args = ["--set", "train.epochs=1", "--set", "train.augment.sub_source=confusable"]
    assert cli(data, exp, *args) == 0
    log = (exp / "train.log").read_text(encoding="utf-8")
    assert "have confusable neighbours within 1 phone(s)" in log
    table = json.loads((exp / "augment_neighbours.json").read_text(encoding="utf-8"))["table"]
    assert {"yes", "stop", "huh"} <= set(table)  # the training words in the dictionary
    assert "w3" not in table


def test_resume_accepts_an_experiment_written_before_train_augment(
        data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exp = data / "old"
    args = ["--set", "train.epochs=1"] + [f"--set=train.augment.{k}_rate=0"
                                          for k in ("sub", "del", "ins")]
    assert cli(data, exp, *args) == 0
    saved = yaml.safe_load((exp / "config.yaml").read_text(encoding="utf-8"))
    del saved["train"]["augment"]  # as written by the code before this option
    (exp / "config.yaml").write_text(yaml.safe_dump(saved, sort_keys=False), encoding="utf-8")
    assert cli(data, exp, *args, "--resume") == 0
    capsys.readouterr()
    assert cli(data, exp, "--set", "train.epochs=1", "--resume") == 1  # augment on
    assert "config differs from the experiment's in ['train']" in capsys.readouterr().err
