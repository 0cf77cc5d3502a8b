"""punct-export: the Hub layout, and export -> load gives identical outputs for every family."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.pp import synthetic_corpus
from helpers.tiny import VOCAB, save_untrained, seq
from helpers.tinybert import build_tiny_bert
from helpers.unipunc import make_seq, unipunc_config
from safetensors.torch import load_file
from transformers.utils import logging as hf_logging

from punct import Restorer
from punct.bin import export as export_cli
from punct.engine.decode import predict_words
from punct.errors import MissingDataError
from punct.export.system import load_system
from punct.models.base import WordSeq

TEXT = ["the yes stop and we go huh", "a zebra is it yes the of to"]


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("bert"), words=VOCAB, hidden=32)


def _text_seqs() -> list[WordSeq]:
    out, offset = [], 0
    for k, text in enumerate(TEXT):
        s = seq(text.split(), offset)
        s.utt_id = f"u{k}"
        out.append(s)
        offset += len(s)
    return out


def _unipunc_seqs() -> list[WordSeq]:
    return [make_seq("a", 12, 0, seed=1), make_seq("b", 9, 12, seed=2)]


def _config(family: str, bert: Path) -> tuple[dict, list[WordSeq], list[WordSeq]]:
    """(raw config, training seqs for the featurizer, test seqs) of a tiny ``family``."""
    text = _text_seqs()
    enc = {"encoder": str(bert)}
    if family == "brnn":
        return ({"family": "brnn", "label_set": "iwslt4", "featurizer": {"min_count": 1},
                 "model": {"hidden": 8}}, text, text)
    if family == "autopunct":
        return ({"family": "autopunct", "label_set": "iwslt4", "featurizer": enc,
                 "model": {"head": {"dropout": 0.0}, "cap_head": {"dropout": 0.0}}}, text, text)
    if family == "nagy":
        return ({"family": "nagy", "label_set": "iwslt4", "featurizer": enc,
                 "model": {"hidden": 24, "dropout": 0.0}}, text, text)
    if family == "courtland":
        return ({
            "family": "courtland", "label_set": "iwslt4", "featurizer": enc,
            "model": {"hidden": 8, "dropout": 0.0}, "train": {"window": 16, "stride": 8},
            "decode": {"aggregate": "sum"}}, text, text)
    if family == "prosodic_pp":
        rng = np.random.default_rng(0)
        return ({"family": "prosodic_pp", "label_set": "moro2",
                 "featurizer": {"streams": ["prosody"],
                                "hmm": {"n_states": 3, "n_mix": 1, "n_iter": 2}},
                 "train": {"window": 4, "stride": 1}},
                synthetic_corpus(4, rng), synthetic_corpus(2, rng))
    assert family == "unipunc"
    return unipunc_config(bert), _unipunc_seqs(), _unipunc_seqs()


FAMILIES = ("brnn", "autopunct", "nagy", "courtland", "prosodic_pp", "unipunc")


@pytest.mark.parametrize("family", FAMILIES)
def test_export_then_load_gives_identical_outputs(family: str, bert: Path,
                                                  tmp_path: Path) -> None:
    raw, train, test = _config(family, bert)
    exp = tmp_path / "exp" / f"{family}_x"
    exp.mkdir(parents=True)
    save_untrained(raw, exp, seed=3, train_seqs=train)
    out = tmp_path / "export"
    assert export_cli.main(["--exp-dir", str(exp), "--out", str(out)]) == 0
    assert {"config.json", "model.safetensors", "featurizer", "README.md"} <= {
        p.name for p in out.iterdir()}
    meta = json.loads((out / "config.json").read_text())
    assert meta["family"] == family and meta["format"] == "punct-recipes"
    # the weights are the checkpoint's, tensor for tensor
    state = torch.load(exp / "best.pt", weights_only=True)["model"]
    saved = load_file(str(out / "model.safetensors"))
    assert saved.keys() == state.keys()
    assert all(torch.equal(saved[k], state[k]) for k in state)

    a, b = load_system(exp), load_system(out)
    assert b.exported and not a.exported and b.label_set == a.label_set
    window, stride = {"prosodic_pp": (4, 1), "courtland": (16, 4)}.get(family, (8, 4))
    pa = predict_words(a.model, a.featurizer, test, window, stride)
    pb = predict_words(b.model, b.featurizer, test, window, stride)
    assert pa.punct.shape[0] == sum(len(s) for s in test) and pa.counts.min() >= 1
    np.testing.assert_array_equal(pa.punct, pb.punct)
    if pa.cap is None:
        assert pb.cap is None
    else:
        np.testing.assert_array_equal(pa.cap, pb.cap)
    if not a.streams:  # text systems: the API gives the same restored text either way
        ra = Restorer.from_pretrained(exp, device="cpu", precision="fp32")
        rb = Restorer.from_pretrained(out, device="cpu", precision="fp32")
        assert ra.restore(TEXT) == rb.restore(TEXT)
        assert len(rb.restore(TEXT[0]).split()) == len(TEXT[0].split())


def test_config_records_decision_rule_thresholds_and_card(bert: Path, tmp_path: Path) -> None:
    raw, train, _ = _config("autopunct", bert)
    raw["label_set"] = "full13"
    raw["decode"] = {"window": 32, "threshold": 0.4}
    full = [WordSeq(s.utt_id, s.words, s.pauses, np.zeros((len(s), 13), np.float32), s.cap,
                    s.offset) for s in train]
    exp = tmp_path / "ap_full"
    exp.mkdir()
    save_untrained(raw, exp, seed=1, train_seqs=full)
    (exp / "thresholds.json").write_text(json.dumps(
        {"label_set": "full13", "thresholds": {"COMMA": 0.3, "PERIOD": 0.6}}))
    (exp / "decode_test").mkdir()
    (exp / "decode_test" / "scores.json").write_text(json.dumps({
        "test_set": "test", "corpus": "mini", "cap_modelled": True,
        "metrics": {"all": {"words": 120, "micro_f1": 0.5123, "macro_f1": 0.25,
                            "cap_micro_f1": 0.75, "ser": 0.6}}}))
    out = tmp_path / "out"
    assert export_cli.main(["--exp-dir", str(exp), "--out", str(out),
                            "--train-data", "the mini corpus, train split"]) == 0
    meta = json.loads((out / "config.json").read_text())
    assert meta["decision_rule"] == "threshold"
    assert meta["thresholds"] == {"COMMA": 0.3, "PERIOD": 0.6}
    assert meta["decode"]["window"] == 32 and meta["decode"]["threshold"] == 0.4
    assert meta["labels"][:2] == ["COMMA", "PERIOD"] and len(meta["labels"]) == 13
    card = (out / "README.md").read_text()
    assert "the mini corpus, train split" in card
    assert "| test | mini | 120 | 51.2 | 25.0 | 75.0 | 0.600 |" in card
    # the loaded system decodes with the per-mark thresholds (0.4 elsewhere)
    r = Restorer.from_pretrained(out, device="cpu")
    thr = r.settings.threshold
    assert isinstance(thr, tuple) and len(thr) == 13
    assert thr[:3] == pytest.approx([0.3, 0.6, 0.4])
    assert Restorer.from_pretrained(exp, device="cpu").settings.threshold == thr
    # an exclusive label set decodes by argmax and has no thresholds
    raw2, train2, _ = _config("brnn", bert)
    exp2 = tmp_path / "brnn"
    exp2.mkdir()
    save_untrained(raw2, exp2, seed=1, train_seqs=train2)
    assert export_cli.main(["--exp-dir", str(exp2), "--out", str(tmp_path / "o2")]) == 0
    meta2 = json.loads((tmp_path / "o2" / "config.json").read_text())
    assert meta2["decision_rule"] == "argmax" and meta2["thresholds"] is None


def test_export_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert export_cli.main(["--exp-dir", str(tmp_path / "nope"), "--out",
                            str(tmp_path / "o")]) == 2
    assert "no config.yaml" in capsys.readouterr().err
    with pytest.raises(MissingDataError, match="neither an experiment dir"):
        load_system(tmp_path)
    with pytest.raises(MissingDataError, match="no such system directory"):
        load_system(tmp_path / "missing")


def test_exported_dir_is_self_contained(tmp_path: Path) -> None:
    """The export decodes the same after the pretrained encoder and the exp dir are gone."""
    import shutil

    own_bert = build_tiny_bert(tmp_path / "bert", words=VOCAB, hidden=32)
    raw, train, _ = _config("nagy", own_bert)
    exp = tmp_path / "exp"
    exp.mkdir()
    save_untrained(raw, exp, seed=5, train_seqs=train)
    out = tmp_path / "out"
    assert export_cli.main(["--exp-dir", str(exp), "--out", str(out)]) == 0
    before = Restorer.from_pretrained(out, device="cpu", precision="fp32").restore(TEXT)
    shutil.rmtree(own_bert)
    shutil.rmtree(exp)
    moved = tmp_path / "moved"
    out.rename(moved)
    assert Restorer.from_pretrained(moved, device="cpu", precision="fp32").restore(TEXT) == before


def test_trained_transformer_loads_quietly_without_its_pretrained_encoder(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The checkpoint (or model.safetensors) holds every weight: with the pretrained
    encoder gone (a machine without the train extra), experiment and export load with no
    warning and restore as before."""
    import shutil

    own_bert = build_tiny_bert(tmp_path / "bert", words=VOCAB, hidden=32)
    raw, train, _ = _config("nagy", own_bert)
    exp = tmp_path / "exp"
    exp.mkdir()
    save_untrained(raw, exp, seed=5, train_seqs=train)
    before = Restorer.from_pretrained(exp, device="cpu", precision="fp32").restore(TEXT)
    out = tmp_path / "out"
    assert export_cli.main(["--exp-dir", str(exp), "--out", str(out)]) == 0
    shutil.rmtree(own_bert)
    with caplog.at_level(logging.WARNING):
        for source in (exp, out):
            api = Restorer.from_pretrained(source, device="cpu", precision="fp32")
            assert api.restore(TEXT) == before
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_loading_bars_only_with_verbose(bert: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    from punct.bin import restore as restore_cli
    from punct.infer.quiet import set_loading_verbosity

    raw, train, _ = _config("autopunct", bert)
    exp = tmp_path / "exp"
    exp.mkdir()
    save_untrained(raw, exp, seed=1, train_seqs=train)
    src = tmp_path / "in.txt"
    src.write_text("the yes\n", encoding="utf-8")
    args = ["--exp-dir", str(exp), str(src), "-o", str(tmp_path / "o.txt"), "--quiet"]
    capsys.readouterr()
    assert restore_cli.main(args) == 0
    assert "Loading weights" not in capsys.readouterr().err
    assert not hf_logging.is_progress_bar_enabled()
    try:  # (a trained model loads no pretrained weights: the switch is what is left to see)
        assert restore_cli.main([*args, "--verbose"]) == 0
        assert hf_logging.is_progress_bar_enabled()
        assert hf_logging.get_verbosity() == hf_logging.INFO
    finally:
        set_loading_verbosity(False)


# ----------------------------------------------------------------------------- ONNX


@pytest.mark.parametrize("family", ("brnn", "brnn_pauses", "autopunct", "autopunct_pauses",
                                    "nagy", "courtland"))
def test_onnx_parity_with_torch(family: str, bert: Path, tmp_path: Path) -> None:
    """fp32 onnxruntime vs torch: probabilities within 1e-4, identical decisions."""
    pytest.importorskip("onnxruntime")
    from punct.export.onnx_export import export_onnx

    raw, train, test = _config(family.removesuffix("_pauses"), bert)
    if family.endswith("_pauses"):  # the BRNN's pause input, AutoPunct's silence embeddings
        raw["model"].update({"pause_input": True} if family.startswith("brnn")
                            else {"silence": "discrete"})
        for s in test:
            s.pauses = np.linspace(0.0, 1.5, len(s)).astype(np.float32)
            s.pauses[::5] = np.nan
    exp = tmp_path / "exp"
    exp.mkdir()
    save_untrained(raw, exp, seed=4, train_seqs=train)
    if raw["family"] == "brnn":  # punctuator2's fusion and output start at zero: fill them
        state = torch.load(exp / "best.pt", weights_only=True)
        gen = torch.Generator().manual_seed(5)
        for name, value in state["model"].items():
            if name.startswith(("out.", "fuse_")):
                state["model"][name] = 0.5 * torch.randn(value.shape, generator=gen)
        torch.save(state, exp / "best.pt")
    out = tmp_path / "out"
    assert export_cli.main(["--exp-dir", str(exp), "--out", str(out), "--onnx"]) == 0
    assert (out / "model.onnx").is_file() and (out / "onnx.json").is_file()
    torch_r = Restorer.from_pretrained(out, device="cpu", precision="fp32")
    onnx_r = Restorer.from_pretrained(out, device="cpu", backend="onnx")
    longer = [*test, seq(("the yes stop and " * 12).split(), sum(len(s) for s in test))]
    st = torch_r.settings
    pt = predict_words(torch_r.engine.model, torch_r.system.featurizer, longer, st.window,
                       st.stride, 3, False, st.aggregate)
    po = predict_words(onnx_r.engine.model, onnx_r.system.featurizer, longer, st.window,
                       st.stride, 3, False, st.aggregate)
    assert np.abs(pt.punct - po.punct).max() <= 1e-4
    assert pt.punct.std() > 1e-3  # the model's output depends on its input
    if pt.cap is not None:
        assert po.cap is not None and np.abs(pt.cap - po.cap).max() <= 1e-4
    text = [*TEXT, " ".join(longer[-1].words)]
    assert torch_r.restore(text) == onnx_r.restore(text)
    export_onnx(out, quantize=True)  # int8: runs, same words out
    int8 = Restorer.from_pretrained(out, device="cpu", backend="onnx-int8").restore(text)
    assert [len(t.split()) for t in int8] == [len(t.split()) for t in text]


def test_onnx_backend_needs_an_export(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    raw, train, _ = _config("brnn", Path("unused"))
    exp = tmp_path / "exp"
    exp.mkdir()
    save_untrained(raw, exp, seed=4, train_seqs=train)
    with pytest.raises(MissingDataError, match=r"exported dir with model\.onnx"):
        Restorer.from_pretrained(exp, backend="onnx")
