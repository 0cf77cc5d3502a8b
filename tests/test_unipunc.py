"""UniPunc family: audio spans, acoustic assistant, bootstrapper, both lexical encoders,
training through the shared trainer, and the Table 2/3 layout."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.unipunc import DIM, P, make_seq, unipunc_config
from helpers.unipunc import VOCAB as VOCAB  # the tiny_dir fixture reads the module's VOCAB

from punct.config import Config, OptimizerSection, load_config, resolve_config
from punct.errors import PunctInputError
from punct.models.base import Registry, WordSeq
from punct.models.unipunc import (
    UnipuncBRNN,
    UnipuncBRNNFeaturizer,
    UnipuncFeaturizer,
    UnipuncModel,
)
from punct.models.unipunc.audio import AudioOptions, AudioSpans, _forward_fill
from punct.models.unipunc.layers import AcousticAssistant, CoordinateBootstrapper, sinusoid
from punct.score.layouts import layout_tables
from punct.score.layouts.unipunc import class_figures, load_unipunc_published, prf

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------- audio spans


def fitted_spans(**kw: object) -> AudioSpans:
    spans = AudioSpans.from_config(AudioOptions(streams=["fbank"], audio_context_s=0.1, **kw))
    spans.fit([make_seq("a", 10, seed=1), make_seq("b", 10, seed=2)])
    return spans


def test_span_frames_hand_checked() -> None:
    spans = fitted_spans()
    s = make_seq("a", 10, seed=1)
    # words 2..3: start 0.5 + 0.8 = 1.3 s, end 0.5 + 1.2 + 0.3 = 2.0 s; +-0.1 s context
    frames, origin = spans.frames_of(s, 2, 3)
    assert origin == pytest.approx(1.2)
    assert frames.shape == (2.1 * 100 - 120, DIM)
    expected = (s.feats["fbank"][120:210] - spans.mean) / spans.std
    np.testing.assert_allclose(frames, expected, rtol=1e-6)


def test_normalisation_uses_training_frames_only() -> None:
    spans = fitted_spans()
    both = np.concatenate([make_seq("a", 10, seed=1).feats["fbank"],
                           make_seq("b", 10, seed=2).feats["fbank"]])
    np.testing.assert_allclose(spans.mean, both.mean(axis=0), rtol=1e-4)
    np.testing.assert_allclose(spans.std, both.std(axis=0), rtol=1e-4)
    assert spans.dim == DIM


def test_no_audio_cases() -> None:
    spans = fitted_spans()
    assert spans.frames_of(make_seq("c", 5, audio=False), 0, 4) is None  # stream missing
    s = make_seq("d", 5)
    s.times[:] = np.nan  # no word times
    assert spans.frames_of(s, 0, 4) is None
    spans.withheld = {"e"}
    assert spans.frames_of(make_seq("e", 5), 0, 4) is None
    assert spans.frames_of(make_seq("f", 5), 0, 4) is not None


def test_withheld_share_of_training_set() -> None:
    spans = AudioSpans.from_config(AudioOptions(streams=["fbank"], withhold_audio=0.3))
    train = [make_seq(f"u{i}", 6, seed=i) for i in range(10)]
    spans.fit(train)
    assert len(spans.withheld) == 3 and spans.withheld < {s.utt_id for s in train}
    again = AudioSpans.from_config(AudioOptions(streams=["fbank"], withhold_audio=0.3))
    again.fit(train[::-1])
    assert again.withheld == spans.withheld  # independent of order


def test_forward_fill_and_token_times() -> None:
    np.testing.assert_allclose(_forward_fill(np.array([np.nan, 1.0, np.nan, 2.5, np.nan])),
                               [0.0, 1.0, 1.0, 2.5, 2.5])
    spans = fitted_spans()
    s = make_seq("a", 10, seed=1)
    window = {"word_ids": np.array([-1, 2, -1, 3, -1])}
    spans.attach(window, s)
    # origin 1.2 s; word 2 ends at 1.6 s, word 3 at 2.0 s
    np.testing.assert_allclose(window["token_times"], [0.0, 0.4, 0.4, 0.8, 0.8], atol=1e-6)
    assert window["audio"].shape == (90, DIM)
    np.testing.assert_allclose(window["audio_times"][:3], [0.0, 0.01, 0.02], atol=1e-6)


def config(*args: object, **kw: object) -> Config:
    """``unipunc_config`` typed."""
    return resolve_config(unipunc_config(*args, **kw))


def test_config_errors(tiny_dir: Path) -> None:
    def featurizer(**audio: object) -> Config:
        raw = unipunc_config(tiny_dir)
        raw["featurizer"].update(audio)
        return resolve_config(raw)

    with pytest.raises(PunctInputError, match=r"featurizer\.streams: .*exactly one"):
        featurizer(streams=["fbank", "w2v"])
    with pytest.raises(PunctInputError, match=r"featurizer\.withhold_audio = 1\.5 is outside"):
        featurizer(withhold_audio=1.5)
    with pytest.raises(PunctInputError, match=r"featurizer\.frame_shift: must be positive"):
        featurizer(frame_shift=0)
    with pytest.raises(PunctInputError, match="exactly one"):
        AudioSpans.from_config(AudioOptions(streams=["fbank", "w2v"]))
    spans = AudioSpans.from_config(AudioOptions(streams=["fbank"]))
    with pytest.raises(PunctInputError, match="no training utterance"):
        spans.fit([make_seq("a", 4, audio=False)])


# ------------------------------------------------------------------------- layers


def test_conv_lengths_and_virtual_keys() -> None:
    torch.manual_seed(0)
    assistant = AcousticAssistant(DIM, 8, conv_layers=2, kernel=15, stride=5, dropout=0.0)
    # (100 + 14 - 15) // 5 + 1 = 20; (20 + 14 - 15) // 5 + 1 = 4
    assert assistant.out_length(torch.tensor([100, 7, 1])).tolist() == [4, 1, 1]
    audio = torch.randn(2, 100, DIM)
    mask = torch.ones(2, 100, dtype=torch.bool)
    has = torch.tensor([True, False])
    keys, valid, _, acoustic = assistant(audio, mask, has, torch.zeros(2, 100))
    assert keys.shape == (2, 5, 8)  # max(4 acoustic, 5 virtual)
    assert valid.tolist() == [[True] * 4 + [False], [True] * 5]
    assert acoustic.tolist() == [[True] * 4 + [False], [False] * 5]
    torch.testing.assert_close(keys[1], assistant.virtual.detach())


def test_bootstrapper_ignores_padding_and_audio_of_virtual_rows() -> None:
    torch.manual_seed(0)
    assistant = AcousticAssistant(DIM, 8, kernel=3, stride=2, dropout=0.0).eval()
    boot = CoordinateBootstrapper(8, layers=2, heads=2, dropout=0.0).eval()
    h = torch.randn(2, 6, 8)
    text_valid = torch.ones(2, 6, dtype=torch.bool)
    audio = torch.randn(2, 40, DIM)
    mask = torch.zeros(2, 40, dtype=torch.bool)
    mask[0, :30] = True
    has = torch.tensor([True, False])
    times = torch.zeros(2, 6)
    out = boot(h, text_valid, assistant(audio, mask, has, torch.zeros(2, 40)), times)
    noisy = audio.clone()
    noisy[0, 30:] = 100.0  # padding frames of row 0
    noisy[1] = -50.0  # row 1 has no audio: its frames must not matter
    out2 = boot(h, text_valid, assistant(noisy, mask, has, torch.zeros(2, 40)), times)
    torch.testing.assert_close(out, out2)


def test_zero_init_starts_as_normalised_lexical_states() -> None:
    torch.manual_seed(0)
    boot = CoordinateBootstrapper(8, layers=2, heads=2, zero_init=True).eval()
    h = torch.randn(2, 5, 8)
    keys = (torch.randn(2, 4, 8), torch.ones(2, 4, dtype=torch.bool), torch.zeros(2, 4),
            torch.ones(2, 4, dtype=torch.bool))
    out = boot(h, torch.ones(2, 5, dtype=torch.bool), keys, torch.zeros(2, 5))
    # two layers: LN(LN(h)), equal to LN(h) up to the eps of the second normalisation
    torch.testing.assert_close(out, torch.nn.functional.layer_norm(h, (8,)), atol=1e-4,
                               rtol=1e-4)


def test_alignment_prior_hand_checked() -> None:
    boot = CoordinateBootstrapper(8, layers=1, heads=2, alignment_prior_s=0.1)
    token_times = torch.tensor([[0.0, 0.2]])
    key_times = torch.tensor([[0.0, 0.1, 0.0]])
    is_acoustic = torch.tensor([[True, True, False]])  # the third key is virtual
    bias = boot.alignment_bias(token_times, key_times, is_acoustic)
    # -(dt)^2 / (2 * 0.01): dt 0 -> 0, 0.1 -> -0.5, 0.2 -> -2; virtual keys 0
    torch.testing.assert_close(bias, torch.tensor([[[0.0, -0.5, 0.0], [-2.0, -0.5, 0.0]]]))
    assert CoordinateBootstrapper(8, heads=2).alignment_bias(token_times, key_times,
                                                              is_acoustic) is None
    h = torch.randn(1, 2, 8)
    keys = (torch.randn(1, 3, 8), torch.ones(1, 3, dtype=torch.bool), key_times, is_acoustic)
    out = boot.eval()(h, torch.ones(1, 2, dtype=torch.bool), keys, token_times)
    assert out.shape == (1, 2, 8) and torch.isfinite(out).all()
    with pytest.raises(PunctInputError, match="alignment_prior_s"):
        CoordinateBootstrapper(8, heads=2, alignment_prior_s=0.0)


def test_sinusoid_shape_and_values() -> None:
    enc = sinusoid(torch.tensor([0.0, 1.0]), 4)
    torch.testing.assert_close(enc[0], torch.tensor([0.0, 0.0, 1.0, 1.0]))
    assert enc.shape == (2, 4)
    assert enc[1, 0] == pytest.approx(np.sin(1.0))


# ------------------------------------------------------------------------- families


def train_steps(feat, model, seqs: list[WordSeq], steps: int = 4) -> list[float]:
    windows = feat.windows(seqs, 16, 8)
    optim = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=3e-3)
    losses = []
    model.train()
    for _ in range(steps):
        loss = model.loss(feat.collate(windows))
        optim.zero_grad()
        loss.backward()
        optim.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("lexical", ["pretrained", "brnn"])
def test_family_trains_saves_and_reloads(tiny_dir: Path, tmp_path: Path, lexical: str) -> None:
    torch.manual_seed(0)
    cfg = config(tiny_dir, lexical, time_encoding=lexical == "brnn")
    family = Registry.get("unipunc")
    feat = family.make_featurizer(cfg)
    seqs = [make_seq("a", 12, 0, 1), make_seq("b", 9, 12, 2, audio=False)]
    feat.fit(seqs)
    model = family.make_model(cfg, feat)
    assert isinstance(model, UnipuncModel if lexical == "pretrained" else UnipuncBRNN)
    assert isinstance(feat, UnipuncFeaturizer if lexical == "pretrained"
                      else UnipuncBRNNFeaturizer)
    batch = feat.collate(feat.windows(seqs, 16, 8))
    assert batch["has_audio"].any() and not batch["has_audio"].all()
    if lexical == "brnn":  # the graft's own learning rate
        groups = model.param_groups(OptimizerSection(lr=0.01))
        assert [g.get("lr") for g in groups] == [None, 1e-3]
        assert sum(len(g["params"]) for g in groups) == len(list(model.parameters()))
    losses = train_steps(feat, model, seqs)  # (punctuator2's output layer starts at zero)
    assert losses[-1] < losses[0]
    model.zero_grad()
    model.loss(batch).backward()
    # audio windows train the convolutions, audio-free windows the virtual embedding
    assert model.assistant.convs[0].weight.grad.abs().sum() > 0
    assert model.assistant.virtual.grad.abs().sum() > 0
    model.eval()
    before = model.predict(batch).punct
    assert before.shape[:2] == batch["word_ids"].shape and before.shape[2] == P
    feat.save(tmp_path / "feat")
    torch.save(model.state_dict(), tmp_path / "m.pt")
    feat2 = family.load_featurizer(tmp_path / "feat", cfg)
    model2 = family.make_model(cfg, feat2)
    model2.load_state_dict(torch.load(tmp_path / "m.pt"))
    model2.eval()
    batch2 = feat2.collate(feat2.windows(seqs, 16, 8))
    torch.testing.assert_close(model2.predict(batch2).punct, before)


def test_unknown_options_are_errors(tiny_dir: Path) -> None:
    cfg = unipunc_config(tiny_dir)
    cfg["model"]["acoustic"]["stride_s"] = 1
    with pytest.raises(PunctInputError, match=r"unknown key model\.acoustic\.stride_s; "
                                              r"allowed: channels, conv_layers, dropout"):
        resolve_config(cfg)
    cfg = unipunc_config(tiny_dir)
    cfg["model"]["bootstrapper"]["head"] = 2
    with pytest.raises(PunctInputError, match=r"unknown key model\.bootstrapper\.head; "
                                              r"allowed: alignment_prior_s, dropout, heads"):
        resolve_config(cfg)
    cfg = unipunc_config(tiny_dir)
    cfg["model"]["lexical"] = "lstm"
    with pytest.raises(PunctInputError, match=r"model\.lexical = 'lstm' is not one of: "
                                              r"pretrained, brnn"):
        resolve_config(cfg)
    cfg = unipunc_config(tiny_dir)
    del cfg["featurizer"]["streams"]
    with pytest.raises(PunctInputError, match=r"featurizer\.streams: unipunc needs"):
        resolve_config(cfg)
    cfg = unipunc_config(tiny_dir)
    cfg["model"]["graft_lr"] = 1e-3  # the BRNN graft's
    with pytest.raises(PunctInputError, match=r"model\.graft_lr: not an option of lexical: "
                                              r"pretrained"):
        resolve_config(cfg)
    cfg = unipunc_config(tiny_dir, "brnn")
    cfg["model"]["head"] = {"hidden": 8}  # AutoPunct's head
    with pytest.raises(PunctInputError, match=r"model\.head: not an option of lexical: brnn"):
        resolve_config(cfg)
    cfg = unipunc_config(tiny_dir, "brnn")
    cfg["featurizer"]["encoder"] = "bert"  # the sub-word featurizer's
    with pytest.raises(PunctInputError, match=r"unknown key featurizer\.encoder; allowed: "
                                              r"audio_context_s, frame_shift, max_audio_frames"):
        resolve_config(cfg)
    cfg = unipunc_config(tiny_dir)
    cfg["model"]["silence"] = {"kind": "discrete"}
    with pytest.raises(PunctInputError, match=r"model\.silence: an AutoPunct option"):
        resolve_config(cfg)
    cfg["model"]["silence"] = None  # empty: accepted
    assert resolve_config(cfg).model.silence is None


@pytest.mark.parametrize("name", ["unipunc", "unipunc_brnn", "tiny/unipunc", "paper/unipunc_en",
                                  "paper/unipunc_audio_en", "paper/unipunc_brnn_en"])
def test_shipped_configs_resolve(name: str) -> None:
    cfg = load_config(ROOT / "conf" / "model" / f"{name}.yaml")
    assert cfg.family == "unipunc"
    assert len(cfg.featurizer.streams) == 1
    assert cfg.model.lexical == ("brnn" if "brnn" in name else "pretrained")


# ------------------------------------------------------------------------- layout


def score(system: str, test_set: str, counts: dict[str, tuple[int, int, int]],
          micro_f1: float) -> dict:
    classes = {lab: {"tp": tp, "fp": fp, "fn": fn} for lab, (tp, fp, fn) in counts.items()}
    return {"system": system, "test_set": test_set, "corpus": "mini", "label_set": "full13",
            "metrics": {"all": {"micro_f1": micro_f1, "punct": {"classes": classes}}}}


def test_prf_and_class_figures_hand_checked() -> None:
    assert prf([{"tp": 3, "fp": 1, "fn": 3}]) == pytest.approx((75.0, 50.0, 60.0))
    assert prf([{"tp": 0, "fp": 0, "fn": 2}]) == (0.0, 0.0, 0.0)
    s = score("x", "test", {"COMMA": (3, 1, 3), "PERIOD": (1, 0, 0), "QUESTION": (0, 1, 1),
                            "COLON": (5, 0, 0)}, 0.5)
    fig = class_figures(s)
    assert fig[:3] == pytest.approx([75.0, 50.0, 60.0])
    assert fig[3:6] == pytest.approx([100.0, 100.0, 100.0])
    assert fig[6:9] == pytest.approx([0.0, 0.0, 0.0])
    # Overall over the three marks only (COLON left out): tp 4, fp 2, fn 4
    assert fig[9:] == pytest.approx([400 / 6, 50.0, 2 * (2 / 3) * 0.5 / (2 / 3 + 0.5) * 100])


def test_layout_tables() -> None:
    scores = [score("unipunc", "test", {"COMMA": (3, 1, 3)}, 0.4),
              score("unipunc", "test_mixed", {"COMMA": (2, 1, 4)}, 0.3),
              score("brnn_text", "test", {"COMMA": (1, 1, 5)}, 0.2)]
    t2, t3, avm = layout_tables("unipunc", scores)
    doc = load_unipunc_published()
    ours = t2.frame[t2.frame["Source"] == "ours"]
    assert ours["Test"].tolist() == ["Audio", "Audio", "Mixed"]
    assert len(t2.frame) == 3 + 7 + 5  # ours + published Audio + published Mixed rows
    pub = t2.frame[(t2.frame["System"] == "UniPunc-Mix") & (t2.frame["Test"] == "Mixed")]
    assert pub["Overall F1"].item() == 76.5
    assert t3.frame[t3.frame["Source"] == "ours"]["System"].tolist() == ["unipunc"]
    assert t3.frame[t3.frame["System"] == "BiLSTM-UniPunc"]["Overall"].item() == 56.6
    assert len(doc["tables"]["table3"]["rows"]) == 4
    rows = avm.frame.set_index("System")
    assert rows.loc["unipunc", "Audio micro F1"] == pytest.approx(40.0)
    assert rows.loc["unipunc", "Mixed - Audio"] == pytest.approx(-10.0)
    assert np.isnan(rows.loc["brnn_text", "Mixed micro F1"])


def test_published_rows_have_twelve_values() -> None:
    doc = load_unipunc_published()
    for spec in doc["tables"]["table2"]["test_sets"].values():
        assert all(len(v) == 12 for v in spec["rows"].values())
    assert all(len(v) == 4 for v in doc["tables"]["table3"]["rows"].values())
