"""A user's ESPnet ASR model: its files, CTC segmentation of words, and decoding.

An ESPnet model is a training config (``config.yaml``, holding the token list and the
frontend) and a parameter file (``*.pth``). :func:`model_files` finds both from a
directory or a ``.pth`` file; :class:`EspnetCtc` wraps
``espnet2.bin.asr_align.CTCSegmentation`` to time each word of a transcript (every word
is one "utterance" of the segmentation, so its start and end come out directly); and
:class:`EspnetAsr` wraps ``espnet2.bin.asr_inference.Speech2Text``. espnet2 is the
optional extra (``./setup.sh --with-espnet``), imported when a model is loaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

from punct.asr.espnet_env import import_espnet2
from punct.data.timed import TimedWord
from punct.errors import MissingDataError, PunctInputError
from punct.features.resample import resample

#: Parameter files tried in this order in a model directory (ESPnet's usual names).
MODEL_FILE_NAMES = ("model.pth", "valid.acc.ave.pth", "valid.acc.best.pth",
                    "valid.loss.ave.pth", "valid.loss.best.pth")


def model_files(path: str | Path) -> tuple[Path, Path]:
    """``(config.yaml, parameters.pth)`` of an ESPnet ASR model.

    ``path`` is a ``.pth`` file with ``config.yaml`` beside it, or a directory holding
    ``config.yaml`` and one of :data:`MODEL_FILE_NAMES` (or a single other ``*.pth``,
    ``checkpoint.pth`` aside). MissingDataError names what is missing.
    """
    path = Path(path)
    if path.is_file():
        config, params = path.parent / "config.yaml", path
    elif path.is_dir():
        config = path / "config.yaml"
        named = [path / n for n in MODEL_FILE_NAMES if (path / n).is_file()]
        others = sorted(p for p in path.glob("*.pth") if p.name != "checkpoint.pth")
        if named:
            params = named[0]
        elif len(others) == 1:
            params = others[0]
        else:
            found = ", ".join(p.name for p in others) or "none"
            raise MissingDataError(f"ESPnet model directory: no parameter file to pick "
                                   f"(expected one of {', '.join(MODEL_FILE_NAMES)} or a "
                                   f"single *.pth; found {found})", path)
    else:
        raise MissingDataError("ESPnet model not found (give a directory with config.yaml "
                               "and a .pth, or the .pth itself)", path)
    if not config.is_file():
        raise MissingDataError("ESPnet model config not found (config.yaml beside the .pth)",
                               config)
    return config, params


def frontend_rate(train_args: Any) -> int:
    """The sample rate the model's frontend expects (ESPnet's default: 16 kHz)."""
    conf = getattr(train_args, "frontend_conf", None) or {}
    return int(conf.get("fs", 16000))


class EspnetCtc:
    """Word timings from an ESPnet ASR model's CTC output (CTC segmentation)."""

    def __init__(self, model: str | Path, device: str = "cpu"):
        config, params = model_files(model)
        asr_align = import_espnet2("espnet2.bin.asr_align")
        self.name = str(model)
        self.segmenter = asr_align.CTCSegmentation(
            asr_train_config=str(config), asr_model_file=str(params),
            ngpu=1 if str(device).startswith("cuda") else 0, kaldi_style_text=False,
            time_stamps="auto")
        self.sample_rate = frontend_rate(self.segmenter.asr_train_args)

    def align_words(self, samples: np.ndarray, rate: int, words: list[str], doc_id: str,
                    where: tuple[str | None, int | None] = (None, None)) -> list[TimedWord]:
        """One :class:`TimedWord` per word (seconds from the start of ``samples``).

        ``doc_id`` and ``where`` (file, line) name the input in errors: audio too short
        for the transcript, or a word the model's tokenizer turns into nothing.
        """
        if not words:
            return []
        x = resample(samples, rate, self.sample_rate, "espnet")
        duration = len(samples) / rate
        try:
            task = self.segmenter(x, list(words), fs=self.sample_rate, name=doc_id)
        except (AssertionError, IndexError, ValueError) as err:
            # ctc_segmentation asserts on audio shorter than the text
            raise PunctInputError(f"{doc_id}: CTC segmentation failed with model "
                                  f"{self.name}: {err or type(err).__name__}", *where) from err
        if len(task.segments) != len(words):
            raise PunctInputError(f"{doc_id}: CTC segmentation gave {len(task.segments)} "
                                  f"segments for {len(words)} words", *where)
        out: list[TimedWord] = []
        for word, (start, end, _score) in zip(words, task.segments, strict=True):
            s = round(min(max(float(start), 0.0), duration), 4)
            e = round(min(max(float(end), s), duration), 4)
            out.append(TimedWord(word, s, e))
        return out


class EspnetAsr:
    """Speech -> words with an ESPnet ``Speech2Text`` (beam search, no language model)."""

    def __init__(self, model: str | Path, device: str = "cpu", beam_size: int = 10,
                 ctc_weight: float | None = None):
        config, params = model_files(model)
        inference = import_espnet2("espnet2.bin.asr_inference")
        self.name = str(model)
        self.speech2text = inference.Speech2Text(
            asr_train_config=str(config), asr_model_file=str(params), device=str(device),
            beam_size=beam_size, lm_weight=0.0,
            ctc_weight=self.default_ctc_weight(config) if ctc_weight is None else ctc_weight)
        self.sample_rate = frontend_rate(self.speech2text.asr_train_args)

    @staticmethod
    def default_ctc_weight(config: Path) -> float:
        """1.0 for a CTC-only model (no decoder in its config), else ESPnet's 0.3."""
        with open(config, encoding="utf-8") as fh:
            conf = yaml.safe_load(fh) or {}
        decoder = conf.get("decoder")
        return 1.0 if decoder in (None, "none") else 0.3

    def transcribe(self, samples: np.ndarray, rate: int) -> list[str]:
        """The best hypothesis' words of mono ``samples`` at ``rate`` Hz."""
        x = resample(samples, rate, self.sample_rate, "espnet")
        with torch.inference_mode():
            results = self.speech2text(torch.from_numpy(x))
        if not results:
            return []
        text = results[0][0] or ""
        return text.split()
