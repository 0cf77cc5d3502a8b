"""UniPunc's acoustic assistant and coordinate bootstrapper (Zhu et al. 2022, 3.2-3.3).

Acoustic assistant: the frames of a window (log-mel filterbanks, or wav2vec 2.0 states
precomputed by ``punct.bin.make_fbank --wav2vec2``) go through a convolutional
down-sampling network (``conv_layers`` x Conv1d(kernel, stride), GELU; the paper: 2
layers, kernel 15, stride 5; ``channels`` defaults to the model dimension, a smaller
value adds a linear projection to it), a LayerNorm, and become the acoustic embedding
``H_a``.
A window without audio gets the virtual embedding ``H_i`` instead: ``virtual_length``
(5) learned vectors. Both live in the model dimension, so one batch mixes the two.

Coordinate bootstrapper (one layer; ``layers`` of them are stacked, the paper uses 2):
``S_l = Att(H_l, H_l, H_l)``, ``S_a = Att(H_l, H_a, H_a)`` (text queries attend over the
acoustic or virtual keys), ``H_h = S_l + S_a + H_l`` (eq. 3), followed here by a
LayerNorm so that stacked layers keep their scale. The attention is multi-head.

Positions: acoustic keys get a sinusoidal encoding of their index after down-sampling
(as fairseq's speech Transformers do after the conv subsampler). With
``time_encoding: true`` both sides instead get the same sinusoidal encoding of time:
queries the end time of their word, keys the time of their frame (centiseconds from the
window's first frame), which makes the text-to-audio alignment easy to learn from little
data. With ``alignment_prior_s: sigma`` the cross-attention logits of acoustic keys also
get the bias ``-(t_word_end - t_frame)^2 / (2 sigma^2)``, a Gaussian prior that each word
looks at the audio around its end (where a pause would be). Virtual keys never get a
position or a bias. ``zero_init: true`` starts both attention output projections at zero,
so a layer starts as the identity (plus LayerNorm) on ``H_l`` and the acoustic branch
cannot drown weak lexical states (e.g. a BiGRU's) at the start of training.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from punct.config import OptionError, option
from punct.errors import PunctInputError


@dataclass
class AcousticOptions:
    """``model.acoustic``: the acoustic assistant (see the module docstring)."""

    conv_layers: int = option(2, low=1)
    channels: int | None = option(None, low=1)  # None: the model dimension
    kernel: int = option(15, low=1)
    stride: int = option(5, low=1)
    virtual_length: int = option(5, low=1)  # learned vectors of a window without audio
    dropout: float = option(0.1, low=0.0, high=1.0)


@dataclass
class BootstrapperOptions:
    """``model.bootstrapper``: the coordinate bootstrapper (see the module docstring)."""

    layers: int = option(2, low=1)
    heads: int = option(4, low=1)
    dropout: float = option(0.1, low=0.0, high=1.0)
    time_encoding: bool = False  # queries and keys get a sinusoidal encoding of time
    alignment_prior_s: float | None = option(None, low=0.0)  # sigma of the Gaussian prior
    layer_norm: bool = True
    zero_init: bool = False  # attention output projections start at zero

    def check(self) -> None:
        if self.alignment_prior_s is not None and self.alignment_prior_s <= 0:
            raise OptionError("alignment_prior_s", "must be positive (or null)")




def sinusoid(positions: torch.Tensor, dim: int) -> torch.Tensor:
    """Transformer sinusoids of real-valued ``positions`` (...,) -> (..., dim)."""
    half = dim // 2
    freq = torch.exp(-math.log(10000.0) * torch.arange(half, device=positions.device,
                                                       dtype=torch.float32) / max(half, 1))
    angles = positions.float().unsqueeze(-1) * freq
    out = torch.cat([torch.sin(angles), torch.cos(angles)], dim=-1)
    if dim % 2:
        out = torch.nn.functional.pad(out, (0, 1))
    return out


class AcousticAssistant(nn.Module):
    """Frames -> down-sampled acoustic keys, or the virtual embedding without audio."""

    @classmethod
    def from_options(cls, d_in: int, d_model: int, opts: AcousticOptions) -> AcousticAssistant:
        """The assistant of ``model.acoustic``."""
        return cls(d_in, d_model, opts.conv_layers, opts.kernel, opts.stride,
                   opts.virtual_length, opts.dropout, opts.channels)

    def __init__(self, d_in: int, d_model: int, conv_layers: int = 2, kernel: int = 15,
                 stride: int = 5, virtual_length: int = 5, dropout: float = 0.1,
                 channels: int | None = None):
        super().__init__()
        channels = channels or d_model
        if min(d_in, conv_layers, kernel, stride, virtual_length, channels) < 1:
            raise PunctInputError("acoustic: d_in, conv_layers, channels, kernel, stride and "
                                  "virtual_length must be positive")
        self.kernel, self.stride = kernel, stride
        self.convs = nn.ModuleList(
            nn.Conv1d(d_in if i == 0 else channels, channels, kernel, stride,
                      padding=kernel // 2)
            for i in range(conv_layers))
        self.project: nn.Module = (nn.Identity() if channels == d_model
                                   else nn.Linear(channels, d_model))
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.virtual = nn.Parameter(torch.randn(virtual_length, d_model) * 0.02)

    def out_length(self, length: torch.Tensor, layers: int | None = None) -> torch.Tensor:
        """Frames after the convolutions, or the first ``layers`` (``length`` frames in)."""
        for _ in range(len(self.convs) if layers is None else layers):
            length = torch.div(length + 2 * (self.kernel // 2) - self.kernel, self.stride,
                               rounding_mode="floor") + 1
            length = length.clamp(min=0)
        return length

    def forward(self, audio: torch.Tensor, audio_mask: torch.Tensor, has_audio: torch.Tensor,
                audio_times: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                                                    torch.Tensor]:
        """Keys (B, M, d), key mask (B, M) true on real keys, key times (B, M) in
        seconds, and which keys are acoustic (B, M) (false on virtual keys and padding)."""
        b = audio.shape[0]
        lengths = audio_mask.sum(dim=1)
        x = (audio * audio_mask[..., None]).transpose(1, 2)
        for conv in self.convs:  # padding frames stay zero between layers: no leakage
            x = nn.functional.gelu(conv(x))
            lengths = self.out_length(lengths, layers=1)
            x = x * (torch.arange(x.shape[2], device=x.device)[None, :] < lengths[:, None]
                     )[:, None, :]
        x = self.dropout(self.norm(self.project(x.transpose(1, 2))))
        lengths = torch.where(has_audio, lengths.clamp(max=x.shape[1]), 0)
        acoustic = has_audio & (lengths > 0)
        n_virtual = self.virtual.shape[0]
        m = max(int(lengths.max()) if b else 0, n_virtual)
        keys = x.new_zeros(b, m, x.shape[-1])
        keys[:, : x.shape[1]] = x[:, :m]
        idx = torch.arange(m, device=x.device)
        is_acoustic = acoustic[:, None] & (idx[None, :] < lengths[:, None])
        is_virtual = ~acoustic[:, None] & (idx[None, :] < n_virtual)
        virtual = torch.zeros_like(keys)
        virtual[:, :n_virtual] = self.virtual.to(keys.dtype)
        keys = torch.where(is_virtual[..., None], virtual, keys * is_acoustic[..., None])
        # time of output frame j: that of input frame j * stride ** layers
        src = (idx * self.stride ** len(self.convs)).clamp(max=audio_times.shape[1] - 1)
        times = audio_times[:, src]
        return keys, is_acoustic | is_virtual, times, is_acoustic


class BootstrapperLayer(nn.Module):
    """``H_h = S_l + S_a + H_l`` with self-attention over text, cross-attention to audio."""

    def __init__(self, d_model: int, heads: int, dropout: float, layer_norm: bool,
                 zero_init: bool = False):
        super().__init__()
        if d_model % heads:
            raise PunctInputError(f"bootstrapper.heads={heads} does not divide the model "
                                  f"dimension {d_model}")
        self.self_att = nn.MultiheadAttention(d_model, heads, dropout=dropout, batch_first=True)
        self.cross_att = nn.MultiheadAttention(d_model, heads, dropout=dropout,
                                               batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.norm: nn.Module = nn.LayerNorm(d_model) if layer_norm else nn.Identity()
        if zero_init:  # S_l = S_a = 0 at the start: the layer starts as (normalised) H_l
            for att in (self.self_att, self.cross_att):
                nn.init.zeros_(att.out_proj.weight)
                nn.init.zeros_(att.out_proj.bias)

    def forward(self, h: torch.Tensor, text_valid: torch.Tensor, keys: torch.Tensor,
                key_valid: torch.Tensor, query_pos: torch.Tensor, key_pos: torch.Tensor,
                bias: torch.Tensor | None = None) -> torch.Tensor:
        """One layer; ``bias`` (B, T, M) is added to the cross-attention logits."""
        s_l, _ = self.self_att(h, h, h, key_padding_mask=~text_valid, need_weights=False)
        mask = ~key_valid
        if bias is not None:  # one float mask carries both the bias and the padding
            bias = bias.masked_fill(mask[:, None, :], float("-inf"))
            mask = None
            bias = bias.repeat_interleave(self.cross_att.num_heads, dim=0)
        s_a, _ = self.cross_att(h + query_pos, keys + key_pos, keys, key_padding_mask=mask,
                                attn_mask=bias, need_weights=False)
        return self.norm(h + self.dropout(s_l) + self.dropout(s_a))


class CoordinateBootstrapper(nn.Module):
    """Stacked bootstrapper layers over lexical states and acoustic (or virtual) keys."""

    @classmethod
    def from_options(cls, d_model: int, opts: BootstrapperOptions) -> CoordinateBootstrapper:
        """The bootstrapper of ``model.bootstrapper``."""
        return cls(d_model, opts.layers, opts.heads, opts.dropout, opts.time_encoding,
                   opts.layer_norm, opts.alignment_prior_s, opts.zero_init)

    def __init__(self, d_model: int, layers: int = 2, heads: int = 4, dropout: float = 0.1,
                 time_encoding: bool = False, layer_norm: bool = True,
                 alignment_prior_s: float | None = None, zero_init: bool = False):
        super().__init__()
        if layers < 1:
            raise PunctInputError("bootstrapper.layers must be >= 1")
        if alignment_prior_s is not None and alignment_prior_s <= 0:
            raise PunctInputError("bootstrapper.alignment_prior_s must be positive (or null)")
        self.d_model = d_model
        self.time_encoding = bool(time_encoding)
        self.prior_s = alignment_prior_s
        self.layers = nn.ModuleList(BootstrapperLayer(d_model, heads, dropout, layer_norm,
                                                      zero_init) for _ in range(layers))

    def positions(self, token_times: torch.Tensor, key_times: torch.Tensor,
                  is_acoustic: torch.Tensor, n_text: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Query and key position encodings (zeros on virtual keys and padding)."""
        b, m = is_acoustic.shape
        if self.time_encoding:
            query = sinusoid(token_times[:, :n_text] * 100.0, self.d_model)
            key = sinusoid(key_times * 100.0, self.d_model)
        else:
            query = torch.zeros(b, n_text, self.d_model, device=is_acoustic.device)
            key = sinusoid(torch.arange(m, device=is_acoustic.device), self.d_model)
            key = key.unsqueeze(0).expand(b, -1, -1)
        return query, key * is_acoustic[..., None]

    def alignment_bias(self, token_times: torch.Tensor, key_times: torch.Tensor,
                       is_acoustic: torch.Tensor) -> torch.Tensor | None:
        """(B, T, M) Gaussian prior ``-(t_q - t_k)^2 / (2 sigma^2)`` on acoustic keys
        (0 on virtual keys), or None without ``alignment_prior_s``."""
        if self.prior_s is None:
            return None
        delta = token_times[:, :, None] - key_times[:, None, :]
        return -(delta ** 2) / (2 * self.prior_s ** 2) * is_acoustic[:, None, :]

    def forward(self, h: torch.Tensor, text_valid: torch.Tensor,
                keys: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
                token_times: torch.Tensor) -> torch.Tensor:
        """The hybrid representation (B, T, d) of lexical states ``h`` (B, T, d)."""
        key, key_valid, key_times, is_acoustic = keys
        query_pos, key_pos = self.positions(token_times, key_times, is_acoustic, h.shape[1])
        query_pos, key_pos = query_pos.to(h.dtype), key_pos.to(h.dtype)
        bias = self.alignment_bias(token_times[:, : h.shape[1]], key_times, is_acoustic)
        if bias is not None:
            bias = bias.to(h.dtype)
        for layer in self.layers:
            h = layer(h, text_valid, key.to(h.dtype), key_valid, query_pos, key_pos, bias)
        return h
