"""``ctc``: forced alignment with a wav2vec2 / MMS CTC model (Hugging Face id or local dir).

1. **Emissions.** The utterance is resampled to the model's rate, normalised like the
   model's feature extractor does, and run through ``AutoModelForCTC`` in windows of
   ``chunk_seconds`` plus ``context_seconds`` on each side; only each window's central
   frames are kept, so memory grows with the window, not with the recording. Window
   starts are whole multiples of the model's frame stride, so frame k of every window
   is the same global frame as in a single pass.
2. **Tokens.** Each word is spelled in the model's vocabulary: the vocabulary's case,
   then accents stripped (NFKD) when only the base letter is known; punctuation and
   symbols the vocabulary lacks (apostrophes, hyphens) are dropped; any other unknown
   character is a :class:`~punct.errors.PunctInputError` naming the utterance and the
   word. The model's word delimiter (``|``) goes between words when it has one.
3. **Viterbi** over the CTC trellis (:mod:`punct.align.ctc`); a word runs from the first
   frame of its first character to the end of the last frame of its last character.
4. **Mismatch.** ``gap_per_frame``, the forced path's log-probability per frame below the
   unconstrained best, is near 0 for audio that says the transcript; above
   ``max_gap_per_frame`` (or when the audio has too few frames for the characters) the
   utterance fails with a PunctInputError (``on_mismatch="error"``) or is skipped with a
   warning (``"skip"``).
"""

from __future__ import annotations

import dataclasses
import math
import sys
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from punct.align.base import Aligner, AlignRequest, AlignResult, check_plausible
from punct.align.ctc import CtcAlignError, CtcPath, viterbi, word_spans
from punct.data.timed import TimedWord
from punct.errors import MissingDataError, PunctInputError
from punct.extras import require


@dataclass(frozen=True)
class CtcConfig:
    """Model, windowing and mismatch settings (seconds)."""

    model: str = ""                  # Hugging Face id or local directory
    device: str = "cpu"
    chunk_seconds: float = 20.0      # central part of each model window
    context_seconds: float = 1.0     # extra audio on each side of a window
    use_word_delimiter: bool = True  # put the model's "|" between words (if it has one)
    max_gap_per_frame: float = 1.5   # nats per frame below the free best: mismatch
    on_mismatch: str = "error"       # "error" or "skip"


def spell(word: str, vocab: Mapping[str, int], lower: bool) -> list[int] | None:
    """Token ids of ``word`` in ``vocab`` or None when a letter/digit cannot be mapped.

    Characters are tried as they are, in the vocabulary's case, then without accents;
    unknown punctuation/symbol characters are dropped.
    """
    out: list[int] = []
    for ch in word:
        cased = ch.lower() if lower else ch.upper()
        base = "".join(c for c in unicodedata.normalize("NFKD", cased)
                       if not unicodedata.combining(c))
        for cand in (ch, cased, base):
            if cand in vocab:
                out.append(vocab[cand])
                break
        else:
            if len(base) > 1 and all(c in vocab for c in base):  # e.g. a ligature
                out.extend(vocab[c] for c in base)
            elif unicodedata.category(ch)[0] in "PSZ":
                continue
            else:
                return None
    return out


class CtcModel:
    """A CTC acoustic model with its vocabulary; :meth:`emissions` gives log-probs."""

    def __init__(self, name_or_path: str, device: str = "cpu"):
        from transformers import (  # heavy, not needed by every command: the CTC model (~3 s)
            AutoModelForCTC,
            AutoProcessor,
        )

        if not name_or_path:
            raise MissingDataError("the ctc aligner needs a model: --ctc-model "
                                   "<Hugging Face id or local dir>")
        local = Path(name_or_path)
        where = name_or_path if local.exists() else None
        looks_local = name_or_path.startswith((".", "/", "~")) or name_or_path.count("/") > 1
        if where is None and looks_local:
            raise MissingDataError("CTC model directory not found (give a local directory "
                                   "or a Hugging Face id such as facebook/mms-1b-all)", local)
        try:
            processor = AutoProcessor.from_pretrained(name_or_path)
            model = AutoModelForCTC.from_pretrained(name_or_path)
        except (OSError, ValueError) as err:
            raise MissingDataError(f"cannot load CTC model {name_or_path!r}: "
                                   f"{str(err).splitlines()[0]}", where) from err
        self.name = name_or_path
        self.model = model.eval().to(device)
        self.device = device
        tokenizer = getattr(processor, "tokenizer", processor)
        extractor = getattr(processor, "feature_extractor", None)
        self.sample_rate = int(getattr(extractor, "sampling_rate", 16000))
        self.normalize = bool(getattr(extractor, "do_normalize", True))
        self.vocab: dict[str, int] = dict(tokenizer.get_vocab())
        blank = tokenizer.pad_token_id
        self.blank = int(blank if blank is not None else 0)
        delim = getattr(tokenizer, "word_delimiter_token", None)
        self.delimiter = self.vocab.get(delim) if delim else None
        letters = [t for t in self.vocab if len(t) == 1 and t.isalpha()]
        self.lower = sum(t.islower() for t in letters) >= sum(t.isupper() for t in letters)
        self.stride = int(math.prod(model.config.conv_stride))

    def n_frames(self, n_samples: int) -> int:
        """Frames the model gives for ``n_samples`` input samples."""
        length = self.model._get_feat_extract_output_lengths(torch.tensor(n_samples))
        return int(length)

    def emissions(self, samples: np.ndarray, chunk_seconds: float = 20.0,
                  context_seconds: float = 1.0) -> torch.Tensor:
        """(T, V) float32 log-probs of mono ``samples`` (at ``sample_rate``), windowed."""
        with torch.inference_mode():
            return self._emissions(torch, samples, chunk_seconds, context_seconds)

    def _emissions(self, torch: Any, samples: np.ndarray, chunk_seconds: float,
                   context_seconds: float) -> torch.Tensor:
        x = np.asarray(samples, dtype=np.float32)
        if self.normalize:
            x = (x - x.mean()) / math.sqrt(float(x.var()) + 1e-7)
        n_total = self.n_frames(len(x))
        if n_total <= 0:
            return torch.zeros((0, len(self.vocab)))
        st = self.stride
        core = max(1, round(chunk_seconds * self.sample_rate / st)) * st
        ctx = max(0, round(context_seconds * self.sample_rate / st)) * st
        rf = len(x) - (n_total - 1) * st  # receptive field (>= the first frame's span)
        out: torch.Tensor | None = None
        for a in range(0, n_total * st, core):
            w0 = max(0, a - ctx)
            w1 = min(len(x), a + core + ctx + rf)
            inp = torch.from_numpy(x[w0:w1]).unsqueeze(0).to(self.device)
            logits = self.model(inp).logits[0].float().log_softmax(-1).cpu()
            f0, f1 = a // st, min(n_total, (a + core) // st)
            got = logits[f0 - w0 // st: f1 - w0 // st]
            if out is None:
                out = torch.empty((n_total, logits.shape[1]), dtype=torch.float32)
            if len(got) != f1 - f0:  # pragma: no cover - guarded by the window arithmetic
                raise RuntimeError(f"window {w0}-{w1}: {len(got)} frames, expected {f1 - f0}")
            out[f0:f1] = got
        assert out is not None
        return out

    def tokens(self, request: AlignRequest, use_delimiter: bool = True
               ) -> tuple[list[int], list[int], list[int]]:
        """(all token ids, tokens per word, separator tokens after each word)."""
        ids: list[int] = []
        counts: list[int] = []
        seps: list[int] = []
        delim = self.delimiter if use_delimiter else None
        for i, word in enumerate(request.words):
            toks = spell(word, self.vocab, self.lower)
            if not toks:
                what = ("has characters the model's vocabulary cannot spell" if toks is None
                        else "has no character the model's vocabulary can spell")
                raise PunctInputError(
                    f"utterance {request.utt_id}: word {i + 1} {word!r} {what} "
                    f"(model {self.name})", request.wav_scp, request.wav_line)
            ids.extend(toks)
            counts.append(len(toks))
            sep = 1 if delim is not None and i + 1 < len(request.words) else 0
            if sep:
                ids.append(delim)  # type: ignore[arg-type]
            seps.append(sep)
        return ids, counts, seps


def resample(samples: np.ndarray, rate: int, target: int) -> np.ndarray:
    """Float32 ``samples`` at ``rate`` Hz resampled to ``target`` Hz (polyphase)."""
    if rate == target:
        return samples.astype(np.float32, copy=False)
    signal = require("scipy.signal", "align", "resampling audio")  # optional extra: scipy
    g = math.gcd(rate, target)
    out = signal.resample_poly(samples.astype(np.float64), target // g, rate // g)
    return out.astype(np.float32)


class CtcAligner(Aligner):
    """CTC forced alignment with a wav2vec2/MMS model (see the module docstring)."""

    name = "ctc"

    def __init__(self, config: CtcConfig | None = None, ctc_model: str | None = None,
                 ctc_device: str | None = None, model: Any = None, **_: object):
        cfg = config or CtcConfig()
        if ctc_model:
            cfg = dataclasses.replace(cfg, model=ctc_model)
        if ctc_device:
            cfg = dataclasses.replace(cfg, device=ctc_device)
        if cfg.on_mismatch not in ("error", "skip"):
            raise ValueError(f"on_mismatch must be 'error' or 'skip', not {cfg.on_mismatch!r}")
        self.config = cfg
        self.model = model if model is not None else CtcModel(cfg.model, cfg.device)

    def align(self, request: AlignRequest) -> AlignResult | None:
        samples, rate = request.load_audio()
        duration = len(samples) / rate
        if not request.words:
            return AlignResult([], duration)
        ids, counts, seps = self.model.tokens(request, self.config.use_word_delimiter)
        x = resample(samples, rate, self.model.sample_rate)
        em = self.model.emissions(x, self.config.chunk_seconds, self.config.context_seconds)
        try:
            path = viterbi(em, ids, self.model.blank)
        except CtcAlignError as err:
            return self._mismatch(request, str(err))
        if path.gap_per_frame > self.config.max_gap_per_frame:
            return self._mismatch(
                request, f"the forced path scores {path.gap_per_frame:.2f} nats per frame "
                         f"below the best free path (allowed {self.config.max_gap_per_frame:g})")
        words = self.timings(request, path, counts, seps, duration)
        check_plausible(request, words, duration)
        return AlignResult(words, duration)

    def timings(self, request: AlignRequest, path: CtcPath, counts: list[int],
                seps: list[int], duration: float) -> list[TimedWord]:
        """Frame spans -> seconds (frame k covers k * shift .. (k + 1) * shift)."""
        shift = self.model.stride / self.model.sample_rate
        return [TimedWord(w, round(min(s * shift, duration), 4),
                            round(min(e * shift, duration), 4))
                for w, (s, e) in zip(request.words, word_spans(path, counts, seps),
                                     strict=True)]

    def _mismatch(self, request: AlignRequest, why: str) -> None:
        message = f"utterance {request.utt_id}: transcript does not fit the audio: {why}"
        if self.config.on_mismatch == "error":
            raise PunctInputError(message, request.wav_scp, request.wav_line)
        print(f"warning: {message}; no timings", file=sys.stderr)
        return None
