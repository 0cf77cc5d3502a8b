"""A wav2vec2 / MMS CTC acoustic model (Hugging Face id or local dir) with its vocabulary:
windowed frame log-probabilities (:class:`CtcModel`) and spelling words in its vocabulary
(:func:`spell`); audio reaches its rate through ``punct.features.resample``. Shared by the ``ctc``
aligner (:mod:`punct.align.ctc_aligner`, which describes the windowing and spelling) and
the CTC recogniser (:mod:`punct.asr.ctc_asr`).
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from punct.data.audio import AlignRequest
from punct.errors import MissingDataError, PunctInputError


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
