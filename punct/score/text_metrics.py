"""Text metrics of the restored, cased text against the reference (sacrebleu).

Each utterance's text is rendered from its word table (``render_rows``: surface forms
with their marks), so the comparison is case- and punctuation-sensitive: BLEU with the
13a tokeniser (marks become tokens), chrF (character 6-grams, marks included) and TER
(case-sensitive, marks kept). ``baseline`` is the same for the all-O hypothesis: the
lower-cased words without any mark, what an ASR system outputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from punct.extras import require
from punct.wordtable import WordRow, render_rows


def _baseline_rows(rows: Sequence[WordRow]) -> list[WordRow]:
    return [WordRow(r.utt_id, r.idx, r.word, r.word, (), "O", r.start, r.end, r.pause_after)
            for r in rows]


def corpus_scores(refs: Sequence[str], hyps: Sequence[str]) -> dict[str, Any]:
    """Corpus BLEU, chrF and TER (in %, sacrebleu's scale) with their signatures."""
    metrics = require("sacrebleu.metrics", "train", "BLEU/chrF/TER")  # optional extra
    bleu, chrf, ter = metrics.BLEU(), metrics.CHRF(), metrics.TER(case_sensitive=True)
    out: dict[str, Any] = {}
    for name, metric in (("bleu", bleu), ("chrf", chrf), ("ter", ter)):
        out[name] = round(float(metric.corpus_score(list(hyps), [list(refs)]).score), 4)
        out[f"{name}_signature"] = str(metric.get_signature())
    return out


def text_metrics(ref: Mapping[str, Sequence[WordRow]], hyp: Mapping[str, Sequence[WordRow]]
                 ) -> dict[str, Any]:
    """BLEU/chrF/TER of the hypothesis and of the all-O baseline (utterances of ``ref``)."""
    utts = list(ref)
    refs = [render_rows(ref[u]) for u in utts]
    hyps = [render_rows(hyp[u]) if u in hyp else "" for u in utts]
    base = [render_rows(_baseline_rows(ref[u])) for u in utts]
    return {**corpus_scores(refs, hyps), "baseline": corpus_scores(refs, base),
            "segments": len(utts)}
