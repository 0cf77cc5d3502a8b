"""A random tiny wav2vec2 CTC model with its processor, saved locally (no download)."""

from __future__ import annotations

import json
from pathlib import Path

import torch

#: Blank 0, word delimiter 1, <unk> 2, then lower-case letters and the apostrophe.
VOCAB = {"<pad>": 0, "|": 1, "<unk>": 2,
         **{c: i + 3 for i, c in enumerate("abcdefghijklmnopqrstuvwxyz'")}}


def build_tiny_ctc(out: Path, seed: int = 0) -> Path:
    """Save the model and processor under ``out`` (stride 20 samples at 16 kHz)."""
    from transformers import (
        Wav2Vec2Config,
        Wav2Vec2CTCTokenizer,
        Wav2Vec2FeatureExtractor,
        Wav2Vec2ForCTC,
        Wav2Vec2Processor,
    )

    out.mkdir(parents=True, exist_ok=True)
    (out / "vocab.json").write_text(json.dumps(VOCAB), encoding="utf-8")
    tokenizer = Wav2Vec2CTCTokenizer(str(out / "vocab.json"), unk_token="<unk>",
                                     pad_token="<pad>", word_delimiter_token="|")
    extractor = Wav2Vec2FeatureExtractor(feature_size=1, sampling_rate=16000,
                                         padding_value=0.0, do_normalize=True)
    Wav2Vec2Processor(feature_extractor=extractor, tokenizer=tokenizer).save_pretrained(out)
    config = Wav2Vec2Config(
        vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=0, num_attention_heads=2,
        intermediate_size=32, conv_dim=(8, 8), conv_stride=(5, 4), conv_kernel=(10, 8),
        num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, pad_token_id=0,
        feat_extract_norm="layer",  # per frame (group norm spans the whole input)
    )
    torch.manual_seed(seed)
    Wav2Vec2ForCTC(config).save_pretrained(out)
    return out
