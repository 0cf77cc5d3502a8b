"""Text metrics of the restored, cased text against the reference (sacrebleu).

Each utterance's text is rendered from its word table (``render_rows``: surface forms
with their marks), so the comparison is case- and punctuation-sensitive: BLEU with the
13a tokeniser (marks become tokens), chrF (character 6-grams, marks included) and TER
(case-sensitive, marks kept). ``baseline`` is the same for the all-O hypothesis: the
lower-cased words without any mark, what an ASR system outputs.

An utterance whose hypothesis words differ from the reference's (ASR output, docs/ASR.md)
is compared piece by piece: the word aligner (:mod:`punct.data.word_align`) pairs its
words, and both sides are cut after each reference sentence end (PERIOD, QUESTION,
EXCLAMATION), so each segment is a reference sentence and the hypothesis words aligned
to it. TER's shift search costs about the square of the segment length, and a talk-long
utterance with recognition errors took ~25 s (IWSLT, 1,000 words); shifts then stay
within a sentence. Utterances with the reference's words stay whole, as before.

The baseline depends on the reference alone, yet every system scored on a set paid for
it again: TER's shift search on talk-long utterances is most of a decode job's scoring
(about 11 s for IWSLT's test2011, test2011_full, dev and dev_asrsim on one core). With
``cache_dir`` (the scorer passes ``.text_baseline/`` beside the reference word table)
the baseline's scores are kept in a file named by a hash of exactly what they were
computed from (sacrebleu's version, the metric options, every reference and baseline
string), so a later system gets the same numbers without the search. A folder that
cannot be written, or a damaged file, only means computing them again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from punct.atomic import atomic_write_text
from punct.data.word_align import align_words
from punct.extras import require
from punct.labels import SENTENCE_END
from punct.wordtable import WordRow, render_rows


def _baseline_rows(rows: Sequence[WordRow]) -> list[WordRow]:
    return [WordRow(r.utt_id, r.idx, r.word, r.word, (), "O", r.start, r.end, r.pause_after)
            for r in rows]


BASELINE_CACHE = ".text_baseline"
"""The folder, beside a reference word table, that keeps its baseline's scores."""
METRIC_OPTIONS = "BLEU() CHRF() TER(case_sensitive=True)"
"""What ``corpus_scores`` computes (part of the baseline cache's key: change both)."""
SCORE_KEYS = ("bleu", "chrf", "ter")


def corpus_scores(refs: Sequence[str], hyps: Sequence[str]) -> dict[str, Any]:
    """Corpus BLEU, chrF and TER (in %, sacrebleu's scale) with their signatures."""
    metrics = require("sacrebleu.metrics", "train", "BLEU/chrF/TER")  # optional extra
    bleu, chrf, ter = metrics.BLEU(), metrics.CHRF(), metrics.TER(case_sensitive=True)
    out: dict[str, Any] = {}
    for name, metric in (("bleu", bleu), ("chrf", chrf), ("ter", ter)):
        out[name] = round(float(metric.corpus_score(list(hyps), [list(refs)]).score), 4)
        out[f"{name}_signature"] = str(metric.get_signature())
    return out


def segments(ref: Sequence[WordRow], hyp: Sequence[WordRow]
             ) -> list[tuple[list[WordRow], list[WordRow]]]:
    """The (reference, hypothesis) segments of one utterance: the whole utterance when the
    words are the same (case-insensitive), else its reference sentences with the
    hypothesis words aligned to them (module docstring)."""
    if [r.word.lower() for r in ref] == [h.word.lower() for h in hyp]:
        return [(list(ref), list(hyp))]
    out: list[tuple[list[WordRow], list[WordRow]]] = []
    ref_part: list[WordRow] = []
    hyp_part: list[WordRow] = []
    for pair in align_words([r.word for r in ref], [h.word for h in hyp]):
        if pair.hyp is not None:
            hyp_part.append(hyp[pair.hyp])
        if pair.ref is not None:
            ref_part.append(ref[pair.ref])
            if SENTENCE_END & set(ref[pair.ref].punct):
                out.append((ref_part, hyp_part))
                ref_part, hyp_part = [], []
    if ref_part or hyp_part:
        out.append((ref_part, hyp_part))
    return out


def baseline_key(refs: Sequence[str], base: Sequence[str]) -> str:
    """The name of the baseline's scores in the cache: a hash of all they depend on."""
    sacrebleu = require("sacrebleu", "train", "BLEU/chrF/TER")
    text = json.dumps([sacrebleu.__version__, METRIC_OPTIONS, list(refs), list(base)],
                      ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def baseline_scores(refs: Sequence[str], base: Sequence[str],
                    cache_dir: Path | None = None) -> dict[str, Any]:
    """``corpus_scores(refs, base)``, kept in ``cache_dir`` (module docstring)."""
    if cache_dir is None:
        return corpus_scores(refs, base)
    path = cache_dir / f"{baseline_key(refs, base)}.json"
    try:
        cached = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(cached, dict) and all(key in cached for key in SCORE_KEYS):
            return cached
    except (OSError, ValueError):
        pass  # not there yet, or damaged: computed again
    scores = corpus_scores(refs, base)
    try:
        cache_dir.mkdir(exist_ok=True)
        atomic_write_text(path, json.dumps(scores, ensure_ascii=False) + "\n")
    except OSError:
        pass  # a reference folder we may not write to: no cache
    return scores


def text_metrics(ref: Mapping[str, Sequence[WordRow]], hyp: Mapping[str, Sequence[WordRow]],
                 cache_dir: Path | None = None) -> dict[str, Any]:
    """BLEU/chrF/TER of the hypothesis and of the all-O baseline (utterances of ``ref``;
    the baseline's kept in ``cache_dir`` when given)."""
    refs, hyps, base = [], [], []
    for utt, ref_rows in ref.items():
        for ref_part, hyp_part in segments(ref_rows, hyp.get(utt, [])):
            refs.append(render_rows(ref_part))
            hyps.append(render_rows(hyp_part))
            base.append(render_rows(_baseline_rows(ref_part)))
    return {**corpus_scores(refs, hyps), "baseline": baseline_scores(refs, base, cache_dir),
            "segments": len(refs)}
