"""Silence (pause) encodings added to word embeddings (AutoPunct, section 3.2.1).

Three encodings, all mapping pauses ``(B, T)`` in seconds (NaN = unknown) to vectors
``(B, T, H)`` that are added to the encoder's word embeddings:

- ``none``: zeros (the text-only systems).
- ``continuous``: the pause value repeated over the hidden size. Pauses are clipped to
  ``[0, max_s]`` (default 10 s, the range of the discrete buckets). Unknown pauses give 0,
  i.e. the word embedding is left unchanged, exactly as in a text-only input.
- ``discrete``: 1000 buckets of 10 ms over 0-10 s (values clipped into range), a trainable
  embedding of hidden size per bucket, and the vector used for a value is the weighted
  average of the bucket embeddings in a window of ``window_s`` (1 s) centred on its
  bucket: ``half = round(window_s / bucket_s) // 2`` buckets either side (50 for the
  paper's setting, so 101 buckets; a window of an odd number n of buckets, e.g. 3, is
  exactly n buckets, an even number n becomes n + 1 to stay centred).
  Weights are uniform or Gaussian centred on the bucket; near the ends of the range the
  window is cut and the weights renormalised over the buckets that exist. Unknown pauses
  get a separate learned "unknown" embedding (never averaged): the recordings of a
  mixed-modality corpus without audio are then distinguishable from a real 0 s pause.

Gaussian width: the paper does not give it. The default ``sigma_s = window_s / 6``
(1/6 s) makes the 1 s window span +-3 sigma, so the truncation drops only 0.3 % of the
Gaussian's mass and the window is the natural support of the kernel; any value can be
configured. With a larger sigma the Gaussian tends to the uniform average.

Efficiency: the averaging is a fixed banded matrix ``A`` (n x n, rows sum to 1) built
once as a buffer. Each forward takes the distinct buckets ``u`` of the batch and computes
``A[u] @ E`` (|u| x n times n x H) once for those buckets, then gathers per token; no
per-token averaging. The whole averaged table ``A @ E`` is available as
``averaged_table()``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import nn

from punct.config import OptionError, option
from punct.errors import PunctInputError

N_BUCKETS = 1000
BUCKET_S = 0.01
WINDOW_S = 1.0
SILENCE_KINDS = ("none", "continuous", "discrete")
WEIGHTINGS = ("gaussian", "uniform")


@dataclass
class SilenceOptions:
    """``model.silence`` (a mapping, or only the kind): the encoding and its options;
    ``max_s`` is continuous's, the others discrete's (see the module docstring)."""

    kind: str | None = option("none", choices=SILENCE_KINDS)  # None: none
    max_s: float = option(N_BUCKETS * BUCKET_S, low=0.0)  # continuous: pauses clipped here
    n_buckets: int = option(N_BUCKETS, low=1)
    bucket_s: float = option(BUCKET_S, low=0.0)
    window_s: float = option(WINDOW_S, low=0.0)
    weighting: str = option("gaussian", choices=WEIGHTINGS)
    sigma_s: float | None = option(None, low=0.0)  # None: window_s / 6
    init_std: float = option(0.02, low=0.0)

    def check(self) -> None:
        if self.kind == "discrete" and self.max_s != N_BUCKETS * BUCKET_S:
            raise OptionError("max_s", "an option of continuous silences; discrete ones "
                                       "cover n_buckets x bucket_s")
        if self.kind != "discrete":
            default = SilenceOptions(kind=self.kind)
            for spec in dataclasses.fields(self):
                if spec.name not in ("kind", "max_s") and (getattr(self, spec.name)
                                                           != getattr(default, spec.name)):
                    raise OptionError(spec.name, f"an option of discrete silences, not of "
                                                 f"{self.kind or 'none'}")


def silence_options(value: SilenceOptions | str | None) -> SilenceOptions:
    """The options of ``model.silence`` written as a mapping or as its kind."""
    if isinstance(value, SilenceOptions):
        return value
    if value is not None and value not in SILENCE_KINDS:
        raise OptionError("kind", f"{value!r} is not one of: {', '.join(SILENCE_KINDS)}")
    return SilenceOptions(kind=value)


def averaging_matrix(
    n_buckets: int, half_width: int, weighting: str = "gaussian", sigma: float = 1.0
) -> torch.Tensor:
    """Row-stochastic banded matrix ``A`` with ``A[i, j]`` the weight of bucket j for bucket i.

    ``half_width`` and ``sigma`` are in buckets. Row i covers buckets
    ``max(0, i - half_width) .. min(n - 1, i + half_width)``; weights are 1 (uniform) or
    ``exp(-(j - i)^2 / (2 sigma^2))`` (Gaussian), renormalised to sum to 1 per row.
    """
    if n_buckets < 1 or half_width < 0:
        raise ValueError(f"need n_buckets >= 1 and half_width >= 0, got {n_buckets}, {half_width}")
    if weighting not in WEIGHTINGS:
        raise ValueError(f"unknown weighting {weighting!r}; expected one of {WEIGHTINGS}")
    if weighting == "gaussian" and not sigma > 0:
        raise ValueError(f"Gaussian sigma must be > 0, got {sigma}")
    idx = torch.arange(n_buckets, dtype=torch.float64)
    dist = idx.view(1, -1) - idx.view(-1, 1)
    inside = dist.abs() <= half_width
    if weighting == "uniform":
        weights = inside.to(torch.float64)
    else:
        weights = torch.exp(-0.5 * (dist / sigma) ** 2) * inside
    return (weights / weights.sum(dim=1, keepdim=True)).to(torch.float32)


def pause_buckets(pauses: torch.Tensor, n_buckets: int = N_BUCKETS, bucket_s: float = BUCKET_S):
    """Bucket index of each pause (``floor(p / bucket_s)`` clipped to range); NaN -> -1."""
    unknown = torch.isnan(pauses)
    safe = torch.where(unknown, torch.zeros_like(pauses), pauses).float()
    # the small epsilon keeps exact multiples such as 0.07 s in their own bucket despite
    # binary rounding (0.07 / 0.01 = 7.000000000000001 but 0.29 / 0.01 = 28.999999999999996)
    idx = torch.floor(safe / bucket_s + 1e-4).long().clamp(0, n_buckets - 1)
    return torch.where(unknown, torch.full_like(idx, -1), idx)


class SilenceEncoding(nn.Module):
    """Base class: ``forward(pauses (B, T)) -> (B, T, H)`` to add to word embeddings."""

    kind = "none"

    def __init__(self, hidden: int):
        super().__init__()
        self.hidden = hidden

    def forward(self, pauses: torch.Tensor) -> torch.Tensor:
        return pauses.new_zeros((*pauses.shape, self.hidden))


class ContinuousSilence(SilenceEncoding):
    """The (clipped) pause value repeated over the hidden size; unknown -> 0."""

    kind = "continuous"

    def __init__(self, hidden: int, max_s: float = N_BUCKETS * BUCKET_S):
        super().__init__(hidden)
        self.max_s = float(max_s)

    def forward(self, pauses: torch.Tensor) -> torch.Tensor:
        value = torch.nan_to_num(pauses.float(), nan=0.0).clamp(0.0, self.max_s)
        return value.unsqueeze(-1).expand(*pauses.shape, self.hidden)


class DiscreteSilence(SilenceEncoding):
    """Bucket embeddings averaged over a window centred on the pause's bucket."""

    kind = "discrete"

    def __init__(
        self,
        hidden: int,
        n_buckets: int = N_BUCKETS,
        bucket_s: float = BUCKET_S,
        window_s: float = WINDOW_S,
        weighting: str = "gaussian",
        sigma_s: float | None = None,
        init_std: float = 0.02,
    ):
        super().__init__(hidden)
        self.n_buckets = int(n_buckets)
        self.bucket_s = float(bucket_s)
        self.weighting = weighting
        self.half_width = round(window_s / bucket_s) // 2
        self.sigma_s = float(sigma_s) if sigma_s is not None else window_s / 6.0
        sigma = self.sigma_s / bucket_s
        self.register_buffer(
            "avg", averaging_matrix(self.n_buckets, self.half_width, weighting, sigma),
            persistent=False,
        )
        self.table = nn.Parameter(torch.randn(self.n_buckets, hidden) * init_std)
        self.unknown = nn.Parameter(torch.randn(hidden) * init_std)

    def averaged_table(self) -> torch.Tensor:
        """The averaged embedding of every bucket, ``avg @ table`` (n, H)."""
        return self.avg @ self.table

    def forward(self, pauses: torch.Tensor) -> torch.Tensor:
        buckets = pause_buckets(pauses, self.n_buckets, self.bucket_s)
        known = buckets >= 0
        if torch.onnx.is_in_onnx_export():  # ONNX Unique flattens its inverse: whole table
            out = self.averaged_table()[buckets.clamp(min=0)]
            return torch.where(known.unsqueeze(-1), out, self.unknown.to(out.dtype))
        used, inverse = torch.unique(buckets.clamp(min=0), return_inverse=True)
        averaged = self.avg[used] @ self.table  # once per distinct bucket in the batch
        out = averaged[inverse]
        return torch.where(known.unsqueeze(-1), out, self.unknown.to(out.dtype))


def make_silence(options: SilenceOptions | str | None, hidden: int) -> SilenceEncoding:
    """Build the encoding of ``model.silence`` (its options, or only its kind)."""
    try:
        opts = silence_options(options)
    except OptionError as err:
        raise PunctInputError(f"model.silence.{err}") from None
    kind = opts.kind or "none"
    if kind == "none":
        return SilenceEncoding(hidden)
    if kind == "continuous":
        return ContinuousSilence(hidden, max_s=opts.max_s)
    if kind == "discrete":
        return DiscreteSilence(hidden, opts.n_buckets, opts.bucket_s, opts.window_s,
                               opts.weighting, opts.sigma_s, opts.init_std)
    raise PunctInputError(f"unknown silence kind {kind!r}; expected one of {SILENCE_KINDS}")
