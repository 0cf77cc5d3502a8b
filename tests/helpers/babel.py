"""A tiny Hungarian corpus in the BABEL layout, synthesised with eSpeak NG at test time.

Recordings (``hu<NN>``; even ones PCM SPHERE, odd ones WAV, 16 kHz) alternate
``<no-speech>`` segments and read segments of one or two punctuated sentences written
for these tests (``<breath>`` between two sentences). The transcripts are plain
(lower-case, no marks), as BABEL's are; the punctuated copies with the same time stamps
go to a second folder (``BABEL_HU_PUNCT``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf

from punct.features.resample import resample_int16
from punct.synth.espeak import get_engine
from punct.wordtable import rows_from_text

RATE = 16000
LEAD_S = 0.4  # <no-speech> before the first and between read segments
VOICES = (("hu+m2", 150, 40), ("hu+f3", 165, 60), ("hu+m3", 170, 50))

# Original sentences, written for this fixture.
SENTENCES = (
    "Reggel korán keltem, mert sok dolgom volt.",
    "A piacon almát, körtét és szilvát vettem.",
    "Délután esett az eső, ezért otthon maradtunk.",
    "A szomszéd kutyája hangosan ugatott, de senki sem figyelt rá.",
    "Holnap elutazunk a Balatonhoz.",
    "A vonat késett, így lekéstük a csatlakozást.",
    "Anna levelet írt a nagymamájának, aki vidéken él.",
    "Este a kertben ültünk, és beszélgettünk.",
    "A könyvtár hétfőn zárva tart.",
    "Péter szerint a film túl hosszú volt, de a zene tetszett neki.",
    "A gyerekek az udvaron játszottak, amíg a szüleik főztek.",
    "Tegnap meglátogattuk a múzeumot.",
    "Ha szép idő lesz, kirándulni megyünk a hegyekbe.",
    "A tanár felírta a táblára a feladatot, majd leült.",
    "A kávé kihűlt, mire odaértem.",
    "Nyáron a tengerparton pihentünk, télen síelni jártunk.",
    "Az új híd tavaly készült el.",
    "A boltban nem volt kenyér, ezért kiflit vettem.",
    "Mari zongorázik, a bátyja pedig hegedül.",
    "A levelek lassan lehullottak a fákról.",
    "Amikor hazaértem, már mindenki aludt.",
    "A városban sok régi épület áll.",
    "Kata elfelejtette a kulcsát, így a szomszédnál várt.",
    "A vizsga nehéz volt, de mindenki átment.",
    "Vasárnap a nagyszüleinknél ebédeltünk.",
    "A folyó mellett futottam, amíg be nem sötétedett.",
    "Az orvos azt mondta, hogy pihennem kell.",
    "A macska a kályha mellett aludt.",
    "Reggelire teát, vajas kenyeret és mézet ettünk.",
    "A koncert nyolckor kezdődött, és éjfélig tartott.",
)


def segment_texts(reco: int, per_reco: int) -> list[list[str]]:
    """The sentences of each segment of recording ``reco``: one or two per segment."""
    out = []
    for k in range(per_reco):
        i = (reco * per_reco + k) * 2
        first = SENTENCES[i % len(SENTENCES)]
        out.append([first] if k % 2 else [first, SENTENCES[(i + 1) % len(SENTENCES)]])
    return out


def plain(text: str) -> str:
    """A BABEL-style transcript line: the words, lower-case, no punctuation."""
    return " ".join(r.word for r in rows_from_text("u", text))


def synth(text: str, voice: tuple[str, int, int]) -> np.ndarray:
    """16 kHz int16 samples of ``text`` spoken by eSpeak NG."""
    result = get_engine().synthesize(text, voice[0], voice[1], voice[2])
    return resample_int16(result.samples, result.sample_rate, RATE)


def write_recording(corpus: Path, punct: Path, subset: str, reco: int,
                    per_reco: int) -> None:
    """One recording's audio, plain transcript and punctuated transcript."""
    reco_id = f"hu{reco:02d}"
    gap = np.zeros(int(LEAD_S * RATE), dtype=np.int16)
    chunks: list[np.ndarray] = []
    plain_lines: list[str] = []
    punct_lines: list[str] = []
    pos = 0

    def add(samples: np.ndarray, plain_text: str, punct_text: str) -> None:
        nonlocal pos
        stamp = f"[{pos / RATE:.3f}]"
        plain_lines.extend([stamp, plain_text])
        punct_lines.extend([stamp, punct_text])
        chunks.append(samples)
        pos += len(samples)

    name, rate, pitch = VOICES[reco % len(VOICES)]
    voice = (name, rate + 6 * (reco // len(VOICES) % 4), pitch)  # no two alike in 12
    for sentences in segment_texts(reco, per_reco):
        add(gap, "<no-speech>", "<no-speech>")
        # a <breath> marker at the sentence boundary inside a segment
        add(synth(" ".join(sentences), voice),
            " <breath> ".join(plain(t) for t in sentences), " <breath> ".join(sentences))
    add(gap, "<no-speech>", "<no-speech>")
    stamp = f"[{pos / RATE:.3f}]"
    plain_lines.append(stamp)
    punct_lines.append(stamp)
    for root, lines in ((corpus, plain_lines), (punct, punct_lines)):
        trans = root / subset / "transcription"
        trans.mkdir(parents=True, exist_ok=True)
        (trans / f"{reco_id}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    audio = corpus / subset / "audio"
    audio.mkdir(parents=True, exist_ok=True)
    samples = np.concatenate(chunks)
    if reco % 2 == 0:
        sf.write(audio / f"{reco_id}.sph", samples, RATE, format="NIST", subtype="PCM_16")
    else:
        sf.write(audio / f"{reco_id}.wav", samples, RATE, subtype="PCM_16")


def write_babel_fixture(base: Path, n_recordings: int = 10, per_reco: int = 3,
                        subsets: tuple[str, ...] = ("training",)) -> tuple[Path, Path]:
    """Write ``base/corpus`` (BABEL layout, plain transcripts) and ``base/punct``
    (punctuated transcripts); recordings go round-robin to ``scripted/<subset>``."""
    corpus, punct = base / "corpus", base / "punct"
    for reco in range(n_recordings):
        subset = f"scripted/{subsets[reco % len(subsets)]}"
        write_recording(corpus, punct, subset, reco, per_reco)
    return corpus, punct
