"""A tiny Spanish corpus in the mTEDx layout, synthesised with eSpeak NG at test time.

``build_mtedx(root)`` writes ``root/es-es/data/{train,valid,test}/`` with talk-level flac
files (16 kHz; segments spoken one after another with silence between them),
``txt/segments`` and ``txt/<split>.es`` (cased, punctuated, a sound event
``(Aplausos)`` after each talk's last sentence), as OpenSLR 100's ``mtedx_es.tgz`` has
them. Sentences carry lexical cues: questions open with ``¿Por qué``, a comma precedes
``pero``, statements end with a period.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import soundfile

from punct.features.resample import resample_int16
from punct.synth.espeak import get_engine

RATE = 16000
GAP_S = 0.6
NAMES = ["María", "Juan", "Lucía", "Pedro", "Ana", "Carlos", "Elena", "Pablo"]
VERBS = ["compra", "busca", "vende", "mira", "pinta", "lleva"]
OBJECTS = ["pan", "flores", "libros", "fruta", "café", "zapatos", "cuadros", "mesas"]
PLACES = ["el mercado", "la plaza", "el puerto", "la escuela", "el parque", "la tienda"]
SPLITS = {"train": (6, 7), "valid": (2, 5), "test": (2, 5)}  # talks, segments per talk


def sentence(rng: random.Random) -> str:
    """One sentence with a lexical cue for its marks."""
    a, b = rng.sample(NAMES, 2)
    v1, v2 = rng.choice(VERBS), rng.choice(VERBS)
    o1, o2 = rng.choice(OBJECTS), rng.choice(OBJECTS)
    place = rng.choice(PLACES)
    kind = rng.random()
    if kind < 0.25:
        return f"¿Por qué {v1} {a} {o1} en {place}?"
    if kind < 0.6:
        return f"{a} {v1} {o1} en {place}, pero {b} {v2} {o2}."
    return f"{a} {v1} {o1} en {place}."


def talk_id(split: str, index: int) -> str:
    """A YouTube-like talk id (mTEDx names talks by their video id)."""
    return f"{split[:2]}X{index:02d}qZ7w_k"


def build_mtedx(root: Path, seed: int = 7) -> dict[str, int]:
    """Write the corpus; returns the number of segments per split."""
    engine = get_engine()
    rng = random.Random(seed)
    counts = {}
    for split, (talks, per_talk) in SPLITS.items():
        base = root / "es-es" / "data" / split
        (base / "wav").mkdir(parents=True, exist_ok=True)
        (base / "txt").mkdir(parents=True, exist_ok=True)
        seg_lines, text_lines = [], []
        for t in range(talks):
            talk = talk_id(split, t)
            pieces = [np.zeros(int(0.3 * RATE), dtype=np.int16)]
            pos = len(pieces[0])
            for s in range(per_talk):
                text = " ".join(sentence(rng) for _ in range(rng.choice((1, 2))))
                res = engine.synthesize(text, "es", rate=175)
                samples = resample_int16(res.samples, res.sample_rate, RATE)
                start, end = pos / RATE, (pos + len(samples)) / RATE
                seg_lines.append(f"{talk}_{s:04d} {talk} {start:.2f} {end:.2f}\n")
                text_lines.append(text + (" (Aplausos)" if s == per_talk - 1 else "") + "\n")
                gap = np.zeros(int(GAP_S * RATE), dtype=np.int16)
                pieces += [samples, gap]
                pos += len(samples) + len(gap)
            soundfile.write(base / "wav" / f"{talk}.flac", np.concatenate(pieces), RATE,
                            format="FLAC")
        (base / "txt" / "segments").write_text("".join(seg_lines), encoding="utf-8")
        (base / "txt" / f"{split}.es").write_text("".join(text_lines), encoding="utf-8")
        counts[split] = len(seg_lines)
    return counts
