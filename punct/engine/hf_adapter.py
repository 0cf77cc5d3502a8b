"""A trained system as a Hugging Face token classifier, for ``pipeline("token-classification")``.

``PunctTokenClassifier`` wraps any sub-word family (a featurizer with a Hugging Face
``tokenizer``) as a ``PreTrainedModel``, so that the stock pipeline runs *the same
weights* as our engine. Its label space is every (mark, casing) pair, named
``B-<MARK>+<CAP>`` (``B-O+FIRST_CAP``, ``B-COMMA+O``, ...): the ``B-`` prefix keeps the
pipeline from merging neighbouring words, and the logit of a pair is
``s(mark) + log p(cap)`` with ``s(O) = 0`` and ``s(m) = logit p(m)``, so the pipeline's
argmax is "the most probable mark if its probability is >= 0.5, else none" and the most
probable casing: the engine's decision, restricted to one mark per word.

Inside ``forward`` the sub-word ids of each pipeline chunk are regrouped into words the
way the pipeline itself does (a piece starts a word unless it is a continuation piece),
and the family's own featurizer and model predict them (``predict_words``); the
prediction of a word goes to its first piece, which is what ``aggregation_strategy=
"first"`` reads. The time spent regrouping and building logits is counted in
``overhead_seconds``, so a benchmark can report the pipeline with and without it.

``pipeline_decode`` runs the pipeline over word sequences and maps its entities back
to words by character offset; ``find_encoder`` returns the bare pretrained encoder of a
model (for the encoder-only speed reference).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn
from transformers import (
    AutoConfig,
    AutoModelForTokenClassification,
    PretrainedConfig,
    PreTrainedModel,
    pipeline,
)
from transformers.modeling_outputs import TokenClassifierOutput

from punct.engine.decode import predict_words, rule_caps
from punct.labels import CAP_LABELS, LabelSet
from punct.models.base import Featurizer, PunctModel, WordSeq

EPS = 1e-6


def pair_labels(labels: Sequence[str]) -> list[str]:
    """The classifier's labels: every (mark or O, casing) pair, ``B-<MARK>+<CAP>``."""
    return [f"B-{mark}+{cap}" for mark in ("O", *labels) for cap in CAP_LABELS]


def pair_logits(punct: np.ndarray, cap: np.ndarray | None, exclusive: bool = False
                ) -> np.ndarray:
    """(N, P) mark probabilities and (N, 3) casing probabilities -> (N, (P+1)*3) logits.

    A mark's logit against "no mark" is log(p / (1 - p)) for independent marks, and
    log(p / p_O) for an exclusive label set (O's probability is one minus the marks')."""
    p = np.clip(punct.astype(np.float64), EPS, 1 - EPS)
    if exclusive:
        p_o = np.clip(1.0 - punct.astype(np.float64).sum(axis=1, keepdims=True), EPS, 1.0)
        odds = np.log(p) - np.log(p_o)
    else:
        odds = np.log(p) - np.log1p(-p)
    marks = np.concatenate([np.zeros((len(p), 1)), odds], axis=1)
    if cap is None:
        caps = np.zeros((len(p), len(CAP_LABELS)))
        caps[:, 1:] = -1e4  # casing not modelled: O here, the rule decides later
    else:
        caps = np.log(np.clip(cap.astype(np.float64), EPS, 1.0))
    return (marks[:, :, None] + caps[:, None, :]).reshape(len(p), -1)


def word_start_table(tokenizer: Any) -> np.ndarray:
    """Per vocabulary id: does this piece start a word (not special, not a continuation)?"""
    size = max(len(tokenizer), max(tokenizer.get_vocab().values()) + 1)
    starts = np.zeros(size, dtype=bool)
    backend = getattr(tokenizer, "_tokenizer", None)
    prefix = getattr(getattr(backend, "model", None), "continuing_subword_prefix", None)
    special = set(tokenizer.all_special_ids)
    for piece, idx in tokenizer.get_vocab().items():
        if idx in special:
            continue
        if prefix:
            starts[idx] = not piece.startswith(prefix)
        else:  # BPE/sentencepiece: word-initial pieces carry a space marker
            starts[idx] = piece.startswith(("\u0120", "\u2581"))
    return starts


class PunctClassifierConfig(PretrainedConfig):
    """Config of the wrapper (labels only; the weights belong to the wrapped system)."""

    model_type = "punct_token_classifier"


class PunctTokenClassifier(PreTrainedModel):
    """A ``PunctModel`` + featurizer behind the ``AutoModelForTokenClassification`` API."""

    config_class = PunctClassifierConfig
    base_model_prefix = "punct"
    main_input_name = "input_ids"

    def __init__(self, model: PunctModel, featurizer: Featurizer, label_set: LabelSet,
                 aggregate: str = "mean", bf16: bool = False):
        tokenizer = getattr(featurizer, "tokenizer", None)
        if tokenizer is None or not getattr(tokenizer, "is_fast", False):
            raise ValueError("the Hugging Face pipeline needs a family with a fast sub-word "
                             f"tokenizer; {type(featurizer).__name__} has none")
        names = pair_labels(label_set.labels)
        config = PunctClassifierConfig(id2label=dict(enumerate(names)),
                                  label2id={n: i for i, n in enumerate(names)})
        super().__init__(config)
        self.punct_model = model
        self.featurizer = featurizer
        self.label_set = label_set
        self.aggregate = aggregate
        self.use_bf16 = bf16
        self.tokenizer = tokenizer
        self.starts = word_start_table(tokenizer)
        self.overhead_seconds = 0.0
        self.calls = 0
        self.cap_modelled = True

    def _init_weights(self, module: nn.Module) -> None:
        """The weights come from the trained system; nothing to initialise."""

    def _chunk_words(self, ids: np.ndarray, mask: np.ndarray) -> tuple[list[str], list[int]]:
        """Words (strings) of one chunk and the position of each word's first piece."""
        positions: list[int] = []
        groups: list[list[int]] = []
        special = set(self.tokenizer.all_special_ids)
        for pos, (tok, on) in enumerate(zip(ids.tolist(), mask.tolist(), strict=True)):
            if not on or tok in special:
                continue
            if not groups or (tok < len(self.starts) and self.starts[tok]):
                positions.append(pos)
                groups.append([tok])
            else:
                groups[-1].append(tok)
        words = []
        for group in groups:
            pieces = self.tokenizer.convert_ids_to_tokens(group)
            text = self.tokenizer.convert_tokens_to_string(pieces).strip().lower()
            words.append(text.replace(" ", "") or self.tokenizer.unk_token)
        return words, positions

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                **_: Any) -> TokenClassifierOutput:
        start = time.perf_counter()
        ids = input_ids.cpu().numpy()
        mask = (attention_mask.cpu().numpy() if attention_mask is not None
                else np.ones_like(ids))
        n_labels = len(self.label_set.labels)
        seqs, positions = [], []
        offset = 0
        for b in range(ids.shape[0]):
            words, pos = self._chunk_words(ids[b], mask[b])
            n = len(words)
            seqs.append(WordSeq(f"chunk{b}", words, np.full(n, np.nan, dtype=np.float32),
                                np.zeros((n, n_labels), dtype=np.float32),
                                np.zeros(n, dtype=np.int64), offset))
            positions.append(pos)
            offset += n
        logits = np.zeros((*ids.shape, len(self.config.id2label)), dtype=np.float32)
        inner = 0.0
        if offset:
            window = ids.shape[1]
            pred = predict_words(self.punct_model, self.featurizer,
                                 [s for s in seqs if len(s)], window, window,
                                 batch_size=max(1, ids.shape[0]), bf16=self.use_bf16,
                                 aggregate=self.aggregate, device=input_ids.device,
                                 exclusive=self.label_set.exclusive)
            inner = pred.seconds
            self.cap_modelled = pred.cap is not None
            word_logits = pair_logits(pred.punct, pred.cap, self.label_set.exclusive)
            for b, seq in enumerate(seqs):
                for j, pos in enumerate(positions[b]):
                    logits[b, pos] = word_logits[seq.offset + j]
        self.overhead_seconds += time.perf_counter() - start - inner
        self.calls += 1
        return TokenClassifierOutput(logits=torch.from_numpy(logits))


def _register() -> None:
    """Make the pipeline recognise the wrapper as a token classifier (no warning)."""
    AutoConfig.register(PunctClassifierConfig.model_type, PunctClassifierConfig, exist_ok=True)
    AutoModelForTokenClassification.register(PunctClassifierConfig, PunctTokenClassifier,
                                             exist_ok=True)


def make_pipeline(model: PunctModel, featurizer: Featurizer, label_set: LabelSet,
                  max_length: int, aggregate: str = "mean", bf16: bool = False,
                  device: torch.device | str = "cpu") -> tuple[Any, PunctTokenClassifier]:
    """The stock token-classification pipeline over the system; chunks of ``max_length``
    sub-word pieces (with the special tokens)."""
    _register()
    wrapper = PunctTokenClassifier(model, featurizer, label_set, aggregate, bf16)
    tokenizer = copy.deepcopy(wrapper.tokenizer)
    tokenizer.model_max_length = max_length
    pipe = pipeline("token-classification", model=wrapper, tokenizer=tokenizer,
                    device=torch.device(device))
    return pipe, wrapper


def pipeline_decode(pipe: Any, seqs: Sequence[WordSeq], labels: Sequence[str],
                    overlap: int, batch_size: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Run ``pipe`` over the sequences' texts (words joined by spaces) with ``stride =
    overlap`` pieces; return per-word marks (N, P) bool and cap indices (N,)."""
    texts, word_starts = [], []
    for seq in seqs:
        starts, pos = {}, 0
        for j, word in enumerate(seq.words):
            starts[pos] = j
            pos += len(word) + 1
        texts.append(" ".join(seq.words))
        word_starts.append(starts)
    outputs = pipe(texts, aggregation_strategy="first", ignore_labels=[], stride=overlap,
                   batch_size=batch_size)
    if texts and isinstance(outputs[0], dict):  # a single text gives a flat list
        outputs = [outputs]
    n_words = sum(len(s) for s in seqs)
    marks = np.zeros((n_words, len(labels)), dtype=bool)
    caps = np.zeros(n_words, dtype=np.int64)
    for seq, entities, starts in zip(seqs, outputs, word_starts, strict=True):
        for ent in entities:
            j = starts.get(int(ent["start"]))
            if j is None:  # a piece the pipeline took for a word inside one of ours
                continue
            mark, cap = str(ent["entity_group"]).split("+")
            if mark != "O":
                marks[seq.offset + j, list(labels).index(mark)] = True
            caps[seq.offset + j] = CAP_LABELS.index(cap)
    if not getattr(pipe.model, "cap_modelled", True):
        caps = rule_caps(marks, seqs, labels)
    return marks, caps


def find_encoder(model: nn.Module) -> PreTrainedModel:
    """The pretrained Hugging Face encoder inside a model (the first one found)."""
    for module in model.modules():
        if isinstance(module, PreTrainedModel):
            return module
    raise ValueError(f"{type(model).__name__} holds no Hugging Face encoder")
