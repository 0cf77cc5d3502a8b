"""The training loop shared by every model family.

``train_experiment(config, train_dir, dev_dir, exp_dir)`` (a ``soup:`` config is built by
``punct.train.soup`` instead of trained): seeds everything from
``train.seed``, fits the family's featurizer on the training set only (or reuses the
featurizer of ``init_from``), trains with the configured optimizer (linear warm-up in
steps, restarted when a frozen encoder starts training, then ``lr_decay`` none, linear
or cosine to 0; gradient clipping) under ``train.precision`` (bf16/fp16 autocast, fp16
with a gradient scaler, chosen by ``auto`` from the hardware), evaluates on the dev set
after every epoch with the shared decoder and the decode settings of stage 6 (window,
stride, aggregation, bf16) and the scorer's micro-F1 over non-O marks, keeps the best
checkpoint and stops early after ``patience`` epochs without improvement (on dev
``micro_f1`` or dev ``loss``), never before ``min_epochs``. For a multi-label label set
the per-mark decision thresholds are then tuned on dev (``thresholds.json``).

Data parallel (``dist``, see ``punct.train.distributed``): each rank trains on its share
of every global batch and gradients are averaged, so W processes take the same steps as
one; rank 0 evaluates, logs and writes the experiment directory.

Faults (see ``punct.train.checkpoint``): ``last.pt`` is written atomically after every
epoch and, on SIGTERM/SIGUSR1, after the current step (then ``TrainingPreempted``).
It holds everything a run needs to continue exactly: model, optimizer, scheduler, the
random generators of every rank, epoch, step within the epoch, history, best score and
patience counter. ``resume=True`` continues from it (or from ``last.prev.pt`` when it is
damaged) and reaches the same weights as an uninterrupted run.

Experiment directory: ``config.yaml`` (resolved), ``env.json``, ``featurizer/``,
``thresholds.json`` (multi-label sets), ``best.pt``, ``last.pt`` and ``last.prev.pt``
(each with a ``.sha256``), ``train.log`` (one line per epoch), ``history.json``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import torch
from tqdm import tqdm

from punct.config import Config, load_config, save_config
from punct.data.augment import Augmenter, TrainingAugmenter, word_counts
from punct.data.confusable import load_neighbours
from punct.data.sequences import cut_seq, load_data_dir, rows_to_seq
from punct.data.windows import batched
from punct.engine.combinations import seen_combinations
from punct.engine.precision import autocast_dtype, resolve_precision
from punct.engine.transfer import batch_to_device
from punct.errors import MissingDataError, PunctInputError
from punct.labels import LabelSet, get_label_set
from punct.models.base import Registry, Window
from punct.models.checkpoint import load_checkpoint
from punct.train.batching import device_batch, prefetch_depth, prefetched
from punct.train.byte_dropout import apply_dropout_masks
from punct.train.checkpoint import (
    BEST,
    PreemptionGuard,
    TrainingPreempted,
    clear_checkpoints,
    load_resumable,
    save_atomic,
    save_resumable,
)
from punct.train.compiled import loss_function
from punct.train.dev_eval import evaluate, tune_dev_thresholds
from punct.train.distributed import Dist, StepReduction, loss_weight, shard
from punct.train.env import collect_env
from punct.train.optim import build_optimizer, lr_factor
from punct.train.seed import capture_rng_state, restore_rng_state, seed_everything
from punct.train.soup import build_soup, check_soup
from punct.wordtable import WordRow, read_word_table

CHECKPOINT_FORMAT = 2
PROGRESS_SECONDS = 300.0
"""Without a progress bar (no tty), ``train.log`` gets a progress line this often."""


class Logger:
    """Messages to stderr (when not quiet) and to ``train.log`` (when a path is given)."""

    def __init__(self, path: Path | None, quiet: bool = False):
        self.file: TextIO | None = open(path, "a", encoding="utf-8") if path else None
        self.quiet = quiet

    def __call__(self, message: str) -> None:
        if self.file is not None:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S")
            self.file.write(f"{stamp} {message}\n")
            self.file.flush()
        if not self.quiet:
            tqdm.write(message, file=sys.stderr)

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


def _prepare_init(config: Config) -> tuple[Config | None, Path | None]:
    """Resolved config and directory of the ``init_from`` experiment (None without one)."""
    init = config.init_from
    if not init:
        return None, None
    init_dir = Path(init)
    if not (init_dir / "best.pt").is_file():
        raise MissingDataError(f"init_from: no best.pt in {init_dir} (train that system first)",
                               init_dir)
    init_cfg = load_config(init_dir / "config.yaml")
    if init_cfg.family != config.family:
        raise PunctInputError(f"init_from {init_dir} is a {init_cfg.family} model, "
                              f"this config trains {config.family}", config.source)
    if init_cfg.label_set != config.label_set:
        raise PunctInputError(f"init_from {init_dir} uses label set {init_cfg.label_set}, "
                              f"this config {config.label_set}", config.source)
    return init_cfg.replace(init_config=None), init_dir


def _check_resume_config(config: Config, exp_dir: Path) -> None:
    """``--resume`` must continue the same experiment: same resolved config."""
    path = exp_dir / "config.yaml"
    if not path.is_file():
        raise MissingDataError(f"nothing to resume: no config.yaml in {exp_dir} "
                               "(run without --resume to train from scratch)", exp_dir)
    # keys added since the experiment was written count at their defaults
    saved, current = load_config(path).to_dict(), config.to_dict()
    if saved != current:
        keys = sorted(k for k in set(saved) | set(current) if saved.get(k) != current.get(k))
        raise PunctInputError(f"--resume: the config differs from the experiment's in {keys}; "
                              "rerun without --resume to start over", path)


def _resolve_combinations(config: Config, train_dir: Path) -> Config:
    """``decode.combinations: seen`` becomes the list of the sets of marks on one training
    word (multi-label sets; an exclusive set decodes by argmax and keeps the setting)."""
    if config.decode.combinations != "seen":
        return config
    label_set = get_label_set(config.label_set)
    if label_set.exclusive:
        return config.replace(decode=dataclasses.replace(config.decode, combinations="all"))
    table = train_dir / "words.tsv"
    if not table.is_file():
        raise MissingDataError(f"no word table in {train_dir} (run stage 1 first)", table)
    targets = (rows_to_seq(rows, label_set).punct for rows in read_word_table(table).values())
    seen = [list(marks) for marks in seen_combinations(targets, label_set.labels)]
    return config.replace(decode=dataclasses.replace(config.decode, combinations=seen))


def train_experiment(config: Config, train_dir: str | Path, dev_dir: str | Path,
                     exp_dir: str | Path, threads: int | None = None, quiet: bool = False,
                     progress: bool | None = None, resume: bool = False,
                     dist: Dist | None = None) -> dict[str, Any]:
    """Train one system; return the summary (also the last entry of history.json).

    ``dist``: this process's rank in a data-parallel job (default: one CPU process); the
    model runs on ``dist.device``. Raises ``TrainingPreempted`` after writing ``last.pt``
    when SIGTERM or SIGUSR1 arrives.
    """
    t0 = time.perf_counter()
    dist = dist or Dist()
    exp_dir = Path(exp_dir)
    exp_dir.mkdir(parents=True, exist_ok=True)
    if progress is None:
        progress = not quiet and sys.stderr.isatty()
    config = _resolve_combinations(config, Path(train_dir))
    if config.soup:  # built from trained systems, not trained
        return _build_soup(config, Path(dev_dir), exp_dir, threads, quiet, dist)
    init_cfg, init_dir = _prepare_init(config)
    if init_cfg is not None:
        config = config.replace(init_config=init_cfg)
    if resume:
        _check_resume_config(config, exp_dir)
    elif dist.is_main:
        _start_experiment_dir(config, exp_dir, threads)
    dist.barrier()
    log = Logger(exp_dir / "train.log" if dist.is_main else None, quiet or not dist.is_main)
    try:
        with PreemptionGuard() as guard:
            run = _Run(config, Path(train_dir), Path(dev_dir), exp_dir, init_dir, log,
                       progress and dist.is_main, dist, guard)
            return run.train(resume, t0)
    finally:
        log.close()


def _start_experiment_dir(config: Config, exp_dir: Path, threads: int | None) -> None:
    """A fresh experiment directory: ``config.yaml``, ``env.json``, no earlier log, history,
    thresholds or checkpoints."""
    save_config(config, exp_dir / "config.yaml")
    (exp_dir / "env.json").write_text(
        json.dumps(collect_env(config.train.seed, threads), indent=2) + "\n", encoding="utf-8")
    for stale in ("train.log", "history.json", "thresholds.json"):
        (exp_dir / stale).unlink(missing_ok=True)
    clear_checkpoints(exp_dir)


def _build_soup(config: Config, dev_dir: Path, exp_dir: Path, threads: int | None,
                quiet: bool, dist: Dist) -> dict[str, Any]:
    """A ``soup:`` system (``punct.train.soup``), built by rank 0 while the others wait
    (every rank checks the systems first, so that a bad soup stops them all at once)."""
    dirs = check_soup(config)
    summary: dict[str, Any] = {"rank": dist.rank}
    if dist.is_main:
        _start_experiment_dir(config, exp_dir, threads)
        log = Logger(exp_dir / "train.log", quiet)
        try:
            summary = build_soup(config, dirs, dev_dir, exp_dir, dist.device, log)
        finally:
            log.close()
    dist.barrier()
    return summary


@dataclass
class _Progress:
    """Where training stands; everything in it goes into ``last.pt``."""

    epoch: int = 1  # the epoch in progress, or the last one finished when ``epoch_done``
    step: int = 0  # steps done within ``epoch``
    epoch_done: bool = False
    finished: bool = False
    shuffle_state: dict[str, Any] = field(default_factory=dict)  # for the next permutation
    loss_sum: float = 0.0  # sum of batch loss x windows within ``epoch``
    seen: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)
    best: dict[str, Any] | None = None
    bad_epochs: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in self.__dataclass_fields__}


class _Run:
    """One training run: the model, its data and optimizer, and the loop over epochs."""

    def __init__(self, config: Config, train_dir: Path, dev_dir: Path, exp_dir: Path,
                 init_dir: Path | None, log: Logger, progress: bool, dist: Dist,
                 guard: PreemptionGuard):
        self.config, self.tcfg = config, config.train
        self.exp_dir, self.log, self.progress = exp_dir, log, progress
        self.dist, self.device, self.guard = dist, dist.device, guard
        self.seed = self.tcfg.seed
        self.rng = seed_everything(self.seed)
        family = Registry.get(config.family)
        label_set = get_label_set(config.label_set)
        streams = config.streams
        train_utts, self.train_seqs = load_data_dir(train_dir, label_set, streams)
        self.dev_utts, self.dev_seqs = load_data_dir(dev_dir, label_set, streams)
        if init_dir is not None:
            featurizer = family.load_featurizer(init_dir / "featurizer", config)
        else:
            featurizer = family.make_featurizer(config)
            featurizer.fit(self.train_seqs)
        if dist.is_main:
            featurizer.save(exp_dir / "featurizer")
        self.featurizer = featurizer
        model = family.make_model(config, featurizer)
        if init_dir is not None:
            state = load_checkpoint(init_dir / BEST)["model"]
            if hasattr(model, "load_init"):
                model.load_init(state)
            else:
                model.load_state_dict(state, strict=False)
        self.dropout_masks = apply_dropout_masks(model, self.tcfg, self.device)
        cache_eval = getattr(model, "cache_eval_states", None)
        if callable(cache_eval):  # dev passes reuse a frozen encoder's states
            cache_eval()
        self.model = model.to(self.device)
        dist.broadcast_module(self.model)
        if dist.world_size > 1:  # independent dropout masks on each rank
            torch.manual_seed(self.seed + 7919 * (dist.rank + 1))
        self.loss_function = loss_function(self.model, self.tcfg.compile)
        if self.tcfg.compile != "off":
            self.log(f"train.compile: {self.tcfg.compile} (torch.compile of the training "
                     "loss; the first steps compile it)")
        self.optimizer = build_optimizer(self.model, self.tcfg.optimizer)
        window, stride = self.tcfg.window, self.tcfg.stride
        self.window, self.stride = window, stride
        self.first_windows = featurizer.windows(self.train_seqs, window, stride)
        self.train_windows = self.first_windows
        if self.tcfg.shift_windows and any(s.feats for s in self.train_seqs):
            raise PunctInputError("train.shift_windows cuts utterances at words: it needs "
                                  "text-only training data (this family reads acoustic "
                                  "streams)", train_dir / "words.tsv")
        self.augmenter = self._make_augmenter(train_utts, label_set, train_dir)
        self.dev_loss_windows = featurizer.windows(self.dev_seqs, window, window)
        if not self.train_windows:
            raise PunctInputError("the training set gives no windows", train_dir / "words.tsv")
        self.batch_size, lr_scale = device_batch(self.tcfg.batch_size,
                                                 self.tcfg.gpu_batch_size,
                                                 self.device.type)
        if lr_scale != 1.0:
            for group in self.optimizer.param_groups:
                group["lr"] *= lr_scale
            self.log(f"train.gpu_batch_size: batches of {self.batch_size} on "
                     f"{self.device.type}, learning rates x{lr_scale:g}")
        steps = math.ceil(len(self.train_windows) / self.batch_size)
        if self.tcfg.max_steps_per_epoch:
            steps = min(steps, self.tcfg.max_steps_per_epoch)
        self.steps_per_epoch = steps
        self.scheduler = self._make_scheduler(steps)
        self.precision = resolve_precision(self.tcfg.precision, self.device)
        self.autocast = autocast_dtype(self.precision)
        self.scaler = (torch.amp.GradScaler(self.device.type) if self.precision == "fp16"
                       else None)
        self.grad_clip = self.tcfg.grad_clip
        self.criterion = self.tcfg.early_stopping

    def _make_augmenter(self, utts: dict[str, list[WordRow]], label_set: LabelSet,
                        train_dir: Path) -> TrainingAugmenter | None:
        """``train.augment`` (None when off): the unigram counts of the training words and,
        for confusable substitutions, the neighbour table (built by rank 0 and cached in
        ``augment_neighbours.json`` of the experiment directory)."""
        options = self.tcfg.augment
        if not options.active:
            return None
        if any(s.feats for s in self.train_seqs):
            raise PunctInputError("train.augment edits the training words: it needs "
                                  "text-only training data (this family reads acoustic "
                                  "streams)", train_dir / "words.tsv")
        counts = word_counts(utts.values())
        neighbours = None
        if options.sub_source == "confusable":
            cache = self.exp_dir / "augment_neighbours.json"
            if self.dist.is_main:
                load_neighbours(cache, counts, options.max_phone_distance)
            self.dist.barrier()
            neighbours = load_neighbours(cache, counts, options.max_phone_distance)
            covered = sum(counts[w] for w, near in neighbours.items() if near)
            self.log(f"augment: {sum(1 for near in neighbours.values() if near)} of "
                     f"{len(counts)} training word types ({covered / sum(counts.values()):.1%} "
                     f"of the words) have confusable neighbours within "
                     f"{options.max_phone_distance} phone(s); the others get frequent words")
        return TrainingAugmenter(Augmenter(options, counts, neighbours), utts,
                                 self.train_seqs, label_set, self.seed)

    def _make_scheduler(self, steps: int) -> torch.optim.lr_scheduler.LambdaLR:
        """Warm-up (``warmup_steps``, else ``warmup_epochs`` x steps), restarted when the
        model's encoder starts training after ``freeze_epochs``, and ``lr_decay``."""
        warmup = self.tcfg.warmup_steps
        if warmup is None:
            warmup = round(self.tcfg.warmup_epochs * steps)
        total = steps * self.tcfg.epochs
        restart = int(getattr(self.model, "freeze_epochs", 0) or 0) * steps
        decay = self.tcfg.lr_decay
        return torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda step: lr_factor(step, total, int(warmup), decay, restart))

    # -- checkpoints -----------------------------------------------------------------
    def _trained_params(self) -> list[torch.nn.Parameter]:
        return [p for group in self.optimizer.param_groups for p in group["params"]
                if p.requires_grad]

    def _save(self, state: _Progress) -> None:
        """Write ``last.pt`` (rank 0) with the random generators of every rank."""
        rng = self.dist.gather_object(capture_rng_state())
        if self.dist.is_main:
            save_resumable({
                "format": CHECKPOINT_FORMAT, "model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(), "rng": rng,
                "scaler": self.scaler.state_dict() if self.scaler is not None else None,
                "world_size": self.dist.world_size, **state.to_dict(),
            }, self.exp_dir)

    def _restore(self) -> _Progress:
        """Load the newest good checkpoint; returns where to continue."""
        ckpt, path = load_resumable(self.exp_dir, self.log if self.dist.is_main else None)
        if ckpt.get("format") != CHECKPOINT_FORMAT:
            raise PunctInputError(f"not a resumable checkpoint of this trainer "
                                  f"(format {ckpt.get('format')!r})", path)
        state = _Progress(**{key: ckpt[key] for key in _Progress.__dataclass_fields__})
        self.model.load_state_dict(ckpt["model"])
        hook = getattr(self.model, "on_epoch_start", None)
        if callable(hook):  # replay the hooks of the epochs begun so far (e.g. unfreezing)
            for epoch in range(1, state.epoch + 1):
                hook(epoch)
        self.optimizer.load_state_dict(ckpt["optimizer"])
        self.scheduler.load_state_dict(ckpt["scheduler"])
        if self.scaler is not None and ckpt.get("scaler"):
            self.scaler.load_state_dict(ckpt["scaler"])
        rng = ckpt["rng"]
        if len(rng) == self.dist.world_size:
            restore_rng_state(rng[self.dist.rank])
        else:
            self.log(f"warning: {path} was written by {len(rng)} processes, this run has "
                     f"{self.dist.world_size}; random streams (dropout) will differ")
            restore_rng_state(rng[0])
            if self.dist.world_size > 1:
                torch.manual_seed(self.seed + 7919 * (self.dist.rank + 1))
        self.rng.bit_generator.state = state.shuffle_state
        where = ("end" if state.epoch_done
                 else f"step {state.step}/{self.steps_per_epoch}")
        self.log(f"resuming from {path}: epoch {state.epoch} {where}")
        return state

    # -- one step --------------------------------------------------------------------
    def _batch(self, chunk: list[int]) -> dict[str, torch.Tensor] | None:
        """This process' share of a step's windows, collated on the device (None: none)."""
        mine = shard(chunk, self.dist.rank, self.dist.world_size)
        if not mine:
            return None
        return batch_to_device(self.featurizer.collate([self.train_windows[i] for i in mine]),
                               self.device)

    def _step(self, batch: dict[str, torch.Tensor] | None, epoch: int) -> StepReduction:
        self.optimizer.zero_grad(set_to_none=True)
        loss_value, weight, nonfinite = 0.0, 0.0, False
        if batch is not None:
            with torch.autocast(self.device.type, dtype=self.autocast or torch.float32,
                                enabled=self.autocast is not None):
                loss = self.loss_function(batch)
            nonfinite = not bool(torch.isfinite(loss))
            loss_value = float(loss.detach())
            if not nonfinite:
                (self.scaler.scale(loss) if self.scaler is not None else loss).backward()
                if self.dist.distributed:
                    weight = loss_weight(self.model, batch)
        params = self._trained_params()
        reduced = self.dist.reduce_step(params, weight, loss_value, self.guard.requested,
                                        nonfinite)
        if reduced.nonfinite:
            raise FloatingPointError(f"non-finite training loss {loss_value} in epoch {epoch}")
        if self.scaler is not None:
            self.scaler.unscale_(self.optimizer)
        if self.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_([p for p in params if p.grad is not None],
                                           self.grad_clip)
        if self.scaler is not None:  # skips the step when fp16 gradients overflowed
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        self.scheduler.step()
        return reduced

    def _preempted(self, state: _Progress) -> TrainingPreempted:
        where = (f"after epoch {state.epoch}" if state.epoch_done
                 else f"in epoch {state.epoch} after step {state.step}/{self.steps_per_epoch}")
        sig = self.guard.received.name if self.guard.received else "a signal to another rank"
        message = (f"preempted by {sig} {where}: wrote {self.exp_dir / 'last.pt'}; "
                   "rerun with --resume to continue")
        self.log(message)
        return TrainingPreempted(message, self.exp_dir / "last.pt")

    # -- the loop --------------------------------------------------------------------
    def train(self, resume: bool, t0: float) -> dict[str, Any]:
        n_params = sum(p.numel() for p in self._trained_params())
        group = f" (process group {self.dist.backend})" if self.dist.backend else ""
        self.log(f"train {self.config.family} on {sum(len(s) for s in self.train_seqs)} "
                 f"words ({len(self.train_seqs)} utts, {len(self.train_windows)} windows), dev "
                 f"{sum(len(s) for s in self.dev_seqs)} words; {n_params} trainable "
                 f"parameters; seed {self.seed}; threads {torch.get_num_threads()}; "
                 f"{self.dist.world_size} process(es) on {self.device}{group}; precision "
                 f"{self.precision} (train.precision: {self.tcfg.precision}); "
                 f"dropout masks {self.dropout_masks}")  # punct.bin.stage_times reads it
        state = self._restore() if resume else _Progress()
        hook = getattr(self.model, "on_epoch_start", None)
        epoch = state.epoch + 1 if state.epoch_done else state.epoch
        mid_epoch = resume and not state.epoch_done
        while not state.finished and epoch <= self.tcfg.epochs:
            if not mid_epoch:
                if callable(hook):  # e.g. unfreeze the encoder after k epochs
                    hook(epoch)
                state.epoch, state.step, state.epoch_done = epoch, 0, False
                state.loss_sum, state.seen = 0.0, 0
            mid_epoch = False
            self._train_epoch(state)
            epoch += 1
        self.dist.barrier()
        if not self.dist.is_main:  # history and best model live on rank 0
            return {"rank": self.dist.rank, "epochs_run": state.epoch}
        assert state.best is not None
        best, history = state.best, state.history
        self._tune_thresholds()
        summary = {"best_epoch": best["epoch"], "epochs_run": len(history),
                   "dev_micro_f1": best["dev_micro_f1"], "dev_loss": best["dev_loss"],
                   "precision": self.precision,
                   "seconds": round(time.perf_counter() - t0, 2),
                   "checkpoint": str(self.exp_dir / BEST)}
        self.log(f"done: {self.config.family} best epoch {best['epoch']}/{len(history)} "
                 f"dev micro-F1 {best['dev_micro_f1']:.4f} dev loss {best['dev_loss']:.4f} in "
                 f"{summary['seconds']:.1f}s -> {self.exp_dir / BEST}")
        return summary

    def _tune_thresholds(self) -> None:
        """Rank 0, multi-label sets: per-mark thresholds of the best model on dev."""
        if get_label_set(self.config.label_set).exclusive or not self.tcfg.tune_thresholds:
            return
        self.model.load_state_dict(load_checkpoint(self.exp_dir / BEST)["model"])
        tune_dev_thresholds(self.model, self.featurizer, self.config, self.dev_seqs,
                            self.exp_dir, self.device, self.log)

    def _epoch_windows(self, epoch: int) -> list[Window]:
        """The training windows of ``epoch``: those of the whole utterances in epoch 1 (and
        without ``train.shift_windows`` and ``train.augment``). With ``train.augment`` the
        utterances of each epoch are augmented afresh; with ``train.shift_windows`` each
        utterance is cut, from epoch 2 on, at a random word below ``train.stride``. Both
        are drawn from (seed, epoch), so a resumed run gets the same windows and every
        data-parallel rank the same global batches. The epoch keeps its number of steps: a
        shifted epoch has a few more windows (one more per cut utterance), and those
        beyond the steps are left out at random."""
        shift = epoch > 1 and self.tcfg.shift_windows
        if not shift and self.augmenter is None:
            return self.first_windows
        seqs = self.train_seqs
        if self.augmenter is not None:
            seqs, edits = self.augmenter.epoch(epoch)
            self.log(f"epoch {epoch} augmented: {edits.describe()}")
        if shift:
            rng = np.random.default_rng([self.seed, epoch])
            seqs = [part for seq in seqs
                    for part in cut_seq(seq, int(rng.integers(0, min(self.stride, len(seq)))))]
        return self.featurizer.windows(seqs, self.window, self.stride)

    def _train_epoch(self, state: _Progress) -> None:
        """Train ``state.epoch`` from ``state.step`` on, evaluate, checkpoint, decide."""
        e0 = time.perf_counter()
        epoch = state.epoch
        self.model.train()
        self.train_windows = self._epoch_windows(epoch)
        state.shuffle_state = self.rng.bit_generator.state  # this epoch's permutation
        order = self.rng.permutation(len(self.train_windows))
        order = order[: self.steps_per_epoch * self.batch_size].tolist()
        bar = tqdm(total=self.steps_per_epoch, initial=state.step, desc=f"epoch {epoch}",
                   unit="step", disable=not self.progress, leave=False)
        last_note = e0
        todo = [(index, chunk) for index, chunk in enumerate(batched(order, self.batch_size))
                if index >= state.step]  # the steps done before an interruption are skipped
        ahead = prefetch_depth(self.tcfg.prefetch_batches, self.device.type)
        for index, chunk, batch in prefetched(
                ((i, c, self._batch(c)) for i, c in todo), ahead):
            reduced = self._step(batch, epoch)
            state.loss_sum += reduced.loss * len(chunk)
            state.seen += len(chunk)
            state.step = index + 1
            bar.update(1)
            bar.set_postfix(loss=f"{state.loss_sum / state.seen:.4f}")
            if not self.progress and time.perf_counter() - last_note >= PROGRESS_SECONDS:
                last_note = time.perf_counter()  # a heartbeat in train.log without a tty
                self.log(f"epoch {epoch} step {state.step}/{self.steps_per_epoch} train_loss "
                         f"{state.loss_sum / state.seen:.4f} ({last_note - e0:.0f}s)")
            if reduced.preempt and state.step < self.steps_per_epoch:
                bar.close()
                self._save(state)
                self.dist.barrier()
                raise self._preempted(state)
        bar.close()
        stop = False
        if self.dist.is_main:
            stop = self._end_epoch(state, e0)
        stop, preempt = self.dist.any_flag(self.guard.requested, stop)
        state.epoch_done, state.finished = True, stop or epoch >= self.tcfg.epochs
        state.shuffle_state = self.rng.bit_generator.state  # the next epoch's permutation
        self._save(state)
        self.dist.barrier()
        if preempt and not state.finished:
            raise self._preempted(state)

    def _end_epoch(self, state: _Progress, e0: float) -> bool:
        """Rank 0: evaluate, log, keep the best model; True when training should stop."""
        dev = evaluate(self.model, self.featurizer, self.config, self.dev_utts, self.dev_seqs,
                       self.dev_loss_windows, self.device)
        record = {"epoch": state.epoch, "train_loss": state.loss_sum / max(state.seen, 1),
                  **dev, "lr": self.optimizer.param_groups[0]["lr"],
                  "seconds": round(time.perf_counter() - e0, 3)}
        # Ties on dev F1 (e.g. 0 while the model still predicts no mark) go to dev loss.
        score = ((dev["dev_micro_f1"], -float(dev["dev_loss"])) if self.criterion == "micro_f1"
                 else (-float(dev["dev_loss"]),))
        improved = state.best is None or score > tuple(state.best["score"])
        record["best"] = improved
        state.history.append(record)
        if improved:
            state.best = {"score": list(score), "epoch": state.epoch, **dev}
            save_atomic({"model": self.model.state_dict(), "epoch": state.epoch},
                        self.exp_dir / BEST)
            state.bad_epochs = 0
        else:
            state.bad_epochs += 1
        self.log(f"epoch {state.epoch} train_loss {record['train_loss']:.4f} "
                 f"dev_loss {dev['dev_loss']:.4f} dev_micro_f1 {dev['dev_micro_f1']:.4f} "
                 f"lr {record['lr']:.3g} time {record['seconds']:.1f}s"
                 + (" *" if improved else ""))
        (self.exp_dir / "history.json").write_text(json.dumps(state.history, indent=1) + "\n",
                                                   encoding="utf-8")
        if (state.bad_epochs >= self.tcfg.patience
                and state.epoch >= self.tcfg.min_epochs):
            self.log(f"early stopping after epoch {state.epoch}: no dev {self.criterion} "
                     f"improvement in {state.bad_epochs} epochs")
            return True
        return False
