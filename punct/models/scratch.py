"""A small BERT from scratch over the recipe's sentencepiece model, written as an HF dir.

``build_scratch_encoder`` turns the token stage's ``sp.model`` into a Hugging Face
encoder directory that the sub-word families (nagy, courtland, autopunct) load through
their ordinary code path (``featurizer.encoder: <dir>``, ``punct.models.encoders``):

- the tokenizer is a fast ``tokenizers`` Unigram model with the sentencepiece pieces and
  scores (ids 0..N-1 are the sentencepiece ids, ``<unk>`` included), a Metaspace
  pre-tokenizer (``▁`` before each word, as sentencepiece), then ``[PAD] [CLS] [SEP]
  [MASK]`` appended as special tokens (ids N..N+3), ``[CLS] $A [SEP]`` as post-processor;
- the encoder is a randomly initialised ``BertModel`` with that vocabulary, by default
  the size of AutoPunct's custom BERT (González-Docasal et al. 2021, 3.2.2: 4 layers of
  4 heads; hidden 256 as their other layers, feed-forward 4 x hidden).

Both are written with ``save_pretrained``, so training, checkpoints and export treat
the directory like any pretrained encoder. Only unigram sentencepiece models (the
default token type) are supported: a Unigram tokenizer does not reproduce BPE merges.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, normalizers, pre_tokenizers, processors
from tokenizers.models import Unigram
from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

from punct.data.tokens import load_processor
from punct.errors import MissingDataError, PunctInputError

SPECIALS = ("[PAD]", "[CLS]", "[SEP]", "[MASK]")
UNK = "<unk>"
GEOMETRY_FILE = "scratch_encoder.json"


@dataclass(frozen=True)
class Geometry:
    """Size of the from-scratch encoder (defaults: AutoPunct's custom BERT)."""

    hidden: int = 256
    layers: int = 4
    heads: int = 4
    ffn: int = 1024
    max_positions: int = 512
    dropout: float = 0.1

    def check(self) -> None:
        for name in ("hidden", "layers", "heads", "ffn", "max_positions"):
            if getattr(self, name) < 1:
                raise PunctInputError(f"scratch encoder: {name} must be >= 1")
        if self.hidden % self.heads:
            raise PunctInputError(
                f"scratch encoder: heads={self.heads} does not divide hidden={self.hidden}")
        if not 0.0 <= self.dropout < 1.0:
            raise PunctInputError(f"scratch encoder: dropout {self.dropout} not in [0, 1)")


def check_unigram(sp_model: bytes) -> None:
    """Refuse a sentencepiece model that is not a unigram model (BPE merges are not
    reproduced by a Unigram tokenizer)."""
    from sentencepiece import sentencepiece_model_pb2  # optional extra: protobuf (not core)

    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(sp_model)
    if proto.trainer_spec.model_type != sentencepiece_model_pb2.TrainerSpec.UNIGRAM:
        kind = sentencepiece_model_pb2.TrainerSpec.ModelType.Name(proto.trainer_spec.model_type)
        raise PunctInputError(
            f"the scratch encoder needs a unigram sentencepiece model, got {kind}")


def sp_pieces(sp_model: bytes) -> list[tuple[str, float]]:
    """(piece, score) of a unigram sentencepiece model, in id order."""
    check_unigram(sp_model)
    sp = load_processor(sp_model)
    pieces = [(sp.id_to_piece(i), float(sp.get_score(i))) for i in range(sp.get_piece_size())]
    if sp.unk_id() < 0 or pieces[sp.unk_id()][0] != UNK:
        raise PunctInputError(f"the sentencepiece model has no {UNK} piece")
    if len({p for p, _ in pieces}) != len(pieces):
        raise PunctInputError("the sentencepiece model has duplicate pieces")
    if any(p in SPECIALS for p, _ in pieces):
        raise PunctInputError(f"the sentencepiece model already holds one of {SPECIALS}")
    return pieces


def fast_tokenizer(sp_model: bytes, max_positions: int) -> PreTrainedTokenizerFast:
    """A fast HF tokenizer segmenting as the unigram ``sp_model`` does, plus BERT specials."""
    pieces = sp_pieces(sp_model)
    unk_id = [p for p, _ in pieces].index(UNK)
    # <unk> gets a very low score so that it is chosen only for unknown characters.
    vocab = [(p, -100.0 if i == unk_id else s) for i, (p, s) in enumerate(pieces)]
    tok = Tokenizer(Unigram(vocab, unk_id=unk_id, byte_fallback=False))
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    tok.add_special_tokens(list(SPECIALS))
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token=UNK, pad_token="[PAD]", cls_token="[CLS]",
        sep_token="[SEP]", mask_token="[MASK]", model_max_length=max_positions)


def build_scratch_encoder(sp_model: str | os.PathLike[str], out_dir: str | os.PathLike[str],
                          geometry: Geometry = Geometry(), seed: int = 1234) -> Path:
    """Write a random BERT and its tokenizer over ``sp_model`` to ``out_dir``; return it."""
    geometry.check()
    sp_path = Path(sp_model)
    if not sp_path.is_file():
        raise MissingDataError("sentencepiece model not found (run the token stage)", sp_path)
    tokenizer = fast_tokenizer(sp_path.read_bytes(), geometry.max_positions)
    config = BertConfig(
        vocab_size=len(tokenizer), hidden_size=geometry.hidden,
        num_hidden_layers=geometry.layers, num_attention_heads=geometry.heads,
        intermediate_size=geometry.ffn, max_position_embeddings=geometry.max_positions,
        hidden_dropout_prob=geometry.dropout, attention_probs_dropout_prob=geometry.dropout,
        pad_token_id=tokenizer.pad_token_id)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = BertModel(config)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(str(out))
    model.save_pretrained(str(out))
    info = {"sp_model": str(sp_path), "seed": seed, **asdict(geometry)}
    (out / GEOMETRY_FILE).write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    return out
