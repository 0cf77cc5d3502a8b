"""A small corpus in mintzai-ST's layout, spoken by eSpeak NG, for the recipe's tests.

``build_fixture(out)`` writes ``out/MintzAI-ST/v1.0/{es-eu,eu-es}/{train,dev,test}/
{audio,transcriptions,translations}``: one audio file per segment (AAC in m4a when PyAV
can encode it, else wav) and one text file per segment named by language. The Spanish
and Basque sentences are written for these tests (parliamentary style: questions, thanks,
quotations, enumerations) from templates, so that a tiny model can learn their marks.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

import numpy as np
import soundfile

from punct.synth.espeak import get_engine

NAMES = ("Arrieta", "Urkullu", "Mendia", "Etxeberria", "Zabala", "Otxoa")
ES_THINGS = ("el presupuesto", "la ley de vivienda", "el plan de empleo", "la reforma fiscal",
             "el informe anual", "la nueva escuela")
EU_THINGS = ("aurrekontua", "etxebizitza legea", "enplegu plana", "zerga erreforma",
             "urteko txostena", "eskola berria")
ES_AREAS = ("Hacienda", "Salud", "Empleo", "Cultura")
EU_AREAS = ("Ogasun", "Osasun", "Enplegu", "Kultura")


def es_sentence(i: int) -> str:
    """The i-th Spanish segment (five patterns)."""
    name, thing = NAMES[i % len(NAMES)], ES_THINGS[(i // 2) % len(ES_THINGS)]
    area = ES_AREAS[i % len(ES_AREAS)]
    return [
        f"Señor {name}, ¿cuándo va a presentar el Gobierno {thing}?",
        f"Gracias, señora presidenta. El consejero de {area} ha dicho que {thing} llegará "
        "el próximo año.",
        f"Nosotros votaremos en contra: no estamos de acuerdo con {thing}.",
        f"El señor {name} dijo: «{thing} es una prioridad».",
        f"Muchas gracias. ¿Por qué no habla usted de {thing}, señor {name}?",
    ][i % 5]


def eu_sentence(i: int) -> str:
    """The i-th Basque segment (five patterns)."""
    name, thing = NAMES[i % len(NAMES)], EU_THINGS[(i // 2) % len(EU_THINGS)]
    area = EU_AREAS[i % len(EU_AREAS)]
    return [
        f"{name} jauna, noiz aurkeztuko du Gobernuak {thing}?",
        f"Eskerrik asko, presidente andrea. {area} sailburuak esan du {thing} datorren "
        "urtean iritsiko dela.",
        f"Guk aurka bozkatuko dugu: ez gaude ados {thing} honekin.",
        f"{name} jaunak esan zuen: «{thing} lehentasuna da».",
        f"Eskerrik asko. Zergatik ez duzu {thing} aipatzen, {name} jauna?",
    ][i % 5]


DIRECTIONS = {"es-eu": ("es", "eu", es_sentence, eu_sentence),
              "eu-es": ("eu", "es", eu_sentence, es_sentence)}
SPLIT_SIZES = {"train": 20, "dev": 5, "test": 5}
FIRST = {"train": 0, "dev": 100, "test": 200}


def write_m4a(path: Path, samples: np.ndarray, rate: int) -> None:
    """Encode mono float samples as AAC in an MPEG-4 container with PyAV."""
    import av  # optional: the caller checks can_encode_m4a()

    with av.open(str(path), "w", format="mp4") as container:
        stream = container.add_stream("aac", rate=rate, layout="mono")
        frame = av.AudioFrame.from_ndarray(samples.astype(np.float32)[None, :], format="flt",
                                           layout="mono")
        frame.rate = rate
        for packet in stream.encode(frame):
            container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)


def can_encode_m4a() -> bool:
    """Whether PyAV with an AAC encoder is installed."""
    try:
        import av
    except ImportError:
        return False
    return "aac" in av.codecs_available


def build_fixture(out: Path, audio_format: str | None = None,
                  sizes: dict[str, int] | None = None) -> Path:
    """Write the fixture corpus under ``out``; returns the folder holding ``v1.0``.

    ``audio_format``: "m4a" or "wav" (default: m4a when PyAV can encode it).
    """
    fmt = audio_format or ("m4a" if can_encode_m4a() else "wav")
    sizes = sizes or SPLIT_SIZES
    engine = get_engine()
    root = out / "MintzAI-ST"
    for direction, (src, tgt, speak, translate) in DIRECTIONS.items():
        voice = "es" if src == "es" else "eu"
        for split, count in sizes.items():
            base = root / "v1.0" / direction / split
            for sub in ("audio", "transcriptions", "translations"):
                (base / sub).mkdir(parents=True, exist_ok=True)
            for k in range(count):
                i = FIRST[split] + k
                seg = f"pleno{2011 + i % 8}_{i:04d}"
                text = speak(i)
                result = engine.synthesize(text, voice, rate=170 + 5 * (i % 4))
                samples = result.samples.astype(np.float32) / 32768.0
                audio = base / "audio" / f"{seg}.{fmt}"
                if fmt == "m4a":
                    write_m4a(audio, samples, result.sample_rate)
                else:
                    soundfile.write(audio, samples, result.sample_rate, subtype="PCM_16")
                (base / "transcriptions" / f"{seg}.{src}").write_text(text + "\n",
                                                                       encoding="utf-8")
                (base / "translations" / f"{seg}.{tgt}").write_text(translate(i) + "\n",
                                                                     encoding="utf-8")
    return root


def make_tarball(src: Path, tarball: Path) -> Path:
    """``src`` (the folder holding v1.0) as a gzipped tarball with ``src.name`` on top."""
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(src, arcname=src.name)
    return tarball
