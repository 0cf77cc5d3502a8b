"""A simulated ASR condition of a text set: seeded word errors at a target WER.

The noise model (docs/ASR.md, "Simulated ASR output"): each reference word is, with the
shares of ``target_wer`` given by ``shares`` (substitution, deletion, insertion; default
0.6 / 0.25 / 0.15, substitutions dominating as in recogniser output), replaced by a word
that sounds alike (a training word at a small phone edit distance in the CMU dictionary,
:mod:`punct.data.confusable`; a frequent training word where it has none), deleted, or
preceded by an inserted frequent training word. The draws of an utterance come from a
generator seeded by (seed, utterance id) (:func:`punct.data.augment.utterance_rng`), so
the set is the same on every run and machine.

The hypothesis words then go through the same path as a recogniser's output
(:mod:`punct.align.asr_condition`): labels projected from the reference
(:mod:`punct.data.projection`) into ``words.tsv``, the reference kept in
``ref_words.tsv``, the measured WER (from the alignment, so slightly below the target
where a substitute equals the word or edits meet) in ``asr.json``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from punct.atomic import atomic_write_text
from punct.config import AugmentSection
from punct.data.augment import Augmenter, utterance_rng, word_counts
from punct.data.confusable import load_neighbours
from punct.data.projection import project_utterance
from punct.data.word_align import EditCounts
from punct.errors import PunctInputError
from punct.kaldi import copy_set_markers, read_kv, spk2utt_from_utt2spk, write_kv
from punct.wordtable import WordRow, read_word_table, render_rows, write_word_table

DEFAULT_SHARES = (0.6, 0.25, 0.15)


def noise_options(target_wer: float, shares: Sequence[float] = DEFAULT_SHARES,
                  source: str = "confusable") -> AugmentSection:
    """The per-word rates of substitution, deletion and insertion for ``target_wer``."""
    if not 0.0 < target_wer <= 0.6:
        raise PunctInputError(f"target WER {target_wer} is outside (0, 0.6]")
    if len(shares) != 3 or min(shares) < 0 or abs(sum(shares) - 1.0) > 1e-6:
        raise PunctInputError(f"shares of sub, del, ins must be three numbers >= 0 summing "
                              f"to 1, got {list(shares)}")
    sub, dele, ins = (target_wer * s for s in shares)
    # a deleted word cannot also be substituted: the substitution rate is of all words
    return AugmentSection(sub_rate=sub, del_rate=dele, ins_rate=ins, sub_source=source)


def simulate_asr_set(data_dir: Path, train_dir: Path, out_dir: Path, target_wer: float,
                     seed: int = 1, shares: Sequence[float] = DEFAULT_SHARES,
                     source: str = "confusable") -> dict[str, object]:
    """Write ``out_dir``, the simulated ASR condition of ``data_dir`` with substitutes
    from the words of ``train_dir`` (module docstring); returns the ``asr.json`` summary."""
    data_dir, out_dir = Path(data_dir), Path(out_dir)
    options = noise_options(target_wer, shares, source)
    counts = word_counts(read_word_table(Path(train_dir) / "words.tsv").values())
    neighbours = (load_neighbours(out_dir / "confusable_neighbours.json", counts,
                                  options.max_phone_distance)
                  if source == "confusable" else None)
    augmenter = Augmenter(options, counts, neighbours)
    ref = read_word_table(data_dir / "words.tsv")
    projected: dict[str, list[WordRow]] = {}
    total, moved, dropped = EditCounts(), 0, 0
    for utt, rows in ref.items():
        noisy, _ = augmenter.augment(rows, utterance_rng(seed, 0, utt))
        hyp = [WordRow(utt, i, r.word, r.word, (), "O", r.start, r.end, r.pause_after)
               for i, r in enumerate(noisy)]
        result = project_utterance(rows, hyp, what=f"utterance {utt}", path=data_dir)
        projected[utt] = result.rows
        total = total + result.counts
        moved, dropped = moved + result.moved, dropped + result.dropped
    write_word_table(out_dir / "words.tsv", projected)
    write_word_table(out_dir / "ref_words.tsv", ref)
    write_kv(out_dir / "text", {u: render_rows(rows) for u, rows in projected.items()})
    for name in ("utt2spk", "utt2lang"):
        if (data_dir / name).is_file():
            write_kv(out_dir / name, read_kv(data_dir / name))
    if (data_dir / "utt2spk").is_file():
        write_kv(out_dir / "spk2utt", spk2utt_from_utt2spk(read_kv(data_dir / "utt2spk")))
    copy_set_markers(data_dir, out_dir)
    summary: dict[str, object] = {
        "recognizer": "simulated", "target_wer": target_wer, "shares": list(shares),
        "substitutes": source, "seed": seed, "utterances": len(ref), **total.as_dict(),
        "marks_moved": moved, "marks_dropped": dropped}
    atomic_write_text(out_dir / "asr.json", json.dumps(summary, indent=1) + "\n")
    return summary
