"""What the trainer measures on the dev set: mean loss, micro-F1 as stage 6 decodes the
set, and, for multi-label label sets, the per-mark thresholds tuned on it. Shared by the
training loop (``punct.train.trainer``) and the weight soups (``punct.train.soup``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from punct.config import Config
from punct.data.windows import batched
from punct.engine.combinations import combination_matrix
from punct.engine.decode import decide, decode_settings, hypothesis_rows, predict_words
from punct.engine.transfer import batch_to_device
from punct.labels import get_label_set
from punct.models.base import Featurizer, PunctModel, Window
from punct.models.marks import model_pos_weight
from punct.score.metrics import score_tables
from punct.train.thresholds import tune_thresholds, write_thresholds


def mean_loss(model: PunctModel, featurizer: Featurizer, windows: list[Window],
              batch_size: int, device: torch.device | str = "cpu") -> float:
    """Mean loss over windows (weighted by batch size), without gradients."""
    if not windows:
        return float("nan")
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for chunk in batched(windows, batch_size):
            batch = batch_to_device(featurizer.collate(chunk), torch.device(device))
            total += float(model.loss(batch)) * len(chunk)
            count += len(chunk)
    model.train(was_training)
    return total / count


def evaluate(model: PunctModel, featurizer: Featurizer, config: Config,
             dev_utts: dict[str, Any], dev_seqs: list[Any], dev_loss_windows: list[Window],
             device: torch.device | str = "cpu") -> dict[str, float | None]:
    """Dev loss and dev micro-F1 (decoded with the shared decoder and decode settings, as
    stage 6 decodes the set, ``mid_stream`` marker included)."""
    device = torch.device(device)
    labels = get_label_set(config.label_set).labels
    st = decode_settings(config, device)
    pred = predict_words(model, featurizer, dev_seqs, st.window, st.stride,
                         batch_size=st.batch_size, bf16=st.bf16, aggregate=st.aggregate,
                         device=device, exclusive=st.exclusive)
    marks, caps = decide(pred, dev_seqs, labels, st.threshold, st.exclusive,
                         st.combinations, st.constraints)
    out: dict[str, float | None] = {
        "dev_loss": mean_loss(model, featurizer, dev_loss_windows,
                              config.train.batch_size, device)
    }
    hyp = hypothesis_rows(dev_utts, dev_seqs, marks, caps, labels)
    summary = score_tables(dev_utts, hyp, config.label_set)["all"]
    out["dev_micro_f1"] = summary["micro_f1"]
    out["dev_cap_micro_f1"] = summary["cap_micro_f1"] if pred.cap is not None else None
    return out


def tune_dev_thresholds(model: PunctModel, featurizer: Featurizer, config: Config,
                        dev_seqs: list[Any], exp_dir: Path, device: torch.device,
                        log: Callable[[str], None]) -> None:
    """Multi-label sets: tune per-mark thresholds of ``model`` on dev and write
    ``thresholds.json`` into ``exp_dir`` (an exclusive set decodes by argmax: nothing)."""
    label_set = get_label_set(config.label_set)
    if label_set.exclusive:
        return
    st = decode_settings(config, device)
    pred = predict_words(model, featurizer, dev_seqs, st.window, st.stride,
                         batch_size=st.batch_size, bf16=st.bf16, aggregate=st.aggregate,
                         device=device)
    ref = np.concatenate([s.punct for s in dev_seqs], axis=0) > 0.5
    allowed = (None if st.combinations is None
               else combination_matrix(st.combinations, label_set.labels))
    tuned = tune_thresholds(pred.punct, ref, label_set.labels, float(st.threshold),
                            allowed=allowed, pos_weight=model_pos_weight(model))
    write_thresholds(exp_dir, label_set.name, tuned)
    log(f"thresholds tuned on dev: micro-F1 {tuned.f1_before:.4f} at "
        f"{st.threshold} -> {tuned.f1_after:.4f}; "
        + " ".join(f"{k}={v:.2f}" for k, v in tuned.thresholds.items()))
    log("dev predicted/reference per mark: " + " ".join(
        f"{k}={'n/a' if r is None else f'{r:.2f}'}" for k, r in tuned.ratios.items()))
