"""The array engine (``predict_words``: featurizer plans, slot aggregation, vectorised
casing rule) against today's engine kept as the oracle (``punct.engine.reference_decode``):
the same per-word decisions and probabilities on the IWSLT 2012 word tables, with a tiny
random model of every transformer family."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.tinybert import build_tiny_bert
from helpers.unipunc import make_seq, unipunc_config

from punct.bin import bench_engine
from punct.config import resolve_config
from punct.data.iwslt import blocks, parse_che_tsv, word_rows
from punct.data.sequences import rows_to_seq
from punct.engine import decode as decode_module
from punct.engine.constraints import passthrough_flags
from punct.engine.decode import decide, passthrough_by_form, predict_words, rule_caps
from punct.engine.reference_decode import reference_predict_words, reference_rule_caps
from punct.labels import get_label_set
from punct.models.base import Registry, WordSeq
from punct.models.subword import plan as plan_module

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "iwslt2012"
pytestmark = pytest.mark.skipif(not SHARED.is_dir(), reason="no shared IWSLT 2012 copy")
BLOCK_SIZES = (3, 41, 120, 1, 250, 17, 0)  # utterance lengths, cycled (0: an empty one)


def iwslt_seqs(name: str, label_set: str, limit: int | None = None) -> list[WordSeq]:
    """The words of ``che_original/<name>`` as utterances of varied lengths."""
    words = parse_che_tsv(SHARED / "che_original" / name).words[:limit]
    ls = get_label_set(label_set)
    seqs: list[WordSeq] = []
    pos = offset = k = 0
    while pos < len(words):
        size = BLOCK_SIZES[k % len(BLOCK_SIZES)]
        rows = word_rows(f"u{k}", blocks(words[pos:pos + size], max(size, 1))[0]
                         if size else [])
        seq = rows_to_seq(rows, ls, offset)
        seq.utt_id = f"u{k}"
        seq.pauses = np.where(np.arange(len(seq)) % 7 == 3, 0.4, np.nan).astype(np.float32)
        seqs.append(seq)
        pos, offset, k = pos + size, offset + len(seq), k + 1
    return seqs


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny BERT knowing the 300 most frequent dev words; the rest are split into
    letters (several pieces, long words cut at ``max_pieces_per_word``)."""
    dev = parse_che_tsv(SHARED / "che_original" / "dev2012").words
    common = [w for w, _ in Counter(w.word.lower() for w in dev).most_common(300)]
    return build_tiny_bert(tmp_path_factory.mktemp("bert"), words=common, hidden=32,
                           max_positions=64)


def family_config(family: str, bert: Path, window: int) -> dict:
    enc = {"encoder": str(bert)}
    decode = {"window": window, "stride": window // 3, "batch_size": 7}
    if family == "autopunct":
        return {"family": "autopunct", "label_set": "iwslt4", "featurizer": enc,
                "model": {"silence": {"kind": "continuous"}, "head": {"dropout": 0.0},
                          "cap_head": {"dropout": 0.0}}, "decode": decode}
    if family == "nagy":
        return {"family": "nagy", "label_set": "full13", "featurizer": enc,
                "model": {"hidden": 24, "dropout": 0.0}, "decode": decode}
    if family == "courtland":
        return {
            "family": "courtland", "label_set": "iwslt4", "featurizer": enc,
            "model": {"hidden": 8, "dropout": 0.0}, "train": {"window": window, "stride": 8},
            "decode": {**decode, "aggregate": "sum"}}
    assert family == "unipunc"
    return {**unipunc_config(bert), "decode": decode}


def build(family: str, bert: Path, window: int) -> tuple[dict, object, torch.nn.Module]:
    config = resolve_config(family_config(family, bert, window))
    fam = Registry.get(family)
    feat = fam.make_featurizer(config)
    feat.fit([make_seq("a", 12, seed=1), make_seq("b", 9, seed=2)] if family == "unipunc"
             else iwslt_seqs("dev2012", config.label_set, 400))
    torch.manual_seed(0)
    model = fam.make_model(config, feat)
    if family == "courtland":  # from the prior (rare marks) to random: marks get decided
        with torch.no_grad():
            torch.nn.init.normal_(model.window_layer.bias)
    return config, feat, model


def test_type_flags_computed_once_per_type(bert: Path) -> None:
    """A fact about word forms (``PieceTable.type_flags``) is computed once per type: a
    later plan with new forms computes only those."""
    _, feat, _ = build("nagy", bert, 24)
    ls = get_label_set("full13")
    calls: list[list[str]] = []

    def fact(forms: list[str]) -> list[bool]:
        calls.append(list(forms))
        return [form.startswith("w") for form in forms]

    def seq(words: list[str]) -> WordSeq:
        return WordSeq("u", words, np.full(len(words), np.nan, dtype=np.float32),
                       np.zeros((len(words), len(ls.labels)), dtype=np.float32),
                       np.zeros(len(words), dtype=np.int64))

    table = feat.plan([seq(["well", "so", "well", "wait"])], 24, 8).word_types()[2]
    first = table.type_flags(fact).copy()
    assert [table.words[k] for k in np.flatnonzero(first)] == sorted(
        w for w in set(table.words) if w.startswith("w"))
    assert len(calls) == 1 and table.type_flags(fact).tolist() == first.tolist()
    known = len(table.words)
    feat.plan([seq(["walrus", "so", "zebra", "walrus"])], 24, 8)
    flags = table.type_flags(fact)
    assert calls[1:] == [list(table.words[known:])] and sorted(calls[1]) == ["walrus", "zebra"]
    assert flags[:known].tolist() == first.tolist()
    assert flags.tolist() == [w.startswith("w") for w in table.words]


def test_decoding_batches_hold_what_the_model_reads(bert: Path) -> None:
    """The engine asks the plan only for the inputs the model reads
    (``PunctModel.predict_inputs``): nagy's encoder gets its pieces and mask, and the
    decisions are those of a run with every input."""
    config, feat, model = build("nagy", bert, 24)
    ls = get_label_set(config.label_set)
    seqs = iwslt_seqs("test2011", ls.name, 1500)
    seen: set[str] = set()
    predict = model.predict

    def spy(batch: dict[str, torch.Tensor]) -> object:
        seen.update(batch)
        return predict(batch)

    model.predict = spy
    narrow = predict_words(model, feat, seqs, 24, 8, 7, False, "mean")
    assert seen == {"input_ids", "attention_mask", "word_ids"}
    model.predict_inputs = None
    seen.clear()
    wide = predict_words(model, feat, seqs, 24, 8, 7, False, "mean")
    assert seen >= {"pauses", "prev_pos", "utt_start"}
    assert np.array_equal(narrow.punct, wide.punct)
    plan = feat.plan(seqs, 24, 8)
    with pytest.raises(ValueError, match="no input"):
        next(plan.batches(np.arange(3), 2, ("input_ids", "audio")))


@pytest.mark.parametrize(("family", "window", "data"), [
    ("autopunct", 32, "test2011"), ("autopunct", 8, "dev2012"), ("nagy", 24, "test2011"),
    ("courtland", 16, "test2011"), ("unipunc", 32, "test2011")])
def test_array_engine_decides_as_the_reference(family: str, window: int, data: str,
                                               bert: Path) -> None:
    config, feat, model = build(family, bert, window)
    ls = get_label_set(config.label_set)
    seqs = iwslt_seqs(data, ls.name, 4000 if data == "dev2012" else None)
    dec = config.decode
    args = (model, feat, seqs, window, dec.stride, dec.batch_size, False, dec.aggregate)
    new = predict_words(*args, exclusive=ls.exclusive)
    old = reference_predict_words(*args, exclusive=ls.exclusive)
    assert new.n_windows == old.n_windows > len(seqs) // 2
    assert new.counts.tolist() == old.counts.tolist() and new.counts.max() >= 3
    np.testing.assert_allclose(new.punct, old.punct, rtol=0, atol=1e-12)
    assert (new.cap is None) == (old.cap is None) == (family in ("nagy", "courtland"))
    if new.cap is not None:
        np.testing.assert_allclose(new.cap, old.cap, rtol=0, atol=1e-12)
    for threshold in (0.5, 0.3):
        marks, caps = decide(new, seqs, ls.labels, threshold, ls.exclusive)
        ref_marks, ref_caps = decide(old, seqs, ls.labels, threshold, ls.exclusive)
        if new.cap is None:
            ref_caps = reference_rule_caps(ref_marks, seqs, ls.labels)
        assert np.array_equal(marks, ref_marks) and np.array_equal(caps, ref_caps)
        assert 0 < marks.sum() < marks.size  # the comparison decides something


def test_outputs_handed_in_blocks_as_in_one(bert: Path, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    """The slot outputs of a model on the host reach the aggregator as one block at the
    end; in blocks of a few hundred rows (as from a GPU) the sums are the same."""
    config, feat, model = build("nagy", bert, 24)
    ls = get_label_set(config.label_set)
    seqs = iwslt_seqs("test2011", ls.name, 3000)
    args = (model, feat, seqs, 24, 8, 7, False, "mean")
    one = predict_words(*args, exclusive=ls.exclusive)
    monkeypatch.setattr(decode_module, "HOST_FLUSH_ROWS", 300)
    blocks_ = predict_words(*args, exclusive=ls.exclusive)
    np.testing.assert_array_equal(one.punct, blocks_.punct)
    np.testing.assert_array_equal(one.counts, blocks_.counts)


def test_pass_through_words_found_once_per_form(bert: Path) -> None:
    """The plan's word forms give each word's pass-through flag (forms repeated, the
    sequences not in the order of their global offsets); the decisions use them as
    they would compute them word by word."""
    config, feat, model = build("nagy", bert, 24)
    ls = get_label_set(config.label_set)
    forms = ["so", "🙂", "http://x.org/a", "[noise]", "it's", "well", "—", "ok", "½"]
    seqs = []
    offset = 0
    for k in range(40):
        words = [forms[(k * 7 + i) % len(forms)] for i in range(k % 9)]
        seq = WordSeq(f"u{k}", words, np.full(len(words), np.nan, dtype=np.float32),
                      np.zeros((len(words), len(ls.labels)), dtype=np.float32),
                      np.zeros(len(words), dtype=np.int64), offset)
        seqs.append(seq)
        offset += len(seq)
    n_words = offset
    seqs = [seqs[k] for k in np.random.default_rng(5).permutation(len(seqs))]
    through = passthrough_by_form(feat.plan(seqs, 24, 8).word_types(), n_words)
    want = np.zeros(n_words, dtype=bool)
    for seq in seqs:
        want[seq.offset:seq.offset + len(seq)] = passthrough_flags(seq.words)
    assert np.array_equal(through, want) and 0 < want.sum() < len(want) // 2
    pred = predict_words(model, feat, seqs, 24, 8, 7, False, "mean")
    assert np.array_equal(passthrough_by_form(pred.word_forms, n_words), want)
    rng = np.random.default_rng(3)
    marks = rng.random((n_words, len(ls.labels))) < 0.2
    assert np.array_equal(rule_caps(marks, seqs, ls.labels, through),
                          reference_rule_caps(marks, seqs, ls.labels))
    for rules in (False, True):
        got = decide(pred, seqs, ls.labels, 0.3, ls.exclusive, constraints=rules)
        computed = decide(dataclasses.replace(pred, word_forms=None), seqs, ls.labels, 0.3,
                          ls.exclusive, constraints=rules)
        assert all(np.array_equal(a, b) for a, b in zip(got, computed, strict=True))


def test_sum_of_activations_with_casing_as_the_reference(bert: Path) -> None:
    """autopunct under ``sum``: only the activations (marks and casing) are gathered,
    and the sums are the reference's."""
    config, feat, model = build("autopunct", bert, 32)
    ls = get_label_set(config.label_set)
    seqs = iwslt_seqs("test2011", ls.name, 3000)
    args = (model, feat, seqs, 32, 10, 7, False, "sum")
    new = predict_words(*args, exclusive=ls.exclusive)
    old = reference_predict_words(*args, exclusive=ls.exclusive)
    assert new.cap is not None and old.cap is not None
    np.testing.assert_allclose(new.punct, old.punct, rtol=0, atol=1e-12)
    np.testing.assert_allclose(new.cap, old.cap, rtol=0, atol=1e-12)


@pytest.mark.parametrize("family", ["autopunct", "courtland"])
def test_plan_batches_equal_collated_windows(family: str, bert: Path) -> None:
    """Every batch of the plan holds exactly the inputs ``windows`` + ``collate`` give."""
    _, feat, _ = build(family, bert, 16)
    seqs = iwslt_seqs("test2011", "iwslt4", 1500)
    plan = feat.plan(seqs, 16, 5)
    windows = feat.windows(seqs, 16, 5)
    assert plan.lengths.tolist() == [len(w["word_ids"]) for w in windows]
    order = np.argsort(-plan.lengths, kind="stable")
    for lo in range(0, len(order), 9):
        rows = order[lo:lo + 9]
        got = plan.batch(rows)
        want = feat.collate([windows[i] for i in rows])
        for key, value in got.items():
            assert value.dtype == want[key].dtype, key
            torch.testing.assert_close(value, want[key], equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize(("family", "chunk"), [("autopunct", 1), ("autopunct", 700),
                                               ("courtland", 700), ("courtland", 1 << 18)])
def test_chunked_batches_equal_collated_windows(family: str, chunk: int, bert: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """``batches`` fills several batches at once (``chunk`` positions at most: one batch,
    a few, all): every batch equals ``collate`` of its windows, with empty utterances in
    the input, a batch size that does not divide the window count, and courtland's fixed
    width."""
    monkeypatch.setattr(plan_module, "CHUNK_POSITIONS", chunk)
    _, feat, _ = build(family, bert, 16)
    seqs = iwslt_seqs("test2011", "iwslt4", 700)
    assert any(len(s) == 0 for s in seqs)
    plan = feat.plan(seqs, 16, 5)
    windows = feat.windows(seqs, 16, 5)
    order = np.argsort(-plan.lengths, kind="stable")
    assert len(order) % 9
    for inputs in (("input_ids", "attention_mask"), ("pauses", "prev_pos"), None):
        seen = []
        for rows, got in plan.batches(order, 9, inputs):
            seen.extend(rows.tolist())
            want = feat.collate([windows[i] for i in rows])
            keys = set(want) - {"punct", "cap"}  # no training targets
            assert set(got) == (keys if inputs is None else {"word_ids", *inputs})
            for key, value in got.items():
                assert value.dtype == want[key].dtype, key
                torch.testing.assert_close(value, want[key], equal_nan=True, rtol=0, atol=0)
        assert seen == order.tolist()


def test_window_walk_together_as_one_by_one(bert: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The windows are the same whether the sequences are walked together (one array
    step per window of each) or one by one (bisect), and they are ``windows``'s."""
    _, feat, _ = build("autopunct", bert, 16)
    seqs = iwslt_seqs("test2011", "iwslt4", 3000)
    plans = []
    for together in (1, 10**9):
        monkeypatch.setattr(plan_module, "WALK_TOGETHER", together)
        plans.append(feat.plan(seqs, 16, 5))
    one, other = plans
    assert one.first.tolist() == other.first.tolist()
    assert one.last.tolist() == other.last.tolist()
    assert one.lengths.tolist() == [len(w["word_ids"]) for w in feat.windows(seqs, 16, 5)]


def test_rule_caps_vectorised_as_the_loop() -> None:
    rng = np.random.default_rng(0)
    labels = get_label_set("full13").labels
    seqs = iwslt_seqs("test2011", "full13", 3000)
    n = sum(len(s) for s in seqs)
    marks = rng.random((n, len(labels))) < 0.08
    assert np.array_equal(rule_caps(marks, seqs, labels),
                          reference_rule_caps(marks, seqs, labels))


@pytest.mark.parametrize("case", ["in_order", "passthrough", "empty_utterances", "shuffled"])
def test_rule_caps_in_order_shortcut_as_the_loop(case: str) -> None:
    """Words in order with none passed through take a shortcut; pass-through words, empty
    utterances and utterances out of order take the general path: both as the loop."""
    rng = np.random.default_rng(1)
    labels = get_label_set("full13").labels
    seqs = iwslt_seqs("test2011", "full13", 3000)[:60]
    if case == "passthrough":  # a symbol at some utterance heads and after some ends
        for seq in [s for s in seqs if len(s)][::3]:
            seq.words[0] = "🙂"
            seq.words[len(seq) // 2] = "[noise]"
    if case == "empty_utterances":
        seqs = [s for seq in seqs for s in (seq, dataclasses.replace(seq, words=[]))]
    offset = 0
    for seq in seqs:
        seq.offset, offset = offset, offset + len(seq)
    if case == "shuffled":
        seqs = [seqs[k] for k in rng.permutation(len(seqs))]
    marks = rng.random((offset, len(labels))) < 0.1
    want = reference_rule_caps(marks, seqs, labels)
    assert np.array_equal(rule_caps(marks, seqs, labels), want)
    through = np.zeros(offset, dtype=bool)
    for seq in seqs:
        through[seq.offset:seq.offset + len(seq)] = passthrough_flags(seq.words)
    assert through.any() == (case == "passthrough")
    assert np.array_equal(rule_caps(marks, seqs, labels, through), want)
    assert (want == 1).sum() > len(seqs) // 2


def test_bench_engine_reports_both_engines_identical(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench.json"
    assert bench_engine.main(["--stub-encoder", "--iwslt", str(SHARED / "che_original" /
                              "test2011"), "--family", "nagy", "--window", "32", "--reps", "1",
                              "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["identical"] is True and report["words"] == 12626
    assert set(report["words_per_s"]) == {"reference", "engine"} and report["threads"] == 1
    assert json.loads(capsys.readouterr().out) == report
