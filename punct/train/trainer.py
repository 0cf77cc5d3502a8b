"""The training loop shared by every model family.

``train_experiment(config, train_dir, dev_dir, exp_dir)``: seeds everything from
``train.seed``, fits the family's featurizer on the training set only (or reuses the
featurizer of ``init_from``), trains with the configured optimizer (linear warm-up,
gradient clipping), evaluates on the dev set after every epoch with the shared decoder
and the scorer's micro-F1 over non-O marks, keeps the best checkpoint and stops early
after ``patience`` epochs without improvement (on dev ``micro_f1`` or dev ``loss``), never
before ``min_epochs``.

Experiment directory: ``config.yaml`` (resolved), ``env.json``, ``featurizer/``,
``best.pt``, ``last.pt`` (with optimizer state), ``train.log`` (one line per epoch),
``history.json``.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import torch
from tqdm import tqdm

import punct.models  # noqa: F401  (registers the families)
from punct.data.sequences import load_data_dir
from punct.errors import MissingDataError, PunctInputError
from punct.infer.decode import decide, hypothesis_rows, predict_words
from punct.infer.windows import batched
from punct.labels import get_label_set
from punct.models.base import Featurizer, PunctModel, Registry, Window
from punct.train.config import decode_window, load_config, save_config
from punct.train.env import collect_env
from punct.train.optim import build_optimizer, warmup_factor
from punct.train.seed import seed_everything

try:  # the project's scorer (same definitions as the test-set tables)
    from punct.score.metrics import score_tables
except ImportError:  # pragma: no cover - only in a partial checkout
    score_tables = None


def local_micro_f1(ref: np.ndarray, hyp: np.ndarray) -> float:
    """Micro F1 over all marks of multi-hot matrices (N, P) (O is not a class)."""
    ref, hyp = ref.astype(bool), hyp.astype(bool)
    tp = int((ref & hyp).sum())
    fp = int((~ref & hyp).sum())
    fn = int((ref & ~hyp).sum())
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


class Logger:
    """Messages to stderr (when not quiet) and to ``train.log``."""

    def __init__(self, path: Path, quiet: bool = False):
        self.file: TextIO = open(path, "a", encoding="utf-8")
        self.quiet = quiet

    def __call__(self, message: str) -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        self.file.write(f"{stamp} {message}\n")
        self.file.flush()
        if not self.quiet:
            tqdm.write(message, file=sys.stderr)

    def close(self) -> None:
        self.file.close()


def _mean_loss(model: PunctModel, featurizer: Featurizer, windows: list[Window],
               batch_size: int) -> float:
    """Mean loss over windows (weighted by batch size), without gradients."""
    if not windows:
        return float("nan")
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for chunk in batched(windows, batch_size):
            total += float(model.loss(featurizer.collate(chunk))) * len(chunk)
            count += len(chunk)
    model.train(was_training)
    return total / count


def evaluate(model: PunctModel, featurizer: Featurizer, config: dict[str, Any],
             dev_utts: dict[str, Any], dev_seqs: list[Any], dev_loss_windows: list[Window]
             ) -> dict[str, float | None]:
    """Dev loss and dev micro-F1 (decoded with the shared decoder and decode settings)."""
    labels = get_label_set(config["label_set"]).labels
    window, stride = decode_window(config)
    dec = config["decode"]
    pred = predict_words(model, featurizer, dev_seqs, window, stride,
                         batch_size=int(dec.get("batch_size") or 32),
                         aggregate=dec.get("aggregate", "mean"))
    marks, caps = decide(pred, dev_seqs, labels, float(dec.get("threshold", 0.5)))
    out: dict[str, float | None] = {
        "dev_loss": _mean_loss(model, featurizer, dev_loss_windows,
                               int(config["train"]["batch_size"]))
    }
    if score_tables is not None:
        hyp = hypothesis_rows(dev_utts, dev_seqs, marks, caps, labels)
        summary = score_tables(dev_utts, hyp, config["label_set"])["all"]
        out["dev_micro_f1"] = summary["micro_f1"]
        out["dev_cap_micro_f1"] = summary["cap_micro_f1"] if pred.cap is not None else None
    else:
        ref = np.concatenate([s.punct for s in dev_seqs], axis=0)
        out["dev_micro_f1"] = local_micro_f1(ref, marks)
        out["dev_cap_micro_f1"] = None
    return out


def _prepare_init(config: dict[str, Any]) -> tuple[dict[str, Any] | None, Path | None]:
    """Resolved config and directory of the ``init_from`` experiment (None without one)."""
    init = config.get("init_from")
    if not init:
        return None, None
    init_dir = Path(init)
    if not (init_dir / "best.pt").is_file():
        raise MissingDataError(f"init_from: no best.pt in {init_dir} (train that system first)",
                               init_dir)
    init_cfg = load_config(init_dir / "config.yaml")
    if init_cfg["family"] != config["family"]:
        raise PunctInputError(f"init_from {init_dir} is a {init_cfg['family']} model, "
                              f"this config trains {config['family']}")
    if init_cfg["label_set"] != config["label_set"]:
        raise PunctInputError(f"init_from {init_dir} uses label set {init_cfg['label_set']}, "
                              f"this config {config['label_set']}")
    init_cfg.pop("init_config", None)
    return init_cfg, init_dir


def train_experiment(config: dict[str, Any], train_dir: str | Path, dev_dir: str | Path,
                     exp_dir: str | Path, threads: int | None = None, quiet: bool = False,
                     progress: bool | None = None) -> dict[str, Any]:
    """Train one system; return the summary (also the last entry of history.json)."""
    t0 = time.perf_counter()
    exp_dir = Path(exp_dir)
    exp_dir.mkdir(parents=True, exist_ok=True)
    tcfg = config["train"]
    seed = int(tcfg["seed"])
    if progress is None:
        progress = not quiet and sys.stderr.isatty()
    init_cfg, init_dir = _prepare_init(config)
    if init_cfg is not None:
        config = dict(config, init_config=init_cfg)
    save_config(config, exp_dir / "config.yaml")
    (exp_dir / "env.json").write_text(
        json.dumps(collect_env(seed, threads), indent=2) + "\n", encoding="utf-8")
    for stale in ("train.log", "history.json", "best.pt", "last.pt"):
        (exp_dir / stale).unlink(missing_ok=True)
    log = Logger(exp_dir / "train.log", quiet)
    try:
        return _train(config, Path(train_dir), Path(dev_dir), exp_dir, seed, init_dir, log,
                      progress, t0)
    finally:
        log.close()


def _train(config: dict[str, Any], train_dir: Path, dev_dir: Path, exp_dir: Path, seed: int,
           init_dir: Path | None, log: Logger, progress: bool, t0: float) -> dict[str, Any]:
    tcfg = config["train"]
    rng = seed_everything(seed)
    family = Registry.get(config["family"])
    label_set = get_label_set(config["label_set"])
    streams = config["featurizer"].get("streams") or ()
    _, train_seqs = load_data_dir(train_dir, label_set, streams)
    dev_utts, dev_seqs = load_data_dir(dev_dir, label_set, streams)
    if init_dir is not None:
        featurizer = family.load_featurizer(init_dir / "featurizer", config)
    else:
        featurizer = family.make_featurizer(config)
        featurizer.fit(train_seqs)
    featurizer.save(exp_dir / "featurizer")
    model = family.make_model(config, featurizer)
    if init_dir is not None:
        state = torch.load(init_dir / "best.pt", map_location="cpu", weights_only=True)["model"]
        if hasattr(model, "load_init"):
            model.load_init(state)
        else:
            model.load_state_dict(state, strict=False)
    optimizer = build_optimizer(model, tcfg["optimizer"])
    params = [p for group in optimizer.param_groups for p in group["params"]]
    window, stride = int(tcfg["window"]), int(tcfg["stride"])
    train_windows = featurizer.windows(train_seqs, window, stride)
    dev_loss_windows = featurizer.windows(dev_seqs, window, window)
    if not train_windows:
        raise PunctInputError("the training set gives no windows", train_dir / "words.tsv")
    batch_size = int(tcfg["batch_size"])
    steps_per_epoch = math.ceil(len(train_windows) / batch_size)
    if tcfg.get("max_steps_per_epoch"):
        steps_per_epoch = min(steps_per_epoch, int(tcfg["max_steps_per_epoch"]))
    warmup_steps = round(float(tcfg.get("warmup_epochs") or 0) * steps_per_epoch)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: warmup_factor(step, warmup_steps))
    grad_clip = float(tcfg.get("grad_clip") or 0.0)
    criterion = tcfg["early_stopping"]
    n_params = sum(p.numel() for p in params if p.requires_grad)
    log(f"train {config['family']} on {sum(len(s) for s in train_seqs)} words "
        f"({len(train_seqs)} utts, {len(train_windows)} windows), dev "
        f"{sum(len(s) for s in dev_seqs)} words; {n_params} trainable parameters; "
        f"seed {seed}; threads {torch.get_num_threads()}")
    history: list[dict[str, Any]] = []
    best: dict[str, Any] | None = None
    bad_epochs = 0
    for epoch in range(1, int(tcfg["epochs"]) + 1):
        e0 = time.perf_counter()
        if hasattr(model, "on_epoch_start"):  # e.g. unfreeze the encoder after k epochs
            model.on_epoch_start(epoch)
        model.train()
        order = rng.permutation(len(train_windows))[: steps_per_epoch * batch_size]
        total, seen = 0.0, 0
        bar = tqdm(total=steps_per_epoch, desc=f"epoch {epoch}", unit="step",
                   disable=not progress, leave=False)
        for chunk in batched(order.tolist(), batch_size):
            batch = featurizer.collate([train_windows[i] for i in chunk])
            loss = model.loss(batch)
            if not torch.isfinite(loss):
                raise FloatingPointError(f"non-finite training loss {float(loss)} "
                                         f"in epoch {epoch}")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if grad_clip > 0:
                torch.nn.utils.clip_grad_norm_([p for p in params if p.grad is not None],
                                               grad_clip)
            optimizer.step()
            scheduler.step()
            total += loss.item() * len(chunk)
            seen += len(chunk)
            bar.update(1)
            bar.set_postfix(loss=f"{total / seen:.4f}")
        bar.close()
        dev = evaluate(model, featurizer, config, dev_utts, dev_seqs, dev_loss_windows)
        record = {"epoch": epoch, "train_loss": total / max(seen, 1), **dev,
                  "lr": optimizer.param_groups[0]["lr"],
                  "seconds": round(time.perf_counter() - e0, 3)}
        # Ties on dev F1 (e.g. 0 while the model still predicts no mark) go to dev loss.
        score = ((dev["dev_micro_f1"], -float(dev["dev_loss"])) if criterion == "micro_f1"
                 else (-float(dev["dev_loss"]),))
        improved = best is None or score > best["score"]
        record["best"] = improved
        history.append(record)
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "epoch": epoch}, exp_dir / "last.pt")
        if improved:
            best = {"score": score, "epoch": epoch, **dev}
            torch.save({"model": model.state_dict(), "epoch": epoch}, exp_dir / "best.pt")
            bad_epochs = 0
        else:
            bad_epochs += 1
        log(f"epoch {epoch} train_loss {record['train_loss']:.4f} "
            f"dev_loss {dev['dev_loss']:.4f} dev_micro_f1 {dev['dev_micro_f1']:.4f} "
            f"lr {record['lr']:.3g} time {record['seconds']:.1f}s" + (" *" if improved else ""))
        (exp_dir / "history.json").write_text(json.dumps(history, indent=1) + "\n",
                                              encoding="utf-8")
        if bad_epochs >= int(tcfg["patience"]) and epoch >= int(tcfg.get("min_epochs", 0)):
            log(f"early stopping after epoch {epoch}: no dev {criterion} improvement in "
                f"{bad_epochs} epochs")
            break
    assert best is not None
    summary = {"best_epoch": best["epoch"], "epochs_run": len(history),
               "dev_micro_f1": best["dev_micro_f1"], "dev_loss": best["dev_loss"],
               "seconds": round(time.perf_counter() - t0, 2),
               "checkpoint": str(exp_dir / "best.pt")}
    log(f"done: {config['family']} best epoch {best['epoch']}/{len(history)} dev micro-F1 "
        f"{best['dev_micro_f1']:.4f} dev loss {best['dev_loss']:.4f} in "
        f"{summary['seconds']:.1f}s -> {exp_dir / 'best.pt'}")
    return summary
