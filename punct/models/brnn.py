"""The ``brnn`` family: punctuator2 (Tilk & Alumäe, Interspeech 2016).

Architecture (stage 1, text): word embedding -> bidirectional GRU (context ``C``) ->
unidirectional output GRU over ``C`` with attention
``a_t = softmax(w · tanh(W_c C + W_h s_{t-1}))``, late fusion of the attended context
``l_t = W_l (a_t C)``: ``f_t = sigmoid(W_ff l_t + W_fh s_t)``, ``h_t = l_t ⊙ f_t + s_t``,
``y_t = softmax(W_y h_t)``. The fusion and output weights start at zero, as in
punctuator2. Stage 2 (``model.pause: true`` + ``init_from``): the stage-1 model is
loaded and frozen; a new GRU reads ``[h_t; pause_t]`` and a new output layer predicts.
One stage with pauses (``model.pause_input: true``, our variant for small corpora): the
pause before each word is an extra input of the BiGRU beside its embedding, and the whole
model trains at once (a frozen stage 1 that has learnt a few thousand training words by
heart leaves stage 2 nothing to learn from the pauses; docs/TRAINING.md).

Slots. punctuator2 predicts the punctuation *between* two words with both visible.
We do the same: a window over words ``s..e-1`` is fed as
``[prev, w_s, ..., w_{e-1}, next]`` where ``prev``/``next`` are the neighbouring words
(``<END>`` at an utterance edge). The output step for token ``t >= 1`` predicts slot
``t``, the gap between tokens ``t-1`` and ``t``: the closing marks of token ``t-1`` plus
the opening marks (OPEN_*) of token ``t``. One softmax runs over the *combinations* of
marks seen in train slots (``O``, ``COMMA``, ``QUOTE|PERIOD``, ``PERIOD|OPEN_QUES``, ...),
so the model stays single-softmax while keeping the multi-label inventory.
``predict`` hands back, for each word position, the marginal probability of each mark
(sum of the probabilities of the combinations containing it): opening marks from the
slot before the word, closing marks from the slot after it; this is the word-table
convention (OPEN_* attach to the following word, the others to the preceding one).
The two edge tokens carry ``word_ids = -1``. Capitalisation is not modelled.

Sub-word units (``featurizer.tokenizer: sentencepiece``, ``featurizer.sp_model``: the
model of the token stage, ``data/token_list/<type><size>/sp.model``): each word becomes
its sentencepiece pieces instead of one vocabulary entry. The slot before a word's first
piece carries the gap's marks; the slots inside a word are not trained; a word's
prediction sits on its last piece (closing marks from the slot after it, opening marks
from the slot before its first piece, ``first`` in the batch). The model file is copied
into the featurizer directory, so a trained system needs nothing else.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from torch.utils.checkpoint import checkpoint

from punct.config import Config, OptionError, option
from punct.data.tokens import WordPieces
from punct.data.windows import window_spans
from punct.errors import MissingDataError
from punct.labels import OPENING_LABELS, get_label_set
from punct.models.base import Family, Featurizer, Prediction, PunctModel, Window, WordSeq

PAD, UNK, END, NUM = "<PAD>", "<UNK>", "<END>", "<NUM>"
SPECIALS = (PAD, UNK, END, NUM)
IGNORE = -100
FEATURIZER_FILE = "brnn_featurizer.json"
SP_FILE = "sentencepiece.model"
TOKENIZERS = ("word", "sentencepiece")
ATTENTION_ELEMENTS = 1 << 23
"""Elements of the (B, steps, T, 2H) attention tensor computed at once (bounds memory)."""
RECOMPUTE_ELEMENTS = 1 << 26
"""``checkpoint_attention`` recomputes the attention in the backward pass only when the
whole (B, T-1, T, A) tensor of a training batch exceeds this (256 MB of float32); smaller
batches (the mini recipe's) keep it: mini brnn_text trains in 53 s instead of 64."""
PAUSE_INPUT_UNIT_S = 0.1
"""``model.pause_input`` feeds pauses in tenths of a second: a pause in seconds (mostly
under 0.6) is too small beside the embeddings for the BiGRU to pick up before it has
learnt the training text by heart (mini dev micro-F1 0.255 against 0.273 in these units,
and 0.221 against 0.182 with the pauses zeroed)."""

Combo = tuple[int, ...]


@dataclass
class BRNNFeaturizerOptions:
    """``featurizer:`` of the brnn family (see the module docstring)."""

    min_count: int = option(2, low=1)  # rarer training words are <UNK>
    max_vocab: int = option(100_000, low=1)
    max_pause: float = option(5.0, low=0.0)  # pauses clipped to [0, max_pause] seconds
    tokenizer: str = option("word", choices=TOKENIZERS)
    sp_model: str | None = None  # tokenizer: sentencepiece: the token stage's model

    def check(self) -> None:
        if self.tokenizer == "sentencepiece" and not self.sp_model:
            raise OptionError("sp_model", "tokenizer: sentencepiece needs featurizer.sp_model")


@dataclass
class BRNNOptions:
    """``model:`` of the brnn family (see the module docstring)."""

    hidden: int = option(256, low=1)
    embedding: int | None = option(None, low=1)  # None: hidden
    checkpoint_attention: bool = True  # recompute big attention tensors in the backward pass
    pause_input: bool = False  # one stage: the pause before each word feeds the BiGRU
    pause: bool = False  # stage 2 over the init_from stage-1 model
    pause_hidden: int | None = option(None, low=1)  # stage 2's GRU (None: hidden)


def is_numeric(word: str) -> bool:
    """Digit-heavy token: at least half of its letters/digits are digits (``1990s``, ``3d``)."""
    alnum = [ch for ch in word if ch.isalnum()]
    digits = sum(ch.isdigit() for ch in alnum)
    return digits > 0 and 2 * digits >= len(alnum)


class BRNNFeaturizer(Featurizer):
    """Vocabulary, slot label combinations and window cutting for the BRNN family."""

    def __init__(self, labels: tuple[str, ...], min_count: int = 2, max_vocab: int = 100_000,
                 max_pause: float = 5.0, sp_model: bytes | None = None):
        self.labels = tuple(labels)
        self.pieces = WordPieces(sp_model, offset=len(SPECIALS)) if sp_model else None
        self.opening = np.array([lab in OPENING_LABELS for lab in self.labels], dtype=bool)
        self.min_count = int(min_count)
        self.max_vocab = int(max_vocab)
        self.max_pause = float(max_pause)
        self.vocab: list[str] = list(SPECIALS)
        self.index: dict[str, int] = {w: i for i, w in enumerate(self.vocab)}
        self.combos: list[Combo] = [()]
        self.combo_index: dict[Combo, int] = {(): 0}
        self._nearest: dict[Combo, int] = {}

    # -- configuration -------------------------------------------------------------
    @classmethod
    def from_config(cls, config: Config) -> BRNNFeaturizer:
        opts: BRNNFeaturizerOptions = config.featurizer
        labels = get_label_set(config.label_set).labels
        sp_model = None
        if opts.tokenizer == "sentencepiece":
            assert opts.sp_model  # BRNNFeaturizerOptions.check
            path = Path(opts.sp_model)
            if not path.is_file():
                raise MissingDataError("sentencepiece model not found (run the token stage, "
                                       "run.sh --token-type)", path)
            sp_model = path.read_bytes()
        return cls(labels, opts.min_count, opts.max_vocab, opts.max_pause, sp_model)

    # -- fitting -------------------------------------------------------------------
    def normalise(self, word: str) -> str:
        return NUM if is_numeric(word) else word

    def token_id(self, word: str) -> int:
        return self.index.get(self.normalise(word), self.index[UNK])

    def slot_combos(self, seq: WordSeq) -> list[Combo]:
        """Combination of each of the ``n + 1`` slots of a sequence (slot k precedes word k)."""
        n = len(seq)
        out: list[Combo] = []
        for k in range(n + 1):
            labels: set[int] = set()
            if k > 0:
                labels.update(int(j) for j in np.flatnonzero(seq.punct[k - 1] > 0.5)
                              if not self.opening[j])
            if k < n:
                labels.update(int(j) for j in np.flatnonzero(seq.punct[k] > 0.5)
                              if self.opening[j])
            out.append(tuple(sorted(labels)))
        return out

    def fit(self, train: list[WordSeq]) -> None:
        if self.pieces is not None:  # the sub-word vocabulary is the sentencepiece model's
            sp = self.pieces.sp
            self.vocab = list(SPECIALS) + [sp.id_to_piece(i) for i in range(len(self.pieces))]
        else:
            counts = Counter(self.normalise(w) for seq in train for w in seq.words)
            kept = [w for w, c in counts.items() if c >= self.min_count and w not in SPECIALS]
            kept.sort(key=lambda w: (-counts[w], w))
            self.vocab = list(SPECIALS) + kept[: self.max_vocab]
        self.index = {w: i for i, w in enumerate(self.vocab)}
        combo_counts = Counter(c for seq in train for c in self.slot_combos(seq))
        rest = sorted((c for c in combo_counts if c), key=lambda c: (-combo_counts[c], c))
        self.combos = [(), *rest]
        self.combo_index = {c: i for i, c in enumerate(self.combos)}
        self._nearest = {}

    def combo_id(self, combo: Combo) -> int:
        """Index of a combination; an unseen one maps to the seen combination sharing most
        marks (ties: fewest extra marks, then most frequent)."""
        if combo in self.combo_index:
            return self.combo_index[combo]
        if combo not in self._nearest:
            want = set(combo)
            self._nearest[combo] = min(
                range(len(self.combos)),
                key=lambda i: (-len(want & set(self.combos[i])),
                               len(set(self.combos[i]) - want), i),
            )
        return self._nearest[combo]

    def combo_names(self) -> list[str]:
        return ["|".join(self.labels[j] for j in c) or "O" for c in self.combos]

    def membership(self) -> torch.Tensor:
        """(K, P) matrix: 1 where combination k contains mark p."""
        m = torch.zeros(len(self.combos), len(self.labels))
        for k, combo in enumerate(self.combos):
            for j in combo:
                m[k, j] = 1.0
        return m

    # -- windows -------------------------------------------------------------------
    def windows(self, seqs: list[WordSeq], window: int, stride: int) -> list[Window]:
        if self.pieces is not None:
            return self._piece_windows(seqs, window, stride)
        out: list[Window] = []
        end_id = self.index[END]
        for seq in seqs:
            n = len(seq)
            ids = np.array([self.token_id(w) for w in seq.words], dtype=np.int64)
            combos = np.array([self.combo_id(c) for c in self.slot_combos(seq)], dtype=np.int64)
            pauses = np.nan_to_num(np.asarray(seq.pauses, dtype=np.float32), nan=0.0)
            pauses = np.clip(pauses, 0.0, self.max_pause)
            for s, e in window_spans(n, window, stride):
                length = e - s
                tok = np.empty(length + 2, dtype=np.int64)
                tok[0] = ids[s - 1] if s > 0 else end_id
                tok[1:-1] = ids[s:e]
                tok[-1] = ids[e] if e < n else end_id
                word_ids = np.full(length + 2, -1, dtype=np.int64)
                word_ids[1:-1] = np.arange(seq.offset + s, seq.offset + e)
                # slot t (t >= 1) lies between token t-1 (word s+t-2) and token t (word s+t-1)
                target = np.full(length + 2, IGNORE, dtype=np.int64)
                target[1:] = combos[s:e + 1]
                pause = np.zeros(length + 2, dtype=np.float32)
                first = max(s - 1, 0)
                prev_pauses = pauses[first:e]  # pause after words s-1 .. e-1
                pause[2 if s == 0 else 1:] = prev_pauses
                out.append({"ids": tok, "word_ids": word_ids, "target": target, "pauses": pause,
                            "first": np.arange(length + 2, dtype=np.int64)})
        return out

    def _piece_windows(self, seqs: list[WordSeq], window: int, stride: int) -> list[Window]:
        """Windows of ``window`` words as sentencepiece pieces (see the module docstring)."""
        assert self.pieces is not None
        out: list[Window] = []
        end_id = self.index[END]
        for seq in seqs:
            n = len(seq)
            ids = [self.pieces.ids(w) for w in seq.words]
            combos = np.array([self.combo_id(c) for c in self.slot_combos(seq)], dtype=np.int64)
            pauses = np.nan_to_num(np.asarray(seq.pauses, dtype=np.float32), nan=0.0)
            pauses = np.clip(pauses, 0.0, self.max_pause)
            for s, e in window_spans(n, window, stride):
                tok = [ids[s - 1][-1] if s > 0 else end_id]
                word_ids, target, first, pause = [-1], [IGNORE], [0], [0.0]
                for k in range(s, e):
                    start = len(tok)
                    for j, piece in enumerate(ids[k]):
                        tok.append(piece)
                        last = j == len(ids[k]) - 1
                        word_ids.append(seq.offset + k if last else -1)
                        target.append(combos[k] if j == 0 else IGNORE)
                        first.append(start)
                        pause.append(pauses[k - 1] if j == 0 and k > 0 else 0.0)
                tok.append(ids[e][0] if e < n else end_id)
                word_ids.append(-1)
                target.append(combos[e])
                first.append(len(tok) - 1)
                pause.append(pauses[e - 1])
                out.append({"ids": np.array(tok, dtype=np.int64),
                            "word_ids": np.array(word_ids, dtype=np.int64),
                            "target": np.array(target, dtype=np.int64),
                            "pauses": np.array(pause, dtype=np.float32),
                            "first": np.array(first, dtype=np.int64)})
        return out

    def collate(self, windows: list[Window]) -> dict[str, torch.Tensor]:
        lengths = [len(w["ids"]) for w in windows]
        t_max = max(lengths)
        b = len(windows)
        ids = torch.zeros(b, t_max, dtype=torch.long)
        word_ids = torch.full((b, t_max), -1, dtype=torch.long)
        target = torch.full((b, t_max), IGNORE, dtype=torch.long)
        pauses = torch.zeros(b, t_max, dtype=torch.float32)
        first = torch.arange(t_max, dtype=torch.long).repeat(b, 1)
        for i, w in enumerate(windows):
            n = lengths[i]
            if "first" in w:
                first[i, :n] = torch.from_numpy(w["first"])
            ids[i, :n] = torch.from_numpy(w["ids"])
            word_ids[i, :n] = torch.from_numpy(w["word_ids"])
            target[i, :n] = torch.from_numpy(w["target"])
            pauses[i, :n] = torch.from_numpy(w["pauses"])
        return {"ids": ids, "word_ids": word_ids, "target": target, "pauses": pauses,
                "first": first, "lengths": torch.tensor(lengths, dtype=torch.long)}

    # -- persistence ---------------------------------------------------------------
    def save(self, directory: Path) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        state = {"labels": list(self.labels), "min_count": self.min_count,
                 "max_vocab": self.max_vocab, "max_pause": self.max_pause,
                 "combos": [list(c) for c in self.combos], "combo_names": self.combo_names(),
                 "vocab": self.vocab,
                 "tokenizer": "word" if self.pieces is None else "sentencepiece"}
        if self.pieces is not None:
            (directory / SP_FILE).write_bytes(self.pieces.model)
        (directory / FEATURIZER_FILE).write_text(json.dumps(state, ensure_ascii=False, indent=0),
                                                 encoding="utf-8")

    @classmethod
    def load(cls, directory: Path, config: Config) -> BRNNFeaturizer:
        state = json.loads((Path(directory) / FEATURIZER_FILE).read_text(encoding="utf-8"))
        sp_model = None
        if state.get("tokenizer", "word") == "sentencepiece":
            sp_model = (Path(directory) / SP_FILE).read_bytes()
        feat = cls(tuple(state["labels"]), state["min_count"], state["max_vocab"],
                   state["max_pause"], sp_model)
        expected = get_label_set(config.label_set).labels
        if tuple(state["labels"]) != tuple(expected):
            raise ValueError(f"featurizer in {directory} was built for labels {state['labels']}, "
                             f"config asks for {list(expected)}")
        feat.vocab = list(state["vocab"])
        feat.index = {w: i for i, w in enumerate(feat.vocab)}
        feat.combos = [tuple(c) for c in state["combos"]]
        feat.combo_index = {c: i for i, c in enumerate(feat.combos)}
        return feat


class SlotModel(PunctModel):
    """Shared by both BRNN stages: a softmax over label combinations per slot between
    two words, trained with cross-entropy and read out as per-mark marginals."""

    def slot_logits(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        raise NotImplementedError

    def combos(self) -> tuple[torch.Tensor, np.ndarray]:
        """(membership of marks in combinations, which marks are opening)."""
        raise NotImplementedError

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        logits = self.slot_logits(batch)
        target = batch["target"][:, 1:]
        return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                           target.reshape(-1), ignore_index=IGNORE)

    def loss_weight(self, batch: dict[str, torch.Tensor]) -> float:
        """Slots the cross-entropy averages over (data-parallel gradient weighting)."""
        return float((batch["target"][:, 1:] != IGNORE).sum())

    def predict(self, batch: dict[str, torch.Tensor]) -> Prediction:
        probs = torch.softmax(self.slot_logits(batch).float(), dim=-1)
        return Prediction(marginals_to_words(probs, *self.combos(), batch["lengths"],
                                             batch.get("first")),
                          None, {"slot_probs": probs})


class BRNNText(SlotModel):
    """Stage 1: BiGRU + attention + late fusion + output GRU over label combinations."""

    def __init__(self, vocab_size: int, membership: torch.Tensor, opening: np.ndarray,
                 hidden: int = 256, embedding: int | None = None,
                 checkpoint_attention: bool = True, pause_input: bool = False):
        super().__init__()
        self.checkpoint_attention = checkpoint_attention
        self.pause_input = bool(pause_input)
        self.attention_chunk = 0  # steps per attention chunk; 0 = from ATTENTION_ELEMENTS
        embedding = embedding or hidden
        n_combos = membership.shape[0]
        self.hidden = hidden
        self.register_buffer("membership", membership.clone())
        self.register_buffer("opening", torch.as_tensor(opening, dtype=torch.bool))
        self.embed = nn.Embedding(vocab_size, embedding, padding_idx=0)
        self.bigru = nn.GRU(embedding + int(self.pause_input), hidden, batch_first=True,
                            bidirectional=True)
        ctx = 2 * hidden
        self.att_c = nn.Linear(ctx, ctx)  # W_c C (+ bias)
        self.att_h = nn.Linear(hidden, ctx, bias=False)  # W_h s_{t-1}
        self.att_w = nn.Linear(ctx, 1, bias=False)  # w
        self.out_gru = nn.GRU(ctx, hidden, batch_first=True)
        self.fuse_c = nn.Linear(ctx, hidden, bias=False)  # l_t = W_l (attended context)
        self.fuse_f = nn.Linear(hidden, hidden, bias=False)  # W_ff
        self.fuse_h = nn.Linear(hidden, hidden)  # W_fh (+ b_f)
        self.out = nn.Linear(hidden, n_combos)  # W_y
        for layer in (self.fuse_c, self.fuse_f, self.fuse_h, self.out):
            nn.init.zeros_(layer.weight)
            if layer.bias is not None:
                nn.init.zeros_(layer.bias)

    def context(self, ids: torch.Tensor, lengths: torch.Tensor,
                pauses: torch.Tensor | None = None) -> torch.Tensor:
        """Bidirectional GRU states (B, T, 2H); padding does not leak into real positions.

        With ``pause_input`` each token's embedding is followed by the pause before it
        (``pauses`` (B, T) in seconds, fed in units of ``PAUSE_INPUT_UNIT_S``), so the
        BiGRU reads the pauses on both sides of every slot.
        """
        inputs = self.embed(ids)
        if self.pause_input:
            if pauses is None:
                raise ValueError("a brnn with model.pause_input needs the batch's pauses")
            scaled = pauses[..., None].to(inputs.dtype) / PAUSE_INPUT_UNIT_S
            inputs = torch.cat([inputs, scaled], dim=-1)
        packed = pack_padded_sequence(inputs, lengths.cpu(), batch_first=True,
                                      enforce_sorted=False)
        out, _ = self.bigru(packed)
        ctx, _ = pad_packed_sequence(out, batch_first=True, total_length=ids.shape[1])
        return ctx

    def attend(self, projected: torch.Tensor, ctx: torch.Tensor, query: torch.Tensor,
               valid: torch.Tensor) -> torch.Tensor:
        """Attended contexts for a chunk of steps: ``a_t = softmax(w·tanh(W_c C + W_h s))``.

        ``projected`` (B, T, A) = W_c C + b; ``query`` (B, c, A) = W_h s_{t-1} for c steps;
        returns ``sum_j a_tj C_j`` (B, c, 2H).
        """
        hidden = torch.tanh(projected[:, None, :, :] + query[:, :, None, :])  # (B, c, T, A)
        scores = self.att_w(hidden).squeeze(-1).masked_fill(~valid[:, None, :], float("-inf"))
        return torch.softmax(scores, dim=-1) @ ctx

    def fused_states(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Late-fused output states ``h_t`` for slots 1..T-1: (B, T-1, H).

        The output GRU's recurrence does not depend on the attention (punctuator2 feeds
        the attended context only into the late fusion), so the GRU runs over the whole
        sequence at once and the attention of all steps is computed in parallel, in chunks
        of steps bounding memory; in training, when the batch's whole attention tensor
        exceeds ``RECOMPUTE_ELEMENTS``, each chunk is recomputed in the backward pass
        (``checkpoint_attention``) instead of storing its (B, c, T, A) activations.
        """
        ids, lengths = batch["ids"], batch["lengths"]
        ctx = self.context(ids, lengths, batch.get("pauses"))
        b, t_len, _ = ctx.shape
        if t_len < 2:
            return ctx.new_zeros(b, 0, self.hidden)
        valid = torch.arange(t_len, device=ids.device)[None, :] < lengths[:, None]
        states, _ = self.out_gru(ctx[:, 1:])  # s_1 .. s_{T-1}, s_0 = 0
        previous = torch.cat([states.new_zeros(b, 1, self.hidden), states[:, :-1]], dim=1)
        projected = self.att_c(ctx)
        queries = self.att_h(previous)
        chunk = self.attention_chunk or max(1, ATTENTION_ELEMENTS // max(1, b * t_len *
                                                                          projected.shape[-1]))
        recompute = (self.checkpoint_attention and torch.is_grad_enabled() and self.training
                     and b * (t_len - 1) * t_len * projected.shape[-1] > RECOMPUTE_ELEMENTS)
        parts = []
        for t0 in range(0, t_len - 1, chunk):
            query = queries[:, t0:t0 + chunk]
            if recompute:
                parts.append(checkpoint(self.attend, projected, ctx, query, valid,
                                        use_reentrant=False))
            else:
                parts.append(self.attend(projected, ctx, query, valid))
        late = self.fuse_c(torch.cat(parts, dim=1))
        gate = torch.sigmoid(self.fuse_f(late) + self.fuse_h(states))
        return late * gate + states

    def slot_logits(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Logits over label combinations for slots 1..T-1: (B, T-1, K)."""
        return self.out(self.fused_states(batch))

    def combos(self) -> tuple[torch.Tensor, np.ndarray]:
        return self.membership, self.opening



def marginals_to_words(slot_probs: torch.Tensor, membership: torch.Tensor,
                       opening: torch.Tensor, lengths: torch.Tensor | None = None,
                       first: torch.Tensor | None = None) -> torch.Tensor:
    """Per-token mark probabilities (B, T, P) from slot combination probabilities.

    ``slot_probs[:, k]`` is slot ``k + 1`` (between tokens k and k+1). Token j
    (1 <= j <= T-2) takes opening marks from slot j (slot ``first[:, j]``, the slot
    before its word's first piece, with sub-word units) and closing marks from slot j+1;
    the edge tokens 0 and ``length - 1`` (and padding) get zeros.
    """
    marg = slot_probs @ membership.to(slot_probs.dtype)  # (B, T-1, P)
    b, n_slots, p = marg.shape
    out = marg.new_zeros(b, n_slots + 1, p)
    if n_slots >= 2:
        before = marg[:, :-1]
        if first is not None:
            idx = (first[:, 1:-1].to(marg.device) - 1).clamp(0, n_slots - 1)
            before = marg.gather(1, idx[:, :, None].expand(-1, -1, p))
        after = marg[:, 1:]
        out[:, 1:-1] = torch.where(opening[None, None, :], before, after)
    if lengths is not None:
        pos = torch.arange(n_slots + 1, device=out.device)[None, :]
        out = out * (pos < lengths.to(out.device)[:, None] - 1).unsqueeze(-1).to(out.dtype)
    return out


class BRNNPause(SlotModel):
    """Stage 2: frozen stage-1 model, a new GRU over [fused state; pause], a new output."""

    def __init__(self, stage1: BRNNText, hidden: int = 256):
        super().__init__()
        self.stage1 = stage1
        for param in self.stage1.parameters():
            param.requires_grad_(False)
        self.gru = nn.GRU(stage1.hidden + 1, hidden, batch_first=True)
        self.out = nn.Linear(hidden, stage1.membership.shape[0])
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def train(self, mode: bool = True) -> BRNNPause:
        super().train(mode)
        self.stage1.eval()  # frozen: always in inference mode
        return self

    def load_init(self, state: dict[str, torch.Tensor]) -> None:
        """Load the stage-1 weights (a stage-1 ``best.pt`` state dict) and keep them frozen."""
        self.stage1.load_state_dict(state)
        for param in self.stage1.parameters():
            param.requires_grad_(False)

    def slot_logits(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        with torch.no_grad():
            fused = self.stage1.fused_states(batch)
        pause = batch["pauses"][:, 1:, None].to(fused.dtype)
        states, _ = self.gru(torch.cat([fused, pause], dim=-1))
        return self.out(states)

    def combos(self) -> tuple[torch.Tensor, np.ndarray]:
        return self.stage1.membership, self.stage1.opening



def _stage1(opts: BRNNOptions, featurizer: BRNNFeaturizer) -> BRNNText:
    return BRNNText(len(featurizer.vocab), featurizer.membership(), featurizer.opening,
                    opts.hidden, opts.embedding, opts.checkpoint_attention, opts.pause_input)


def make_model(config: Config, featurizer: Featurizer) -> PunctModel:
    """Stage 1, or stage 2 when ``model.pause`` is true (needs ``init_config`` from the
    trainer: the resolved config of the stage-1 experiment named by ``init_from``)."""
    if not isinstance(featurizer, BRNNFeaturizer):
        raise TypeError("the brnn family needs a BRNNFeaturizer")
    opts: BRNNOptions = config.model
    if not opts.pause:
        return _stage1(opts, featurizer)
    if config.init_config is None:
        raise ValueError("brnn with model.pause: true needs init_from: <stage-1 exp dir>")
    stage1 = _stage1(config.init_config.model, featurizer)
    return BRNNPause(stage1, opts.hidden if opts.pause_hidden is None else opts.pause_hidden)


def perplexity(loss: float) -> float:
    """punctuator2's validation perplexity from a mean cross-entropy."""
    return math.exp(min(loss, 50.0))


FAMILY = Family(
    name="brnn",
    make_featurizer=BRNNFeaturizer.from_config,
    make_model=make_model,
    load_featurizer=lambda directory, config: BRNNFeaturizer.load(directory, config),
    options=BRNNOptions,
    featurizer_options=BRNNFeaturizerOptions,
)
