"""Masked-language-model pre-training of an encoder directory on a recipe's own text.

``pretrain_mlm`` reads an HF encoder directory (e.g. the from-scratch BERT of
``punct.models.scratch``), puts BERT's MLM head on it and trains on the lower-cased,
unpunctuated training words (what the punctuation models read): the utterances'
pieces are concatenated and cut into blocks of ``block - 2`` pieces within
``[CLS] ... [SEP]``; 15 % of the pieces are chosen, of which 80 % become ``[MASK]``,
10 % a random piece and 10 % stay (Devlin et al. 2019). Adam(W) with a linear warm-up
over the first 10 % of the steps and a linear decay after it, on the CPU under
``precision`` (``auto``: bf16 autocast where the CPU has native bf16, else fp32). The
encoder (without the MLM head) and its tokenizer are written to ``out_dir`` with
``save_pretrained``; the per-epoch losses (and the dev loss, same masking with a fixed
seed) go to ``mlm.json`` there.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import BertForMaskedLM

from punct.engine.precision import autocast_dtype, resolve_precision
from punct.errors import PunctInputError
from punct.models.encoders import load_tokenizer, resolve_encoder

LOG = logging.getLogger(__name__)
REPORT_FILE = "mlm.json"
MASK_SHARE = 0.15


@dataclass(frozen=True)
class MlmOptions:
    """Pre-training settings."""

    epochs: int = 3
    batch_size: int = 32
    block: int = 128
    lr: float = 5e-4
    weight_decay: float = 0.01
    seed: int = 1234
    max_steps: int = 0  # 0: no limit
    precision: str = "auto"  # auto | bf16 | fp32 (CPU autocast)


def piece_blocks(tokenizer: Any, lines: Sequence[str], block: int) -> torch.Tensor:
    """(N, block) ids: the lines' pieces concatenated, cut into ``[CLS] ... [SEP]`` blocks
    (the last, shorter block padded)."""
    if block < 3:
        raise PunctInputError(f"MLM block must be >= 3 pieces, got {block}")
    ids: list[int] = []
    for piece_ids in tokenizer(list(lines), add_special_tokens=False)["input_ids"]:
        ids.extend(piece_ids)
    if not ids:
        raise PunctInputError("no text to pre-train on")
    size = block - 2
    rows = []
    for start in range(0, len(ids), size):
        chunk = [tokenizer.cls_token_id, *ids[start:start + size], tokenizer.sep_token_id]
        rows.append(chunk + [tokenizer.pad_token_id] * (block - len(chunk)))
    return torch.tensor(rows, dtype=torch.long)


def mask_pieces(ids: torch.Tensor, tokenizer: Any, n_pieces: int, generator: torch.Generator
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT masking: (inputs, labels) with labels -100 where nothing is predicted."""
    special = ((ids == tokenizer.cls_token_id) | (ids == tokenizer.sep_token_id)
               | (ids == tokenizer.pad_token_id))
    chosen = (torch.rand(ids.shape, generator=generator) < MASK_SHARE) & ~special
    labels = torch.where(chosen, ids, torch.full_like(ids, -100))
    roll = torch.rand(ids.shape, generator=generator)
    inputs = ids.clone()
    inputs[chosen & (roll < 0.8)] = tokenizer.mask_token_id
    swap = chosen & (roll >= 0.8) & (roll < 0.9)
    inputs[swap] = torch.randint(n_pieces, ids.shape, generator=generator)[swap]
    return inputs, labels


def mlm_loss(model: BertForMaskedLM, blocks: torch.Tensor, tokenizer: Any, n_pieces: int,
             batch_size: int, seed: int) -> float:
    """Mean MLM loss over ``blocks`` with a fixed masking (no gradients)."""
    gen = torch.Generator().manual_seed(seed)
    total, count = 0.0, 0
    model.eval()
    with torch.no_grad():
        for start in range(0, len(blocks), batch_size):
            ids = blocks[start:start + batch_size]
            inputs, labels = mask_pieces(ids, tokenizer, n_pieces, gen)
            n = int((labels != -100).sum())
            if n:
                out = model(input_ids=inputs, attention_mask=(ids != tokenizer.pad_token_id
                                                              ).long(), labels=labels)
                total += float(out.loss) * n
                count += n
    return total / max(count, 1)


def pretrain_mlm(encoder_dir: str | os.PathLike[str], train_lines: Sequence[str],
                 out_dir: str | os.PathLike[str], options: MlmOptions = MlmOptions(),
                 dev_lines: Sequence[str] = ()) -> dict[str, Any]:
    """Pre-train ``encoder_dir`` with MLM on ``train_lines``; write the encoder to
    ``out_dir``; return the report (also in ``out_dir/mlm.json``)."""
    source = resolve_encoder(encoder_dir)
    tokenizer = load_tokenizer(source)
    for attr in ("cls_token_id", "sep_token_id", "pad_token_id", "mask_token_id"):
        if getattr(tokenizer, attr, None) is None:
            raise PunctInputError(f"the tokenizer of {source} has no {attr}")
    if options.epochs < 1 or options.batch_size < 1 or options.lr <= 0:
        raise PunctInputError(f"bad MLM options {options}")
    try:
        precision = resolve_precision(options.precision, "cpu")
    except ValueError as err:
        raise PunctInputError(f"MLM precision: {err}") from None
    if precision == "fp16":
        raise PunctInputError("MLM pre-training runs on the CPU: precision bf16 or fp32")
    dtype = autocast_dtype(precision)
    torch.manual_seed(options.seed)
    model = BertForMaskedLM.from_pretrained(source)
    n_pieces = len(tokenizer)
    train = piece_blocks(tokenizer, train_lines, options.block)
    dev = piece_blocks(tokenizer, dev_lines, options.block) if dev_lines else None
    steps_per_epoch = math.ceil(len(train) / options.batch_size)
    total = steps_per_epoch * options.epochs
    if options.max_steps:
        total = min(total, options.max_steps)
    warmup = max(1, total // 10)
    opt = torch.optim.AdamW(model.parameters(), lr=options.lr,
                            weight_decay=options.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warmup, max(0.0, (total - s) / max(1, total - warmup))))
    gen = torch.Generator().manual_seed(options.seed)
    report: dict[str, Any] = {"source": source, "options": asdict(options),
                              "precision": precision,
                              "train_blocks": len(train), "steps": 0, "epochs": []}
    if dev is not None:
        report["dev_loss_before"] = mlm_loss(model, dev, tokenizer, n_pieces,
                                             options.batch_size, options.seed)
    step = 0
    for epoch in range(1, options.epochs + 1):
        model.train()
        start_time = time.time()
        order = torch.randperm(len(train), generator=gen)
        losses = []
        for start in range(0, len(train), options.batch_size):
            if step >= total:
                break
            ids = train[order[start:start + options.batch_size]]
            inputs, labels = mask_pieces(ids, tokenizer, n_pieces, gen)
            with torch.autocast("cpu", dtype=dtype or torch.float32, enabled=dtype is not None):
                out = model(input_ids=inputs,
                            attention_mask=(ids != tokenizer.pad_token_id).long(), labels=labels)
            opt.zero_grad()
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            losses.append(float(out.loss.detach()))
            step += 1
        row: dict[str, Any] = {"epoch": epoch, "train_loss": sum(losses) / max(len(losses), 1),
                               "seconds": round(time.time() - start_time, 1)}
        if dev is not None:
            row["dev_loss"] = mlm_loss(model, dev, tokenizer, n_pieces, options.batch_size,
                                       options.seed)
        report["epochs"].append(row)
        LOG.info("mlm epoch %d: %s", epoch, row)
        print(f"pretrain_encoder: epoch {epoch} " + " ".join(
            f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()
            if k != "epoch"), flush=True)
        if step >= total:
            break
    report["steps"] = step
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.bert.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    (out / REPORT_FILE).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return report
