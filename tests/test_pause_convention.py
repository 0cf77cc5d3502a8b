"""Training/stage 6 and restore agree on pauses, the document end included.

A document is decoded twice with the real command-line tools: by stage 6
(``punct.bin.decode`` on a data dir whose ``words.tsv`` got its pauses the way stage 2
writes them) and by ``punct.bin.restore`` from the stage-2 CTM of the same words. The
sequences both hand to the model, and the batch tensors the featurizer makes of them,
must be identical: same words, same pause vector (the last word's end-of-document pause
included), same tensors.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from helpers.tiny import save_untrained
from helpers.tinybert import build_tiny_bert

import punct.engine.decode
import punct.infer.stream
from punct.align.pauses import attach_timings, compute_pauses
from punct.bin import decode as decode_cli
from punct.bin import restore as restore_cli
from punct.data.ctm import write_ctm
from punct.data.timed import END_OF_DOCUMENT_PAUSE, TimedWord
from punct.models.base import WordSeq
from punct.wordtable import rows_from_text, write_word_table

WORDS = ("hello", "world", "what", "is", "it")
TEXTS = {
    "rec1": "Hello world, what is it? It is. Hello, world!",
    "rec2": "What is it, world? Hello.",
}
# seconds between words (a 0.4 ms overlap is float noise: clipped to 0) and the trailing
# silence of the audio, which the end-of-document convention ignores
GAPS = {"rec1": [0.0, 0.2314, 0.0, 0.0, 0.6, 0.031, 0.25, -0.0004], "rec2": [0.0, 0.0, 0.45, 0.0]}
TAIL = {"rec1": 0.08, "rec2": 0.9}


def _timings(utt: str) -> tuple[list[TimedWord], float]:
    words = [w.strip(",.?!").lower() for w in TEXTS[utt].split()]
    out, t = [], 0.1
    for i, w in enumerate(words):
        start = round(t, 3)
        end = round(start + 0.2 + 0.01 * i, 3)
        out.append(TimedWord(w, start, end))
        t = end + (GAPS[utt][i] if i < len(GAPS[utt]) else 0.0)
    return out, out[-1].end + TAIL[utt]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A data dir with stage 2's words.tsv, and stage 2's CTM of the same words."""
    root = tmp_path_factory.mktemp("convention")
    table, ctm = {}, {}
    for utt in TEXTS:
        words, end = _timings(utt)
        rows = attach_timings(rows_from_text(utt, TEXTS[utt]), words, "ctm")
        table[utt] = compute_pauses(rows, end, "ctm")
        ctm[utt] = words
    data_dir = root / "data" / "test"
    write_word_table(data_dir / "words.tsv", table)
    write_ctm(root / "align.ctm", ctm)
    return data_dir, root / "align.ctm"


CONFIGS: dict[str, dict[str, Any]] = {
    "autopunct_discrete": {
        "family": "autopunct", "label_set": "iwslt4",
        "model": {"encoder_train_layers": 0,
                  "silence": {"kind": "discrete", "n_buckets": 300, "bucket_s": 0.01},
                  "head": {"hidden": 8}, "cap_head": {"hidden": 8}},
        "train": {"window": 12, "stride": 6},
        "decode": {"window": 12, "stride": 4, "batch_size": 3, "bf16": "off"},
    },
    "brnn": {
        "family": "brnn", "label_set": "iwslt4",
        "featurizer": {"min_count": 1},
        "model": {"hidden": 8, "embedding": 8},
        "train": {"window": 5, "stride": 5},
        "decode": {"window": 5, "stride": 2, "batch_size": 3, "bf16": "off"},
    },
}


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def exp(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp(request.param)
    config = dict(CONFIGS[request.param])
    if config["family"] == "autopunct":
        config["featurizer"] = {"encoder": str(build_tiny_bert(root / "enc", words=WORDS))}
    train = [WordSeq("t", list(WORDS), np.full(len(WORDS), np.nan, np.float32),
                     np.zeros((len(WORDS), 3), np.float32), np.zeros(len(WORDS), np.int64))]
    return save_untrained(config, root / "exp", seed=0, train_seqs=train)


def _capture(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, list[WordSeq]]]:
    """Record (featurizer, seqs) of every predict_words call of decode and restore."""
    seen: list[tuple[Any, list[WordSeq]]] = []
    original = punct.engine.decode.predict_words

    def recording(model: Any, featurizer: Any, seqs: list[WordSeq], *args: Any,
                  **kwargs: Any) -> Any:
        seen.append((featurizer, list(seqs)))
        return original(model, featurizer, seqs, *args, **kwargs)

    monkeypatch.setattr(punct.engine.decode, "predict_words", recording)
    monkeypatch.setattr(punct.infer.stream, "predict_words", recording)
    monkeypatch.setattr(decode_cli, "predict_words", recording)
    return seen


def _by_doc(seen: list[tuple[Any, list[WordSeq]]]) -> tuple[Any, dict[str, WordSeq]]:
    docs = {s.utt_id: dataclasses.replace(s, offset=0) for _, seqs in seen for s in seqs}
    return seen[0][0], docs


def _batch(featurizer: Any, seq: WordSeq, window: int, stride: int) -> dict[str, torch.Tensor]:
    return featurizer.collate(featurizer.windows([seq], window, stride))


def test_stage6_and_restore_give_the_model_identical_inputs(
        exp: Path, data: tuple[Path, Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    data_dir, ctm = data
    seen = _capture(monkeypatch)
    assert decode_cli.main(["--exp-dir", str(exp), "--data-dir", str(data_dir),
                            "--out-dir", str(tmp_path / "decode"), "--quiet"]) == 0
    feat6, stage6 = _by_doc(seen)
    seen.clear()
    assert restore_cli.main(["--exp-dir", str(exp), str(ctm), "--input-format", "ctm",
                             "-o", str(tmp_path / "restored.tsv"), "--output-format", "table",
                             "--quiet"]) == 0
    _, restored = _by_doc(seen)
    assert sorted(stage6) == sorted(restored) == sorted(TEXTS)
    for doc, a in stage6.items():
        b = restored[doc]
        assert a.words == b.words
        # the same pause vector, bit for bit, the document end included
        assert a.pauses.dtype == b.pauses.dtype == np.float32
        assert np.array_equal(a.pauses, b.pauses), (doc, a.pauses, b.pauses)
        assert a.pauses[-1] == END_OF_DOCUMENT_PAUSE
        assert np.array_equal(a.times, b.times)
        # the same batch tensors (the data dir's reference labels, which restore has not
        # got and the model does not read, blanked)
        unlabelled = dataclasses.replace(a, punct=np.zeros_like(a.punct),
                                         cap=np.zeros_like(a.cap))
        for window, stride in ((12, 4), (5, 2)):
            ta, tb = _batch(feat6, unlabelled, window, stride), _batch(feat6, b, window, stride)
            assert ta.keys() == tb.keys()
            for key in ta:
                assert torch.equal(torch.nan_to_num(ta[key]), torch.nan_to_num(tb[key])), key


def test_the_trailing_silence_of_the_audio_does_not_reach_the_model(
        data: tuple[Path, Path]) -> None:
    """Two documents with very different trailing silences (80 ms, 900 ms) both end in the
    end-of-document pause, in words.tsv as at restore."""
    from punct.wordtable import read_word_table

    table = read_word_table(data[0] / "words.tsv")
    assert [rows[-1].pause_after for rows in table.values()] == [END_OF_DOCUMENT_PAUSE] * 2
    inner = [r.pause_after for r in table["rec1"][:-1]]
    assert inner == [0.0, 0.231, 0.0, 0.0, 0.6, 0.031, 0.25, 0.0]


def test_a_timed_token_of_several_words_is_shared_out_not_an_overlap() -> None:
    """A TextGrid interval or JSONL item holding two words: they share its span (no
    pause between them), instead of two words on the same span (a 100 % overlap)."""
    import io

    from punct.infer.inputs import read_jsonl, split_span

    new, york = split_span(["new", "york"], 1.0, 1.7, 3)
    assert (new.word, new.start, york.word, york.end, new.line) == ("new", 1.0, "york", 1.7, 3)
    assert new.end == york.start == pytest.approx(1.3)
    rec = b'{"id": "r", "words": [{"word": "New York,", "start": 0.5, "end": 1.2}, ' \
          b'{"word": "then", "start": 1.5, "end": 1.8}]}\n'
    words = list(next(read_jsonl(io.BytesIO(rec), "in")).words)
    assert [(w.word, w.pause_after) for w in words] == [
        ("new", 0.0), ("york", 0.3), ("then", END_OF_DOCUMENT_PAUSE)]
