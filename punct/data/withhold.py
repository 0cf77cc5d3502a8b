"""Which utterances have their audio withheld: a deterministic, seeded share.

Utterances are ranked by a SHA-256 hash of ``"<seed>:<utt_id>"`` and the first
``round(share * n)`` are withheld. The choice depends only on the ids, the share and the
seed (not on file order or on Python's hash randomisation), so the training featurizer
(``featurizer.withhold_audio``) and ``punct.bin.subset_audio`` (mixed test sets) give
the same answer on every machine.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from punct.errors import PunctInputError


def hash_rank(utt_id: str, seed: int) -> str:
    """The sort key of one utterance."""
    return hashlib.sha256(f"{seed}:{utt_id}".encode()).hexdigest()


def select_withheld(utt_ids: Iterable[str], share: float, seed: int) -> set[str]:
    """The ``round(share * n)`` utterances (of the distinct ``utt_ids``) to withhold."""
    if not 0.0 <= float(share) <= 1.0:
        raise PunctInputError(f"the share of withheld audio must be in [0, 1], got {share}")
    ids = sorted(set(utt_ids), key=lambda u: (hash_rank(u, seed), u))
    return set(ids[: round(float(share) * len(ids))])
