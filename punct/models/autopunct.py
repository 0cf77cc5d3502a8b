"""AutoPunct (González-Docasal et al. 2021): pretrained encoder + silences + custom BERT.

Architecture (every part switchable by config; Table 4's S/D/f/B rows are 8 configs):

1. A pretrained BERT-like encoder reads the sub-word pieces of the lower-cased words.
   Each word is represented by its FIRST piece (as in BERT's token classification): the
   first piece is the one that sees the word's beginning and, through attention, the
   rest of the word; predicting there keeps one slot per word. Other pieces, [CLS],
   [SEP] and padding get ``word_ids = -1`` and are excluded from the loss.
   (``featurizer.label_position: last`` moves the slot to the word's LAST piece, the one
   next to the following mark; the nagy and courtland families use it.)
2. A silence encoding (``punct.models.silence``: none | continuous | discrete with
   Gaussian or uniform averaging) is added to the word embeddings.
3. Optionally a custom BERT (4 layers x 4 heads, from scratch) over the sums.
4. Punctuation head: dense -> non-linearity -> dropout -> linear to P; the loss and
   probabilities follow the label set (``punct.models.marks``: softmax over O plus the
   marks for exclusive sets, one sigmoid per mark for full13).
5. Capitalisation head: dense -> non-linearity -> dropout -> linear to 3 (softmax, CE).
   Its input is ``[p(prev word), p(this word), utterance-start flag, encoder embedding]``
   where ``p`` are the punctuation head's mark probabilities. Casing of word i depends on
   the mark AFTER word i-1 (a PERIOD/QUESTION/COLON there starts a sentence) and on the
   OPENING marks attached to word i itself (OPEN_QUOTE, OPEN_QUES, OPEN_EXCL precede it),
   so the head sees both. ``p(prev)`` is zero when the previous word is not in the
   window; the flag is 1 for the first word of an utterance. The encoder embedding is
   the pretrained encoder's output for the word, before silences are added (paper 3.2.3).
6. loss = punct_weight * mark loss + cap_weight * CE(cap) over word positions only;
   the mark loss optionally weighted for rare marks (``class_weight``/``pos_weight``).

Windows are cut in sub-word pieces: ``window`` includes [CLS] and [SEP], so a window
holds at most ``window - 2`` pieces; windows start and end at word boundaries, the next
window starts at the first word at least ``stride`` pieces after the current start
(and never after the current window's end, so every word is covered).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from punct.errors import MissingDataError, PunctInputError
from punct.labels import CAP_LABELS, get_label_set
from punct.models.base import (
    Family,
    Featurizer,
    Prediction,
    PunctModel,
    Window,
    WordSeq,
)
from punct.models.encoders import (
    encoder_from_config,
    load_encoder,
    load_encoder_config,
    load_tokenizer,
)
from punct.models.marks import LOSS_KEYS as MARK_LOSS_KEYS
from punct.models.marks import MarkObjective
from punct.models.silence import make_silence

LOG = logging.getLogger(__name__)
FEATURIZER_FILE = "featurizer.json"
FORMAT_VERSION = 1
N_CAP = len(CAP_LABELS)

FEATURIZER_KEYS = {
    "encoder", "lowercase", "max_pieces_per_word", "prefix_space", "label_position"
}
LABEL_POSITIONS = ("first", "last")
ENCODER_CACHE_FLOATS = 500_000_000  # 2 GB of float32 states at most

MODEL_KEYS = {"encoder_train_layers", "encoder_lr", "silence", "custom_bert", "head",
              "cap_head", "loss"}
HEAD_KEYS = {"hidden", "activation", "dropout"}
CAP_HEAD_KEYS = HEAD_KEYS | {"detach_punct"}
BERT_KEYS = {"layers", "heads", "ffn", "dropout", "max_positions"}
LOSS_KEYS = {"punct_weight", "cap_weight", *MARK_LOSS_KEYS}


def checked_options(value: Any, allowed: set[str], where: str) -> dict[str, Any]:
    """``value`` as a dict (empty when None); unknown keys are errors naming ``where``."""
    value = value or {}
    if not isinstance(value, dict):
        raise PunctInputError(f"{where} must be a mapping, got {value!r}")
    unknown = set(value) - allowed
    if unknown:
        raise PunctInputError(
            f"unknown option(s) {sorted(unknown)} in {where}; allowed: {sorted(allowed)}"
        )
    return dict(value)


def label_set_size(config: dict[str, Any]) -> tuple[str, int]:
    if "label_set" not in config:
        raise PunctInputError("the config has no 'label_set'")
    name = str(config["label_set"])
    return name, len(get_label_set(name).labels)


# --------------------------------------------------------------------------- featurizer


class AutopunctFeaturizer(Featurizer):
    """Sub-word windows for a pretrained encoder, one prediction slot per word."""

    def __init__(self, config: dict[str, Any], tokenizer: Any | None = None):
        fcfg = checked_options(config.get("featurizer"), FEATURIZER_KEYS, "featurizer")
        self.label_set, self.n_labels = label_set_size(config)
        self.encoder_name: str | None = fcfg.get("encoder")
        self.lowercase = bool(fcfg.get("lowercase", True))
        self.max_pieces = int(fcfg.get("max_pieces_per_word", 8))
        self.prefix_space = bool(fcfg.get("prefix_space", False))
        self.label_position = str(fcfg.get("label_position", "first"))
        if self.label_position not in LABEL_POSITIONS:
            raise PunctInputError(
                f"featurizer.label_position must be one of {LABEL_POSITIONS}, "
                f"got {self.label_position!r}"
            )
        if self.max_pieces < 1:
            raise PunctInputError("featurizer.max_pieces_per_word must be >= 1")
        self.tokenizer = tokenizer if tokenizer is not None else load_tokenizer(self.encoder_name)
        self.encoder_config_dir: Path | None = None
        self.label_counts = np.zeros(self.n_labels, dtype=np.int64)
        self.n_words = 0
        self._pieces: dict[str, list[int]] = {}
        for attr in ("cls_token_id", "sep_token_id", "pad_token_id", "unk_token_id"):
            if getattr(self.tokenizer, attr, None) is None:
                raise PunctInputError(f"the tokenizer of {self.encoder_name!r} has no {attr}")

    @property
    def max_window(self) -> int:
        """Longest window (in pieces, with [CLS]/[SEP]) the tokenizer/encoder accepts."""
        limit = int(getattr(self.tokenizer, "model_max_length", 512) or 512)
        return limit if limit < 100_000 else 512

    # -- tokenisation
    def word_pieces(self, words: list[str]) -> list[list[int]]:
        """Piece ids of each word (cached; at most ``max_pieces_per_word``; [] -> [UNK])."""
        norm = [w.lower() if self.lowercase else w for w in words]
        missing = sorted({w for w in norm if w not in self._pieces})
        if missing:
            texts = [" " + w for w in missing] if self.prefix_space else missing
            ids = self.tokenizer(texts, add_special_tokens=False)["input_ids"]
            for word, pieces in zip(missing, ids, strict=True):
                pieces = list(pieces) or [self.tokenizer.unk_token_id]
                self._pieces[word] = pieces[: self.max_pieces]
        return [self._pieces[w] for w in norm]

    # -- checks
    def _check(self, seq: WordSeq) -> None:
        n = len(seq.words)
        where = f"utterance {seq.utt_id!r}"
        shapes = {
            "pauses": np.shape(seq.pauses),
            "punct": np.shape(seq.punct),
            "cap": np.shape(seq.cap),
        }
        if shapes["pauses"] != (n,) or shapes["cap"] != (n,):
            raise PunctInputError(f"{where}: {n} words but shapes {shapes}")
        if shapes["punct"] != (n, self.n_labels):
            raise PunctInputError(
                f"{where}: punct targets have shape {shapes['punct']}, expected "
                f"({n}, {self.n_labels}) for label set {self.label_set}"
            )
        if n and (np.min(seq.cap) < 0 or np.max(seq.cap) >= N_CAP):
            raise PunctInputError(f"{where}: cap targets outside 0..{N_CAP - 1}")

    # -- contract
    def fit(self, train: list[WordSeq]) -> None:
        """Count words and marks per label (for ``pos_weight: auto``); the vocabulary is
        the pretrained tokenizer's."""
        counts = np.zeros(self.n_labels, dtype=np.int64)
        n_words = 0
        for seq in train:
            self._check(seq)
            counts += (np.asarray(seq.punct) > 0.5).sum(axis=0).astype(np.int64)
            n_words += len(seq.words)
        self.label_counts = counts
        self.n_words = n_words

    def windows(self, seqs: list[WordSeq], window: int, stride: int) -> list[Window]:
        """Word-aligned windows of at most ``window`` pieces (with [CLS]/[SEP])."""
        if window < 3 or window > self.max_window:
            raise PunctInputError(
                f"window must be in 3..{self.max_window} sub-word pieces, got {window}"
            )
        if stride < 1:
            raise PunctInputError(f"stride must be >= 1, got {stride}")
        out: list[Window] = []
        for seq in seqs:
            self._check(seq)
            out.extend(self._seq_windows(seq, window - 2, stride))
        return out

    def _seq_windows(self, seq: WordSeq, capacity: int, stride: int) -> list[Window]:
        pieces = [p[:capacity] for p in self.word_pieces(list(seq.words))]
        n = len(pieces)
        if n == 0:
            return []
        starts = np.concatenate([[0], np.cumsum([len(p) for p in pieces])])
        out: list[Window] = []
        first = 0
        while True:
            last = first
            while last < n and starts[last + 1] - starts[first] <= capacity:
                last += 1
            out.append(self._make_window(seq, pieces, first, last))
            if last >= n:
                return out
            target = starts[first] + stride
            nxt = int(np.searchsorted(starts[:n], target, side="left"))
            first = max(first + 1, min(nxt, last))

    def _make_window(self, seq: WordSeq, pieces: list[list[int]], first: int, last: int) -> Window:
        tok = self.tokenizer
        length = 2 + sum(len(pieces[j]) for j in range(first, last))
        input_ids = np.full(length, tok.pad_token_id, dtype=np.int64)
        word_ids = np.full(length, -1, dtype=np.int64)
        pauses = np.full(length, np.nan, dtype=np.float32)
        punct = np.zeros((length, self.n_labels), dtype=np.float32)
        cap = np.zeros(length, dtype=np.int64)
        prev_pos = np.full(length, -1, dtype=np.int64)
        utt_start = np.zeros(length, dtype=np.float32)
        input_ids[0] = tok.cls_token_id
        input_ids[-1] = tok.sep_token_id
        pos = 1
        prev = -1
        last_piece = self.label_position == "last"
        for j in range(first, last):
            word = pieces[j]
            input_ids[pos : pos + len(word)] = word
            slot = pos + len(word) - 1 if last_piece else pos
            word_ids[slot] = seq.offset + j
            pauses[slot] = seq.pauses[j]
            punct[slot] = seq.punct[j]
            cap[slot] = seq.cap[j]
            prev_pos[slot] = prev
            utt_start[slot] = 1.0 if j == 0 else 0.0
            prev = slot
            pos += len(word)
        return {
            "input_ids": input_ids,
            "word_ids": word_ids,
            "pauses": pauses,
            "punct": punct,
            "cap": cap,
            "prev_pos": prev_pos,
            "utt_start": utt_start,
        }

    def collate(self, windows: list[Window]) -> dict[str, torch.Tensor]:
        """Pad to the longest window of the batch."""
        if not windows:
            raise ValueError("cannot collate an empty list of windows")
        size = len(windows)
        length = max(len(w["input_ids"]) for w in windows)
        pad = {
            "input_ids": self.tokenizer.pad_token_id,
            "word_ids": -1,
            "pauses": np.nan,
            "punct": 0.0,
            "cap": 0,
            "prev_pos": -1,
            "utt_start": 0.0,
        }
        batch: dict[str, torch.Tensor] = {}
        for key, value in pad.items():
            first = windows[0][key]
            arr = np.full((size, length, *first.shape[1:]), value, dtype=first.dtype)
            for i, win in enumerate(windows):
                arr[i, : len(win[key])] = win[key]
            batch[key] = torch.from_numpy(arr)
        mask = np.zeros((size, length), dtype=np.int64)
        for i, win in enumerate(windows):
            mask[i, : len(win["input_ids"])] = 1
        batch["attention_mask"] = torch.from_numpy(mask)
        return batch

    def save(self, directory: Path) -> None:
        """Write featurizer.json, the tokenizer and the encoder's config.json."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        meta = {
            "format": FORMAT_VERSION,
            "family": "autopunct",
            "encoder": self.encoder_name,
            "label_set": self.label_set,
            "n_labels": self.n_labels,
            "lowercase": self.lowercase,
            "max_pieces_per_word": self.max_pieces,
            "prefix_space": self.prefix_space,
            "label_position": self.label_position,
            "label_counts": self.label_counts.tolist(),
            "n_words": self.n_words,
        }
        (directory / FEATURIZER_FILE).write_text(json.dumps(meta, indent=1) + "\n")
        self.tokenizer.save_pretrained(str(directory / "tokenizer"))
        source = self.encoder_config_dir or self.encoder_name
        try:
            load_encoder_config(source).save_pretrained(str(directory / "encoder_config"))
        except MissingDataError as err:  # a hub id not reachable: decoding needs the hub
            LOG.warning("encoder config of %r not saved: %s", self.encoder_name, err)

    @classmethod
    def load(cls, directory: Path, config: dict[str, Any]) -> AutopunctFeaturizer:
        """Rebuild from ``save``; the saved tokenizer is used (offline)."""
        directory = Path(directory)
        path = directory / FEATURIZER_FILE
        try:
            meta = json.loads(path.read_text())
        except FileNotFoundError as err:
            raise PunctInputError("no saved autopunct featurizer", path) from err
        except json.JSONDecodeError as err:
            raise PunctInputError(f"bad JSON: {err.msg}", path, err.lineno) from err
        if meta.get("format") != FORMAT_VERSION:
            raise PunctInputError(f"unsupported featurizer format {meta.get('format')!r}", path)
        if config.get("label_set") is not None and config["label_set"] != meta["label_set"]:
            raise PunctInputError(
                f"featurizer was fitted for label set {meta['label_set']!r}, "
                f"config asks for {config['label_set']!r}",
                path,
            )
        saved = {
            "label_set": meta["label_set"],
            "featurizer": {
                "encoder": meta["encoder"],
                "lowercase": meta["lowercase"],
                "max_pieces_per_word": meta["max_pieces_per_word"],
                "prefix_space": meta["prefix_space"],
                "label_position": meta.get("label_position", "first"),
            },
        }
        tokenizer = load_tokenizer(directory / "tokenizer")
        feat = cls(saved, tokenizer=tokenizer)
        feat.label_counts = np.asarray(meta["label_counts"], dtype=np.int64)
        if feat.label_counts.shape != (feat.n_labels,):
            raise PunctInputError(
                f"label_counts has {feat.label_counts.size} entries, expected {feat.n_labels}",
                path,
            )
        feat.n_words = int(meta["n_words"])
        if (directory / "encoder_config" / "config.json").is_file():
            feat.encoder_config_dir = directory / "encoder_config"
        return feat


# --------------------------------------------------------------------------- model


ACTIVATIONS: dict[str, type[nn.Module]] = {"gelu": nn.GELU, "relu": nn.ReLU, "tanh": nn.Tanh}


class Head(nn.Sequential):
    """dense -> non-linearity -> dropout -> linear."""

    def __init__(self, d_in: int, d_hidden: int, d_out: int, activation: str, dropout: float):
        if activation not in ACTIVATIONS:
            raise PunctInputError(
                f"unknown activation {activation!r}; expected one of {sorted(ACTIVATIONS)}"
            )
        super().__init__(
            nn.Linear(d_in, d_hidden),
            ACTIVATIONS[activation](),
            nn.Dropout(dropout),
            nn.Linear(d_hidden, d_out),
        )


class CustomBert(nn.Module):
    """A small BERT trained from scratch over the combined word+silence vectors.

    BERT geometry: learned positions + LayerNorm + dropout, then post-LN Transformer
    layers with GELU and a 4x feed-forward layer.
    """

    def __init__(
        self,
        hidden: int,
        layers: int = 4,
        heads: int = 4,
        ffn: int | None = None,
        dropout: float = 0.1,
        max_positions: int = 512,
    ):
        super().__init__()
        if hidden % heads:
            raise PunctInputError(f"custom_bert.heads={heads} does not divide hidden={hidden}")
        self.positions = nn.Embedding(max_positions, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(
            hidden,
            heads,
            dim_feedforward=ffn or 4 * hidden,
            dropout=dropout,
            activation="gelu",
            batch_first=True,
            norm_first=False,
        )
        self.layers = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        nn.init.normal_(self.positions.weight, std=0.02)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(x.shape[1], device=x.device)
        x = self.dropout(self.norm(x + self.positions(pos).to(x.dtype)))
        return self.layers(x, src_key_padding_mask=attention_mask == 0)


def _layer_list(encoder: nn.Module) -> nn.ModuleList | None:
    """The encoder's stack of Transformer layers (BERT/RoBERTa/XLM-R, DistilBERT, ...)."""
    for path in ("encoder.layer", "transformer.layer", "layers", "encoder.layers"):
        module: Any = encoder
        for part in path.split("."):
            module = getattr(module, part, None)
            if module is None:
                break
        if isinstance(module, nn.ModuleList):
            return module
    return None


def configure_encoder_training(encoder: nn.Module, train_layers: int) -> None:
    """-1: train everything; 0: freeze everything; k > 0: train only the top k layers.

    The pooler (unused) is always frozen so DDP sees no parameters without gradients.
    """
    encoder.requires_grad_(train_layers != 0)
    if train_layers > 0:
        layers = _layer_list(encoder)
        if layers is None:
            raise PunctInputError(
                f"cannot find the layer stack of {type(encoder).__name__} to train its top "
                f"{train_layers} layers; use encoder_train_layers -1 or 0"
            )
        encoder.requires_grad_(False)
        for layer in list(layers)[-train_layers:]:
            layer.requires_grad_(True)
    pooler = getattr(encoder, "pooler", None)
    if isinstance(pooler, nn.Module):
        pooler.requires_grad_(False)


class AutopunctModel(PunctModel):
    """Encoder + silences + optional custom BERT + punctuation and capitalisation heads."""

    def __init__(self, config: dict[str, Any], featurizer: AutopunctFeaturizer):
        super().__init__()
        mcfg = checked_options(config.get("model"), MODEL_KEYS, "model")
        _, self.n_labels = label_set_size(config)
        if self.n_labels != featurizer.n_labels:
            raise PunctInputError(
                f"label set has {self.n_labels} labels, featurizer {featurizer.n_labels}"
            )
        self.encoder = build_encoder(featurizer)
        hidden = int(self.encoder.config.hidden_size)
        self.train_layers = int(mcfg.get("encoder_train_layers", -1))
        lr = mcfg.get("encoder_lr")
        self.encoder_lr = None if lr is None else float(lr)
        self._encoder_cache: dict[bytes, torch.Tensor] = {}
        self._encoder_cache_floats = 0
        configure_encoder_training(self.encoder, self.train_layers)
        self.silence = make_silence(mcfg.get("silence"), hidden)

        bert = mcfg.get("custom_bert")
        self.custom_bert: CustomBert | None = None
        if bert:
            bcfg = checked_options({} if bert is True else bert, BERT_KEYS, "model.custom_bert")
            bcfg.setdefault("max_positions", featurizer.max_window)
            self.custom_bert = CustomBert(hidden, **bcfg)

        head = checked_options(mcfg.get("head"), HEAD_KEYS, "model.head")
        self.punct_head = Head(
            hidden,
            int(head.get("hidden") or hidden),
            self.n_labels,
            head.get("activation", "gelu"),
            float(head.get("dropout", 0.1)),
        )
        cap = checked_options(mcfg.get("cap_head"), CAP_HEAD_KEYS, "model.cap_head")
        self.detach_punct = bool(cap.get("detach_punct", False))
        self.cap_head = Head(
            2 * self.n_labels + 1 + hidden,
            int(cap.get("hidden") or hidden),
            N_CAP,
            cap.get("activation", "gelu"),
            float(cap.get("dropout", 0.1)),
        )
        loss = checked_options(mcfg.get("loss"), LOSS_KEYS, "model.loss")
        self.punct_weight = float(loss.pop("punct_weight", 1.0))
        self.cap_weight = float(loss.pop("cap_weight", 1.0))
        self.objective = MarkObjective(get_label_set(config["label_set"]), loss,
                                       featurizer.label_counts, featurizer.n_words)

    # -- training mode: a fully frozen encoder stays in eval mode (no dropout noise)
    def train(self, mode: bool = True) -> AutopunctModel:
        super().train(mode)
        if self.train_layers == 0:
            self.encoder.eval()
        return self

    def param_groups(self, opts: dict[str, Any]) -> list[dict[str, Any]]:
        """The pretrained encoder at ``model.encoder_lr`` (default: the optimizer's lr),
        everything trained from scratch (silences, custom BERT, heads) at the optimizer's."""
        encoder = [p for p in self.encoder.parameters() if p.requires_grad]
        ids = {id(p) for p in self.encoder.parameters()}
        rest = [p for p in self.parameters() if id(p) not in ids and p.requires_grad]
        groups: list[dict[str, Any]] = []
        if encoder:
            groups.append({"params": encoder} if self.encoder_lr is None
                          else {"params": encoder, "lr": self.encoder_lr})
        return [*groups, {"params": rest}]

    def encode(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Pretrained encoder output (B, T, H).

        With a frozen encoder the output of a window never changes, so during training
        each window's states are computed once and reused in later epochs (bounded by
        ``ENCODER_CACHE_FLOATS``); this makes frozen-encoder training several times
        faster on CPU and does not change any result.
        """
        if self.train_layers != 0:
            return self.encoder(
                input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
            ).last_hidden_state
        if not self.training:
            with torch.no_grad():
                return self.encoder(
                    input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
                ).last_hidden_state
        return self._cached_encode(batch["input_ids"], batch["attention_mask"])

    def _cached_encode(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        lengths = mask.sum(dim=1).tolist()
        keys = [ids[b, :n].cpu().numpy().tobytes() for b, n in enumerate(lengths)]
        missing = [b for b, key in enumerate(keys) if key not in self._encoder_cache]
        fresh: dict[int, torch.Tensor] = {}
        if missing:
            with torch.no_grad():
                out = self.encoder(input_ids=ids[missing], attention_mask=mask[missing])
            for j, b in enumerate(missing):
                fresh[b] = out.last_hidden_state[j, : lengths[b]]
                if self._encoder_cache_floats < ENCODER_CACHE_FLOATS:
                    self._encoder_cache[keys[b]] = fresh[b]
                    self._encoder_cache_floats += fresh[b].numel()
        rows = [fresh[b] if b in fresh else self._encoder_cache[keys[b]]
                for b in range(len(keys))]
        hidden = rows[0].new_zeros(ids.shape[0], ids.shape[1], rows[0].shape[-1])
        for b, row in enumerate(rows):
            hidden[b, : row.shape[0]] = row.to(hidden.dtype)
        return hidden

    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Logits ``punct`` (B, T, P) and ``cap`` (B, T, 3), and the cap head's input."""
        emb = self.encode(batch)
        x = emb + self.silence(batch["pauses"]).to(emb.dtype)
        if self.custom_bert is not None:
            x = self.custom_bert(x, batch["attention_mask"])
        return self.heads(x, emb, batch)

    def heads(self, x: torch.Tensor, emb: torch.Tensor, batch: dict[str, torch.Tensor]
              ) -> dict[str, torch.Tensor]:
        """Punctuation head on ``x``; capitalisation head on the punctuation output of the
        previous and current word, the utterance-start flag and the encoder output ``emb``."""
        punct_logits = self.punct_head(x)
        probs = self.objective.probs(punct_logits)
        if self.detach_punct:
            probs = probs.detach()
        prev_pos = batch["prev_pos"]
        has_prev = (prev_pos >= 0).unsqueeze(-1).to(probs.dtype)
        index = prev_pos.clamp(min=0).unsqueeze(-1).expand(-1, -1, probs.shape[-1])
        prev_probs = torch.gather(probs, 1, index) * has_prev
        start = batch["utt_start"].unsqueeze(-1).to(probs.dtype)
        cap_input = torch.cat([prev_probs, probs, start, emb.to(probs.dtype)], dim=-1)
        return {"punct": punct_logits, "cap": self.cap_head(cap_input), "cap_input": cap_input}

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Mark loss + CE over casing, on word positions (``word_ids >= 0``) only."""
        out = self.forward(batch)
        mask = batch["word_ids"] >= 0
        if not bool(mask.any()):
            return (out["punct"].sum() + out["cap"].sum()).float() * 0.0
        marks = self.objective.loss(out["punct"][mask], batch["punct"][mask])
        ce = F.cross_entropy(out["cap"][mask].float(), batch["cap"][mask].long())
        return self.punct_weight * marks + self.cap_weight * ce

    @torch.no_grad()
    def predict(self, batch: dict[str, torch.Tensor]) -> Prediction:
        """Mark probabilities and softmax casing probabilities per position (raw logits in
        ``extra`` for the ``sum`` aggregation)."""
        out = self.forward(batch)
        punct, cap = out["punct"].float(), out["cap"].float()
        return Prediction(
            punct=self.objective.probs(punct),
            cap=torch.softmax(cap, dim=-1),
            extra={"punct_logits": punct, "cap_logits": cap},
        )


def build_encoder(featurizer: AutopunctFeaturizer) -> nn.Module:
    """The pretrained encoder; if it cannot be loaded but the featurizer saved its config
    (decoding a trained checkpoint elsewhere), the architecture with random weights."""
    try:
        return load_encoder(featurizer.encoder_name)
    except MissingDataError:
        if featurizer.encoder_config_dir is None:
            raise
        LOG.warning(
            "pretrained encoder %r unavailable: built from %s with random weights; "
            "they must come from a trained checkpoint",
            featurizer.encoder_name,
            featurizer.encoder_config_dir,
        )
        return encoder_from_config(featurizer.encoder_config_dir)


# --------------------------------------------------------------------------- registry


def make_featurizer(config: dict[str, Any]) -> AutopunctFeaturizer:
    """Featurizer for ``config`` (loads the tokenizer of ``featurizer.encoder``)."""
    return AutopunctFeaturizer(config)


def make_model(config: dict[str, Any], featurizer: Featurizer) -> AutopunctModel:
    """Model for ``config``; the encoder is the featurizer's."""
    if not isinstance(featurizer, AutopunctFeaturizer):
        raise TypeError(f"autopunct needs an AutopunctFeaturizer, got {type(featurizer).__name__}")
    return AutopunctModel(config, featurizer)


def load_featurizer(directory: Path, config: dict[str, Any]) -> AutopunctFeaturizer:
    """Featurizer written by ``AutopunctFeaturizer.save``."""
    return AutopunctFeaturizer.load(directory, config)


FAMILY = Family("autopunct", make_featurizer, make_model, load_featurizer,
                model_keys=frozenset(MODEL_KEYS))
