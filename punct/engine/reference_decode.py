"""The engine as it was before the array path (issue 20): the oracle of the parity tests
and the "before" row of ``python -m punct.bin.bench_engine``.

Per-word Python: ``Featurizer.windows`` cuts every window as a dict of arrays,
``Featurizer.collate`` pads each batch, ``Aggregator`` adds every batch with
``np.add.at`` over all positions, and the casing rule loops over the words. Not used by
the recipes; :func:`punct.engine.decode.predict_words` must give the same numbers.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import torch

from punct.data.windows import batched
from punct.engine.aggregate import Aggregator
from punct.engine.decode import SENTENCE_FINAL, WordPredictions
from punct.engine.precision import resolve_bf16
from punct.engine.symbols import is_passthrough
from punct.labels import CAP_LABELS
from punct.models.base import Featurizer, PunctModel, WordSeq


def _to_numpy(x: torch.Tensor | None) -> np.ndarray | None:
    return None if x is None else x.detach().float().cpu().numpy()


def reference_predict_words(model: PunctModel, featurizer: Featurizer, seqs: Sequence[WordSeq],
                            window: int, stride: int, batch_size: int = 32,
                            bf16: bool | str = False, aggregate: str = "mean",
                            device: torch.device | str = "cpu", exclusive: bool = False
                            ) -> WordPredictions:
    """Today's ``predict_words`` before issue 20 (windows, collate, ``np.add.at``)."""
    device = torch.device(device)
    use_bf16 = resolve_bf16(bf16, device)
    n_words = max((s.offset + len(s) for s in seqs), default=0)
    n_labels = seqs[0].punct.shape[1] if seqs else 0
    start = time.perf_counter()
    windows = featurizer.windows(list(seqs), window, stride)
    order = sorted(range(len(windows)), key=lambda i: -len(windows[i]["word_ids"]))
    windows = [windows[i] for i in order]
    agg: Aggregator | None = None
    was_training = model.training
    model.eval()
    model.to(device)
    try:
        with torch.inference_mode():
            for chunk in batched(windows, batch_size):
                batch = {k: v.to(device) for k, v in featurizer.collate(chunk).items()}
                with torch.autocast(device_type=device.type, dtype=torch.bfloat16,
                                    enabled=use_bf16):
                    pred = model.predict(batch)
                if agg is None:
                    agg = Aggregator(n_words, n_labels, pred.cap is not None, aggregate,
                                     exclusive)
                agg.add(batch["word_ids"].cpu().numpy(), _to_numpy(pred.punct),
                        _to_numpy(pred.cap), _to_numpy(pred.extra.get("punct_logits")),
                        _to_numpy(pred.extra.get("cap_logits")))
    finally:
        model.train(was_training)
    if agg is None:
        agg = Aggregator(n_words, n_labels, False, aggregate)
    punct, cap, counts = agg.result()
    return WordPredictions(punct, cap, counts, time.perf_counter() - start, len(windows),
                           use_bf16)


def reference_rule_caps(marks: np.ndarray, seqs: Sequence[WordSeq], labels: Sequence[str]
                        ) -> np.ndarray:
    """The casing rule word by word: FIRST_CAP at utterance start and after a
    sentence-final mark, else O; pass-through words leave the capital to the next."""
    final = np.array([lab in SENTENCE_FINAL for lab in labels], dtype=bool)
    caps = np.zeros(marks.shape[0], dtype=np.int64)
    first_cap = CAP_LABELS.index("FIRST_CAP")
    for seq in seqs:
        start = True
        for i, word in enumerate(seq.words):
            if is_passthrough(word):
                continue
            g = seq.offset + i
            if start:
                caps[g] = first_cap
            start = bool(marks[g][final].any())
    return caps
