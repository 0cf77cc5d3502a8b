"""Sub-word windows for a pretrained encoder, one prediction slot per word.

The featurizer of every family built on a pretrained BERT-like encoder (autopunct, nagy,
courtland, unipunc with its pretrained lexical encoder):

- the lower-cased words are cut into the tokenizer's pieces (at most
  ``max_pieces_per_word`` each); a word's prediction slot is its FIRST piece (as in
  BERT's token classification, AutoPunct's default) or, with ``label_position: last``,
  its LAST piece (the one next to the following mark; nagy and courtland); the other
  pieces, [CLS], [SEP] and padding get ``word_ids = -1`` and carry no loss;
- windows are cut in pieces: ``window`` includes [CLS] and [SEP], so a window holds at
  most ``window - 2`` pieces; windows start and end at word boundaries, the next window
  starts at the first word at least ``stride`` pieces after the current start (and never
  after the current window's end, so every word is covered);
- ``fit`` counts words and marks (for ``pos_weight: auto`` and prior initialisation);
  the vocabulary is the pretrained tokenizer's.

``save`` writes ``featurizer.json`` (its ``family`` field stays ``autopunct``, the value
every saved copy has), the tokenizer and the encoder's ``config.json``, so that a trained
experiment decodes offline.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from punct.config import Config, option
from punct.errors import MissingDataError, PunctInputError
from punct.labels import CAP_LABELS, get_label_set
from punct.models.base import Featurizer, Window, WindowPlan, WordSeq
from punct.models.encoders import load_encoder_config, load_tokenizer
from punct.models.subword.pieces import PieceTable
from punct.models.subword.plan import PiecePlan, Specials

LOG = logging.getLogger(__name__)
FEATURIZER_FILE = "featurizer.json"
FORMAT_VERSION = 1
N_CAP = len(CAP_LABELS)
LABEL_POSITIONS = ("first", "last")


def _shape(values: object) -> tuple[int, ...]:
    """``np.shape(values)``, read straight off an array."""
    return values.shape if isinstance(values, np.ndarray) else np.shape(values)


@dataclass
class SubwordFeaturizerOptions:
    """``featurizer:`` of the sub-word families (see the module docstring)."""

    encoder: str | None = None  # a hub id or a local directory (None: the default encoder)
    lowercase: bool = True
    max_pieces_per_word: int = option(8, low=1)
    prefix_space: bool = False  # a space before each word (RoBERTa-style tokenizers)
    # a word's prediction slot: its first piece (AutoPunct) or its last (nagy, courtland)
    label_position: str = option("first", choices=LABEL_POSITIONS)


@dataclass
class LastPieceFeaturizerOptions(SubwordFeaturizerOptions):
    """``featurizer:`` of nagy and courtland: the slot on each word's LAST piece."""

    label_position: str = option("last", choices=LABEL_POSITIONS)


class SubwordFeaturizer(Featurizer):
    """Sub-word windows for a pretrained encoder, one prediction slot per word."""

    def __init__(self, config: Config, tokenizer: Any | None = None):
        opts: SubwordFeaturizerOptions = config.featurizer
        self.label_set = config.label_set
        self.n_labels = len(get_label_set(config.label_set).labels)
        self.encoder_name: str | None = opts.encoder
        self.lowercase = opts.lowercase
        self.max_pieces = opts.max_pieces_per_word
        self.prefix_space = opts.prefix_space
        self.label_position = opts.label_position
        self.tokenizer = tokenizer if tokenizer is not None else load_tokenizer(self.encoder_name)
        self.encoder_config_dir: Path | None = None
        self.label_counts = np.zeros(self.n_labels, dtype=np.int64)
        self.n_words = 0
        self._pieces: dict[str, list[int]] = {}
        self._table: PieceTable | None = None
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

    def _check_window(self, window: int, stride: int) -> None:
        if window < 3 or window > self.max_window:
            raise PunctInputError(
                f"window must be in 3..{self.max_window} sub-word pieces, got {window}"
            )
        if stride < 1:
            raise PunctInputError(f"stride must be >= 1, got {stride}")

    def _check_all(self, seqs: list[WordSeq]) -> None:
        """``_check`` of every sequence, with array operations (``_check`` names the
        first bad one)."""
        for seq in seqs:  # arrays (nearly always) answer their shape without np.shape
            n = len(seq.words)
            if (_shape(seq.pauses) != (n,) or _shape(seq.cap) != (n,)
                    or _shape(seq.punct) != (n, self.n_labels)):
                self._check(seq)
        caps = np.concatenate([s.cap for s in seqs]) if seqs else np.zeros(0)
        if caps.size and (caps.min() < 0 or caps.max() >= N_CAP):
            for seq in seqs:
                self._check(seq)

    def plan(self, seqs: list[WordSeq], window: int, stride: int,
             width: int | None = None) -> WindowPlan:
        """The windows of ``windows`` as arrays (``punct.models.subword.plan``);
        ``width``: pad every batch to this many positions."""
        self._check_window(window, stride)
        self._check_all(seqs)
        if self._table is None:
            self._table = PieceTable(self.word_pieces)
        tok = self.tokenizer
        specials = Specials(tok.cls_token_id, tok.sep_token_id, tok.pad_token_id,
                            self.label_position == "last")
        return PiecePlan(self._table, specials, seqs, window - 2, stride, width)

    def windows(self, seqs: list[WordSeq], window: int, stride: int) -> list[Window]:
        """Word-aligned windows of at most ``window`` pieces (with [CLS]/[SEP])."""
        self._check_window(window, stride)
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
            "family": "autopunct",  # the value of every saved copy since format 1
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
    def load(cls, directory: Path, config: Config) -> SubwordFeaturizer:
        """Rebuild from ``save``: the saved options over ``config``'s featurizer section,
        the saved tokenizer (offline)."""
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
        if config.label_set != meta["label_set"]:
            raise PunctInputError(
                f"featurizer was fitted for label set {meta['label_set']!r}, "
                f"config asks for {config.label_set!r}",
                path,
            )
        saved = dataclasses.replace(
            config.featurizer,
            encoder=meta["encoder"],
            lowercase=meta["lowercase"],
            max_pieces_per_word=meta["max_pieces_per_word"],
            prefix_space=meta["prefix_space"],
            label_position=meta.get("label_position", "first"),
        )
        tokenizer = load_tokenizer(directory / "tokenizer")
        feat = cls(config.replace(featurizer=saved), tokenizer=tokenizer)
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
