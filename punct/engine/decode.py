"""The inference engine shared by every family.

sequences -> the featurizer's window plan (``window``, ``stride``: window/stride
predictions per word; arrays, ``Featurizer.plan``) -> batches across windows and
utterances, longest first -> ``PunctModel.predict`` (optionally under bf16 autocast; on
CUDA fed from pinned memory without waiting) -> the outputs at the word slots ->
aggregation by ``word_ids`` (mean of probabilities, or sum of activations, summed in
arrival order: ``punct.engine.aggregate.SlotAggregator``) -> per-word decisions: for an
exclusive label set (iwslt4, moro2) the argmax over O (one minus the marks'
probabilities) and the marks; for a multi-label set a mark is predicted when its
probability is at least its threshold (``decode.threshold``, 0.5, or the per-mark
thresholds tuned on dev and stored in ``thresholds.json``); the capitalisation class by
argmax. With ``decode.constraints`` (the default) each document then gets the best
labelling that obeys the document rules (paired quotes and ¿/¡, a capital after a
sentence end, a final mark at the end; ``punct.engine.constraints``).

Families that do not model capitalisation (``Prediction.cap is None``, e.g. BRNN) get
their cap column from a rule: FIRST_CAP at the start of an utterance and after a
sentence-final mark (PERIOD, QUESTION, EXCLAMATION, ELLIPSIS), O elsewhere; the decode
JSON then says ``cap_modelled: false`` so the scorer can show n/a.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from punct.config import Config, load_config
from punct.data.windows import stride_for
from punct.engine.aggregate import SlotAggregator
from punct.engine.combinations import combination_matrix, constrained_marks
from punct.engine.constraints import Edges, constrain, data_dir_edges, passthrough_flags
from punct.engine.precision import resolve_bf16
from punct.engine.transfer import batch_to_device, rows_at, to_device, to_numpy
from punct.errors import MissingDataError, PunctInputError
from punct.labels import CAP_LABELS, OPENING_LABELS, apply_cap, get_label_set
from punct.models.base import (
    Featurizer,
    Prediction,
    PunctModel,
    Registry,
    WordSeq,
    WordTypes,
    weights_from_checkpoint,
)
from punct.models.checkpoint import load_checkpoint
from punct.wordtable import WordRow

SENTENCE_FINAL = frozenset({"PERIOD", "QUESTION", "EXCLAMATION", "ELLIPSIS"})


@dataclass
class WordPredictions:
    """Aggregated per-word output of a decoding run (global word order)."""

    punct: np.ndarray  # (N, P) probabilities
    cap: np.ndarray | None  # (N, 3) probabilities, None when not modelled
    counts: np.ndarray  # (N,) predictions per word
    seconds: float
    n_windows: int
    bf16: bool = False  # whether bf16 autocast was in effect
    # the plan's word types (``WindowPlan.word_types``), where it looked them up: the
    # decisions then find the pass-through words once per form; None: word by word
    word_forms: tuple[np.ndarray, np.ndarray, WordTypes] | None = None


def pick_device(name: str | None = None) -> torch.device:
    """``cpu``, ``cuda`` or ``auto`` (cuda when available)."""
    if name in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


FLUSH_ROWS = 1 << 18  # slot outputs kept on the device before one copy to the host
HOST_FLUSH_ROWS: int | None = None  # the same for a model on the host (None: one block)


class _SlotOutputs:
    """The model's outputs at the word slots of each batch, gathered on its device and
    handed to the aggregator in blocks (one host copy, one synchronisation, per block;
    ``limit`` None: one block at the end, for a model on the host). Only the outputs the
    aggregation reads are gathered; a block reaches the aggregator with contiguous
    columns (its sums go a column at a time)."""

    def __init__(self, agg: SlotAggregator, limit: int | None = FLUSH_ROWS):
        self.agg = agg
        self.limit = limit
        self.items: list[tuple[np.ndarray, tuple[torch.Tensor | None, ...]]] = []
        self.rows = 0

    def add(self, word_ids: np.ndarray, pred: Prediction, n_positions: int,
            index: torch.Tensor) -> None:
        given = (pred.punct, pred.cap, pred.extra.get("punct_logits"),
                 pred.extra.get("cap_logits"))
        outs = tuple(rows_at(t, n_positions, index) if wanted else None
                     for t, wanted in zip(given, self.agg.wants(*given), strict=True))
        self.items.append((word_ids, outs))
        self.rows += len(word_ids)
        if self.limit is not None and self.rows >= self.limit:
            self.flush()

    def flush(self) -> None:
        if not self.items:
            return
        ids = np.concatenate([i for i, _ in self.items])
        columns = []
        for k in range(4):
            parts = [outs[k] for _, outs in self.items]
            columns.append(None if parts[0] is None else
                           to_numpy(torch.cat([part.T for part in parts], dim=1)).T)
        self.items, self.rows = [], 0
        self.agg.add(ids, *columns)


def predict_words(model: PunctModel, featurizer: Featurizer, seqs: Sequence[WordSeq],
                  window: int, stride: int, batch_size: int = 32, bf16: bool | str = False,
                  aggregate: str = "mean", device: torch.device | str = "cpu",
                  progress: bool = False, exclusive: bool = False) -> WordPredictions:
    """Run the model over all windows of ``seqs`` and aggregate per word.

    ``bf16``: True/False or ``auto``/``on``/``off`` (see ``punct.engine.precision``);
    ``exclusive``: the marks are the shares of one softmax (``sum`` aggregation).
    The windows come from ``featurizer.plan`` (arrays, batch by batch); only the word
    slots of each batch leave the device, and the host never waits for the model
    between batches (the next batch is prepared while the device computes).
    """
    device = torch.device(device)
    use_bf16 = resolve_bf16(bf16, device)
    if batch_size < 1:
        raise PunctInputError(f"batch size must be >= 1, got {batch_size}")
    n_words = max((s.offset + len(s) for s in seqs), default=0)
    n_labels = seqs[0].punct.shape[1] if seqs else 0
    start = time.perf_counter()
    plan = featurizer.plan(list(seqs), window, stride)
    # longest first: less padding per batch, and the largest batch shows memory problems early
    order = np.argsort(-plan.lengths, kind="stable")
    agg = SlotAggregator(n_words, aggregate, exclusive)
    outputs = _SlotOutputs(agg, HOST_FLUSH_ROWS if device.type == "cpu" else FLUSH_ROWS)
    was_training = model.training
    model.eval()
    model.to(device)
    bar = tqdm(total=len(order), desc="decode", unit="win", disable=not progress, leave=False)
    try:
        with torch.inference_mode():
            for rows, batch in plan.batches(order, batch_size, model.predict_inputs):
                word_ids = batch["word_ids"].cpu().numpy().reshape(-1)
                slots = np.flatnonzero(word_ids >= 0)
                index = to_device(torch.from_numpy(slots), device)
                batch = batch_to_device(batch, device)
                with torch.autocast(device_type=device.type, dtype=torch.bfloat16,
                                    enabled=use_bf16):
                    pred = model.predict(batch)
                outputs.add(word_ids[slots], pred, word_ids.size, index)
                bar.update(len(rows))
            outputs.flush()
    finally:
        bar.close()
        model.train(was_training)
    punct, cap, counts = agg.result(n_labels)
    return WordPredictions(punct, cap, counts, time.perf_counter() - start, len(order),
                           use_bf16, plan.word_types())


def passthrough_by_form(word_forms: tuple[np.ndarray, np.ndarray, WordTypes] | None,
                        n_words: int) -> np.ndarray | None:
    """(n_words,) ``passthrough_flags`` of the words of a plan, from its ``word_types()``
    (each form's flag computed once, kept by the table of types); None without them."""
    if word_forms is None:
        return None
    word_ids, types, table = word_forms
    through = np.zeros(n_words, dtype=bool)
    through[word_ids] = table.type_flags(passthrough_flags)[types]
    return through


def _column_argmax(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``x.argmax(axis=1)`` (int64) and the row maxima, for a few columns, by whole-column
    operations: the maxima, then the index of the first column that reaches them (the
    first maximum wins, as with argmax; an array holding NaN is left to argmax). Fastest
    with contiguous columns, the aggregator's layout."""
    if x.size == 0 or np.isnan(x.max()):  # one pass; NaN propagates through max
        index = x.argmax(axis=1).astype(np.int64)
        return index, x[np.arange(len(index)), index]
    columns = [x[:, k] for k in range(x.shape[1])]
    top = columns[0]
    for column in columns[1:]:
        top = np.maximum(top, column)
    # the index counts the columns before the first maximum: bytes, not masked copies
    before = columns[0] != top
    index = before.view(np.uint8).copy()
    for column in columns[1:-1]:
        before &= column != top
        index += before.view(np.uint8)
    return index.astype(np.int64), top


def row_argmax(x: np.ndarray) -> np.ndarray:
    """``x.argmax(axis=1)`` (int64) for a few columns, by comparing whole columns."""
    return _column_argmax(x)[0]


def exclusive_marks(punct: np.ndarray) -> np.ndarray:
    """One mark or none per word: the argmax over [O, marks], O's probability being one
    minus the marks': the most probable mark where it beats O strictly (O, first, wins
    ties; a row holding NaN has a NaN O, argmax's pick)."""
    # a row sum of at most 8 columns adds them in order whatever the memory layout, as
    # the reference's row-major sum does (exclusive sets have at most 3 marks)
    p_o = 1.0 - punct.sum(axis=1)
    best, top = _column_argmax(punct)
    chosen = np.flatnonzero(top > p_o)
    marks = np.zeros(punct.shape, dtype=bool)
    marks[chosen, best[chosen]] = True
    return marks


def decide(pred: WordPredictions, seqs: Sequence[WordSeq], labels: Sequence[str],
           threshold: float | Sequence[float] = 0.5, exclusive: bool = False,
           combinations: Sequence[Sequence[str]] | None = None, constraints: bool = True,
           edges: Edges | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per-word decisions: marks (N, P) bool and cap indices (N,) into CAP_LABELS.

    ``exclusive``: argmax over O and the marks; otherwise each mark at or above its
    threshold (one value, or one per mark), or, with ``combinations`` (the sets of marks
    a word may get), the best of those sets (``punct.engine.combinations``).
    ``constraints``: each document (sequence) gets the best labelling that obeys the
    rules of ``punct.engine.doc_rules`` (``punct.engine.constraints``; ``edges``: where
    the sequences are blocks of longer documents; None: whole utterances, each ending a
    document unless ``WordSeq.ends_document`` is false)."""
    thr = np.asarray(threshold, dtype=np.float64)
    allowed = None
    if exclusive:
        marks = exclusive_marks(pred.punct)
    else:
        if thr.ndim and thr.shape != (pred.punct.shape[1],):
            raise ValueError(f"{thr.shape[0]} thresholds for {pred.punct.shape[1]} marks")
        if combinations is not None:
            allowed = combination_matrix(combinations, labels)
            marks = constrained_marks(pred.punct, thr, allowed)
        else:
            marks = pred.punct >= thr
    caps = None if pred.cap is None else row_argmax(pred.cap)
    through = (passthrough_by_form(pred.word_forms, len(marks))
               if constraints or caps is None else None)
    if constraints:
        edges = edges if edges is not None else data_dir_edges(seqs)
        marks, caps = constrain(marks, caps, pred.punct, pred.cap, seqs, labels, thr,
                                exclusive, allowed, edges, through)
    return marks, rule_caps(marks, seqs, labels, through) if caps is None else caps


def keep_best_mark(marks: np.ndarray, punct: np.ndarray) -> np.ndarray:
    """Decisions restricted to one mark per word: the most probable of the chosen ones
    (the decision rule of a single-label token classifier)."""
    best = np.where(marks, punct, -np.inf).argmax(axis=1)
    out = np.zeros_like(marks, dtype=bool)
    chosen = marks.any(axis=1)
    out[np.flatnonzero(chosen), best[chosen]] = True
    return out


def rule_caps(marks: np.ndarray, seqs: Sequence[WordSeq], labels: Sequence[str],
              through: np.ndarray | None = None) -> np.ndarray:
    """FIRST_CAP at utterance start and after a sentence-final mark, else O; pass-through
    words (``punct.engine.symbols``, written as they came; ``through``: their flags for
    all N words where known) leave the capital to the next."""
    final = np.array([lab in SENTENCE_FINAL for lab in labels], dtype=bool)
    n = marks.shape[0]
    caps = np.zeros(n, dtype=np.int64)
    lens = np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs))
    offsets = np.fromiter((s.offset for s in seqs), dtype=np.int64, count=len(seqs))
    starts = np.zeros(len(seqs) + 1, dtype=np.int64)
    np.cumsum(lens, out=starts[1:])
    ends = np.zeros(n, dtype=bool)  # a sentence end on each word: whole columns
    for k in np.flatnonzero(final).tolist():
        ends |= marks[:, k]
    in_order = bool(starts[-1] == n and np.array_equal(offsets, starts[:-1]))
    if in_order and through is None:
        through = passthrough_flags(list(chain.from_iterable(s.words for s in seqs)))
    if in_order and not through.any():
        # the usual run: every word once, in order, none passed through
        first = np.empty(n, dtype=bool)
        first[1:] = ends[:-1]
        first[starts[:-1][lens > 0]] = True
        caps[first] = CAP_LABELS.index("FIRST_CAP")
        return caps
    # the global index of every utterance word, utterance after utterance
    where = np.repeat(offsets - starts[:-1], lens) + np.arange(starts[-1])
    seq_of = np.full(n, -1, dtype=np.int64)
    seq_of[where] = np.repeat(np.arange(len(seqs)), lens)
    if through is None:
        through = np.zeros(n, dtype=bool)
        through[where] = passthrough_flags(list(chain.from_iterable(s.words for s in seqs)))
    keep = np.flatnonzero((seq_of >= 0) & ~through)  # the words the rule cases, in order
    sid = seq_of[keep]
    first = np.ones(len(keep), dtype=bool)
    first[1:] = (sid[1:] != sid[:-1]) | ends[keep[:-1]]
    caps[keep[first]] = CAP_LABELS.index("FIRST_CAP")
    return caps


def ordered_marks(flags: np.ndarray, labels: Sequence[str]) -> tuple[str, ...]:
    """Predicted marks of one word in reading order: opening marks first."""
    chosen = [lab for lab, on in zip(labels, flags, strict=True) if on]
    return tuple([lab for lab in chosen if lab in OPENING_LABELS]
                 + [lab for lab in chosen if lab not in OPENING_LABELS])


class MarkSets:
    """``ordered_marks`` of many words, computed once per distinct set of marks (a set is
    a number: bit k for mark k; words share few sets)."""

    def __init__(self, labels: Sequence[str]):
        if len(labels) > 62:
            raise ValueError(f"{len(labels)} marks do not fit in one int64 per set")
        self.labels = tuple(labels)
        self.bits = 1 << np.arange(len(labels), dtype=np.int64)
        self.known: dict[int, tuple[str, ...]] = {}

    def of_rows(self, marks: np.ndarray) -> list[tuple[str, ...]]:
        """The marks in reading order of each row of ``marks`` (N, P) bool."""
        codes = (marks.astype(np.int64) @ self.bits).tolist()
        for code in set(codes).difference(self.known):
            flags = [code >> k & 1 == 1 for k in range(len(self.labels))]
            self.known[code] = ordered_marks(flags, self.labels)
        return list(map(self.known.__getitem__, codes))


def hypothesis_rows(utts: Mapping[str, Sequence[WordRow]], seqs: Sequence[WordSeq],
                    marks: np.ndarray, caps: np.ndarray, labels: Sequence[str]
                    ) -> dict[str, list[WordRow]]:
    """Hypothesis word table: the reference rows with predicted punct/cap and form."""
    out: dict[str, list[WordRow]] = {}
    chosen = MarkSets(labels).of_rows(marks)
    cap_names = [CAP_LABELS[c] for c in caps.tolist()]
    for seq in seqs:
        rows = utts[seq.utt_id]
        hyp = []
        for g, row in enumerate(rows, seq.offset):
            cap = cap_names[g]
            hyp.append(WordRow(row.utt_id, row.idx, row.word, apply_cap(row.word, cap),
                               chosen[g], cap, row.start, row.end, row.pause_after))
        out[seq.utt_id] = hyp
    return out


def decode_info(pred: WordPredictions, n_words: int, n_utts: int, device: torch.device,
                batch_size: int, window: int, stride: int, bf16: bool, aggregate: str,
                threshold: float | Sequence[float], exclusive: bool = False
                ) -> dict[str, Any]:
    """The throughput record written next to a hypothesis table."""
    return {
        "words": n_words,
        "utterances": n_utts,
        "windows": pred.n_windows,
        "seconds": round(pred.seconds, 4),
        "words_per_s": round(n_words / pred.seconds, 1) if pred.seconds > 0 else None,
        "device": str(device),
        "threads": torch.get_num_threads(),
        "batch_size": batch_size,
        "window": window,
        "stride": stride,
        "predictions_per_word": round(float(pred.counts.mean()), 3) if n_words else 0.0,
        "bf16": bf16,
        "aggregate": aggregate,
        "decision": "argmax" if exclusive else "threshold",
        "threshold": None if exclusive else (
            threshold if isinstance(threshold, float) else [float(t) for t in threshold]),
        "cap_modelled": pred.cap is not None,
    }


THRESHOLDS_FILE = "thresholds.json"


def read_thresholds(exp_dir: str | Path, label_set: str | None = None
                    ) -> dict[str, float] | None:
    """Per-mark thresholds tuned on dev (``thresholds.json`` of the experiment:
    ``{"label_set": ..., "thresholds": {mark: t}}`` as the trainer writes it, or a bare
    ``{mark: t}``); None when absent. ``label_set``: the model's, checked when given."""
    path = Path(exp_dir) / THRESHOLDS_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise PunctInputError(f"bad JSON: {err.msg}", path, err.lineno) from None
    table = data.get("thresholds", data) if isinstance(data, dict) else None
    if not isinstance(table, dict) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in table.values()):
        raise PunctInputError("expected a mapping mark -> threshold", path)
    saved = data.get("label_set") if "thresholds" in data else None
    if label_set is not None and saved is not None and saved != label_set:
        raise PunctInputError(f"thresholds for label set {saved!r}, the model uses "
                              f"{label_set!r}", path)
    return {str(k): float(v) for k, v in table.items()}


@dataclass
class Experiment:
    """A trained system loaded from its experiment directory."""

    config: Config
    featurizer: Featurizer
    model: PunctModel
    exp_dir: Path


def load_experiment(exp_dir: str | Path, checkpoint: str = "best",
                    device: torch.device | str = "cpu") -> Experiment:
    """Rebuild config, featurizer and model of ``exp_dir`` and load ``<checkpoint>.pt``."""

    exp_dir = Path(exp_dir)
    config = load_config(exp_dir / "config.yaml")
    family = Registry.get(config.family)
    ckpt_path = exp_dir / f"{checkpoint}.pt"
    if not ckpt_path.is_file():
        raise MissingDataError(f"no checkpoint {ckpt_path.name} in {exp_dir} (train first)",
                               ckpt_path)
    state = load_checkpoint(ckpt_path)
    featurizer = family.load_featurizer(exp_dir / "featurizer", config)
    with weights_from_checkpoint():  # the checkpoint holds every weight
        model = family.make_model(config, featurizer)
    model.load_state_dict(state["model"])
    tuned = read_thresholds(exp_dir, config.label_set)
    if tuned is not None:
        config = config.replace(decode=dataclasses.replace(config.decode, thresholds=tuned))
    model.to(torch.device(device))
    model.eval()
    return Experiment(config, featurizer, model, exp_dir)


@dataclass
class DecodeSettings:
    """Everything that controls a decoding run besides the model and the input."""

    window: int
    stride: int
    batch_size: int
    aggregate: str
    bf16: bool
    threshold: float | tuple[float, ...]
    exclusive: bool = False
    combinations: tuple[tuple[str, ...], ...] | None = None  # None: any set of marks
    constraints: bool = True  # document rules (``punct.engine.constraints``)

    @property
    def per_token(self) -> float:
        """Nominal predictions per token (``window / stride``)."""
        return self.window / self.stride


def token_batch_size(batch_size: int, min_tokens: int | None, window: int) -> int:
    """Windows per decoding batch: ``batch_size``, and at least ``min_tokens // window``
    (None: no minimum)."""
    return max(batch_size, min_tokens // window) if min_tokens else batch_size


def _min_batch_tokens(config: Config, device: torch.device | str) -> int | None:
    """``decode.gpu_batch_tokens`` on CUDA, except for windows that carry acoustic frames
    (a family or featurizer reading streams): those grow with the audio, not the tokens,
    and keep ``decode.batch_size`` on a GPU too. None elsewhere."""
    if torch.device(device).type != "cuda":
        return None
    if config.streams or Registry.get(config.family).needs_streams:
        return None
    return config.decode.gpu_batch_tokens


def decode_settings(config: Config, device: torch.device | str = "cpu", *,
                    window: int | None = None, stride: int | None = None,
                    per_token: int | None = None, batch_size: int | None = None,
                    aggregate: str | None = None, bf16: bool | str | None = None,
                    threshold: float | None = None, constraints: bool | None = None
                    ) -> DecodeSettings:
    """The config's ``decode`` section with explicit overrides (None = keep the config's).

    ``per_token`` N sets ``stride = window // N`` (``punct.data.windows.stride_for``) and
    cannot be combined with ``stride``; bf16 ``auto`` is resolved for ``device``; the
    batch is at least ``decode.gpu_batch_tokens`` on CUDA, except for windows with
    acoustic frames (``token_batch_size``).
    """

    dec = config.decode
    cfg_window, cfg_stride = config.decode_window()
    window = window or cfg_window
    if per_token is not None and stride is not None:
        raise PunctInputError("give either a stride or predictions per token, not both")
    if per_token is not None:
        stride = stride_for(window, per_token)
    stride = stride or min(cfg_stride, window)
    if not 1 <= stride <= window:
        raise PunctInputError(f"need 1 <= stride <= window, got window {window} stride {stride}")
    size = batch_size or token_batch_size(dec.batch_size, _min_batch_tokens(config, device),
                                          window)
    if size < 1:
        raise PunctInputError(f"batch size must be >= 1, got {size}")
    mode = aggregate or dec.aggregate
    if mode not in ("mean", "sum"):
        raise PunctInputError(f"unknown aggregation {mode!r} (known: mean, sum)")
    use_bf16 = resolve_bf16(dec.bf16 if bf16 is None else bf16, device)
    label_set = get_label_set(config.label_set)
    thr: float | tuple[float, ...] = dec.threshold
    if threshold is not None:
        thr = float(threshold)
    elif dec.thresholds:
        tuned = dec.thresholds
        thr = tuple(float(tuned.get(lab, thr)) for lab in label_set.labels)
    # "seen" is resolved into the list by the trainer; a config that has not been
    # through training has no training sets to restrict to, and decodes as "all"
    combos = dec.combinations
    allowed = (tuple(tuple(c) for c in combos)
               if isinstance(combos, list) and not label_set.exclusive else None)
    rules = dec.constraints if constraints is None else constraints
    return DecodeSettings(int(window), int(stride), size, mode, use_bf16, thr,
                          label_set.exclusive, allowed, rules)
