"""A tiny randomly initialised BERT with a small WordPiece vocabulary, written to a
directory so that the families load it through their ordinary (offline) code path."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import torch
from transformers import BertConfig, BertModel, BertTokenizerFast

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def tiny_vocab(words: Iterable[str]) -> list[str]:
    """A WordPiece vocabulary: specials, the given words, and every letter alone and as ##."""
    vocab: list[str] = list(SPECIAL_TOKENS)
    seen = set(vocab)
    chars = sorted({ch for word in words for ch in word} | set("abcdefghijklmnopqrstuvwxyz"))
    for item in [*words, *chars, *("##" + ch for ch in chars)]:
        if item not in seen:
            seen.add(item)
            vocab.append(item)
    return vocab


def build_tiny_bert(
    directory: str | os.PathLike[str],
    words: Iterable[str] = ("the", "a", "and", "of", "to", "is", "it", "what", "yes", "no"),
    hidden: int = 32,
    layers: int = 2,
    heads: int = 2,
    max_positions: int = 128,
    seed: int = 0,
) -> Path:
    """Write a tiny random BERT and its WordPiece tokenizer to ``directory``; return it.

    Words outside ``words`` are split into letters (``ab`` -> ``a ##b``), so any
    lower-case word tokenises without [UNK] and multi-piece words are easy to make.
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    vocab = tiny_vocab([w.lower() for w in words])
    vocab_file = out / "vocab.txt"
    vocab_file.write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(
        vocab={piece: i for i, piece in enumerate(vocab)}, do_lower_case=True
    )
    tokenizer.model_max_length = max_positions
    tokenizer.save_pretrained(str(out))
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=4 * hidden,
        max_position_embeddings=max_positions,
        pad_token_id=0,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = BertModel(config)
    model.save_pretrained(str(out))
    return out
