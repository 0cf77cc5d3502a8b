"""What recognition errors cost: each system on a reference set and on its ASR condition.

A set with an ASR condition has a twin (``<set>_asr`` from a recogniser, ``dev_asrsim``
from the simulated noise model, IWSLT's ``test2011asr``): the same talks in recogniser
words, decoded from those words and scored against the punctuated reference by alignment
(:mod:`punct.score.metrics`), or against labels projected onto them. The reference side
is the same system's figures on the reference set for the utterances of the twin's
language (the metrics group of the one language the twin holds; ``all`` when it holds
several or none), so both sides cover the same utterances where the twin keeps every
utterance of that language.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from punct.errors import PunctInputError
from punct.score.tables import load_scores


@dataclass
class AsrPenalty:
    """One system on one set and its ASR twin; F1 figures and WER in %."""

    set: str
    asr_set: str
    label_set: str
    ref_micro_f1: float
    asr_micro_f1: float
    micro_penalty: float
    ref_macro_f1: float
    asr_macro_f1: float
    macro_penalty: float
    wer: float | None


def _language_group(asr_doc: dict[str, Any]) -> str:
    langs = [name for name in asr_doc["metrics"] if name != "all" and "+" not in name]
    return langs[0] if len(langs) == 1 else "all"


def parse_pair(text: str) -> tuple[str, str]:
    """``set:asr_set`` -> (set, asr_set)."""
    ref_set, sep, asr_set = text.partition(":")
    if not sep or not ref_set or not asr_set or ":" in asr_set:
        raise PunctInputError(f"expected <reference set>:<ASR set>, got {text!r}")
    return ref_set, asr_set


def asr_penalty(exp_dir: Path, system: str, test_set: str, asr_set: str
                ) -> AsrPenalty | None:
    """``system`` on ``test_set`` against ``asr_set``; None when a score is missing."""
    paths = [exp_dir / system / f"decode_{name}" / "scores.json"
             for name in (test_set, asr_set)]
    if not all(p.is_file() for p in paths):
        return None
    ref_doc, asr_doc = (load_scores([path])[0] for path in paths)
    if ref_doc["label_set"] != asr_doc["label_set"]:
        raise PunctInputError(f"{system} is scored on {ref_doc['label_set']} on {test_set} but "
                              f"on {asr_doc['label_set']} on {asr_set}", paths[1])
    group = _language_group(asr_doc)
    if group not in ref_doc["metrics"]:
        raise PunctInputError(f"{system} on {test_set} has no figures for language {group!r}",
                              paths[0])
    ref, asr = ref_doc["metrics"][group], asr_doc["metrics"]["all"]
    wer = (asr.get("asr") or {}).get("wer")  # None: scored on labels projected onto its words
    r_micro, a_micro = 100 * ref["micro_f1"], 100 * asr["micro_f1"]
    r_macro, a_macro = 100 * ref["macro_f1"], 100 * asr["macro_f1"]
    return AsrPenalty(test_set, asr_set, ref_doc["label_set"], round(r_micro, 1), round(a_micro, 1),
                      round(r_micro - a_micro, 1), round(r_macro, 1), round(a_macro, 1),
                      round(r_macro - a_macro, 1),
                      None if wer is None else round(100 * wer, 1))
