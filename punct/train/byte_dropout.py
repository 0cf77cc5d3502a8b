"""Dropout whose masks come from random bytes: the same regularisation, less CPU time.

On a 2-core CPU, torch's dropout draws one random number per element (``bernoulli_``):
fine-tuning MiniLM-L6 on batches of 8 x 128 pieces spent about 90 ms of a 300 ms bf16
step there (``results/train_benchmark``), and that share does not shrink with bf16, so it
also capped the bf16 speed-up. ``ByteDropout`` draws 64 random bits per call of the
generator and uses each byte for one element: an element is dropped when its byte is
below ``round(256 p)``, so the rate is that over 256 (0.1016 for p = 0.1; the kept
elements are scaled by ``1 / (1 - rate)``, so expectations are unchanged). The draws
come from torch's default generator, so a seeded run is reproducible.

``install_byte_dropout(model)`` swaps every ``nn.Dropout`` of a model for one, and
moves Hugging Face encoders using SDPA attention to ``punct_sdpa_bytes``: SDPA outside
training, and when training with attention dropout, the plain attention product with a
byte mask on the probabilities (SDPA falls back to that product anyway once dropout is
on, with the slow masks). Dropout modules hold no weights: checkpoints are unchanged.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from punct.config import DROPOUT_MASKS, TrainSection

BYTE_ATTENTION = "punct_sdpa_bytes"
"""The attention implementation name registered with transformers."""


def byte_rate(p: float) -> float:
    """The dropout rate a byte mask realises for a requested ``p``: round(256 p) / 256."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout probability must be in [0, 1), got {p}")
    return round(256 * p) / 256


def byte_dropout(x: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    """``x`` with elements zeroed where a random byte is below round(256 p), the rest
    scaled by 1 / (1 - rate); ``x`` itself outside training or when the rate is 0."""
    rate = byte_rate(p)
    if not training or rate == 0.0:
        return x
    n = x.numel()
    words = torch.empty((n + 7) // 8, dtype=torch.int64, device=x.device)
    words.random_(-(2**63), 2**63 - 1)  # all 8 bytes uniform (random_() leaves the top bit 0)
    keep = words.view(torch.uint8)[:n].view(x.shape) >= round(256 * p)
    return x * keep.to(x.dtype) * (1.0 / (1.0 - rate))


class ByteDropout(nn.Dropout):
    """``nn.Dropout`` with byte masks (see the module docstring)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return byte_dropout(x, self.p, self.training)


def _sdpa() -> Any:
    """transformers' SDPA attention function (imported on first use)."""
    from transformers.integrations import sdpa_attention  # heavy, not needed by every command: 2 s
    return sdpa_attention.sdpa_attention_forward


def _attention(module: nn.Module, query: torch.Tensor, key: torch.Tensor,
               value: torch.Tensor, attention_mask: torch.Tensor | None,
               dropout: float = 0.0, scaling: float | None = None,
               **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor | None]:
    """SDPA without dropout; the attention product with a byte mask when dropping out.

    ``attention_mask`` is SDPA's (boolean, True = attend; or additive floats; or None).
    Returns ``(output [batch, length, heads, dim], None)`` as transformers expects.
    """
    if not module.training or byte_rate(dropout) == 0.0:
        return _sdpa()(module, query, key, value, attention_mask,
                                      dropout=0.0, scaling=scaling, **kwargs)
    scale = query.size(-1) ** -0.5 if scaling is None else scaling
    scores = torch.matmul(query, key.transpose(2, 3)) * scale
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attention_mask, torch.finfo(scores.dtype).min)
        else:
            scores = scores + attention_mask
    probs = byte_dropout(torch.softmax(scores, dim=-1), dropout, True)
    return torch.matmul(probs, value).transpose(1, 2).contiguous(), None


def _register_attention() -> bool:
    """Register ``punct_sdpa_bytes`` (attention and mask functions) with transformers;
    False when transformers lacks the attention interfaces."""
    try:
        import transformers  # heavy, not needed by every command: 2 s, BRNN runs skip it
        import transformers.masking_utils as masking  # heavy, not needed by every command: 2 s
        interface, mask_interface = transformers.AttentionInterface, masking.AttentionMaskInterface
    except (ImportError, AttributeError):  # an older transformers: torch's masks stay
        return False
    interface.register(BYTE_ATTENTION, _attention)
    mask_interface.register(BYTE_ATTENTION, masking.ALL_MASK_ATTENTION_FUNCTIONS["sdpa"])
    return True


def uses_byte_masks(setting: str, device: torch.device | str) -> bool:
    """``train.dropout_masks``: bytes, torch, or auto (bytes on the CPU only: CUDA's
    dropout kernels are already fused)."""
    if setting not in DROPOUT_MASKS:
        raise ValueError(f"dropout masks must be one of {DROPOUT_MASKS}, got {setting!r}")
    return setting == "bytes" or (setting == "auto" and torch.device(device).type == "cpu")


def apply_dropout_masks(model: nn.Module, train: TrainSection,
                        device: torch.device | str) -> str:
    """Install byte masks in ``model`` when the ``train:`` section's ``dropout_masks``
    asks for them on ``device``; return the masks in effect (``bytes`` or ``torch``)."""
    if uses_byte_masks(train.dropout_masks, device):
        install_byte_dropout(model)
        return "bytes"
    return "torch"


def install_byte_dropout(model: nn.Module) -> int:
    """Swap every ``nn.Dropout`` of ``model`` for a ``ByteDropout`` of the same p, and
    route SDPA attention of Hugging Face sub-modules through ``punct_sdpa_bytes``.
    Returns the number of dropout modules swapped."""
    swapped = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is nn.Dropout:
                setattr(parent, name, ByteDropout(child.p, child.inplace))
                swapped += 1
    configs = {id(m.config): m.config for m in model.modules()
               if getattr(getattr(m, "config", None), "_attn_implementation", None) == "sdpa"}
    if configs and _register_attention():
        for config in configs.values():
            config._attn_implementation = BYTE_ATTENTION
    return swapped
