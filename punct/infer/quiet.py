"""Silence the loading progress bars and chatter of transformers / huggingface_hub."""

from __future__ import annotations

import logging

from huggingface_hub.utils import disable_progress_bars, enable_progress_bars
from transformers.utils import logging as hf_logging


def set_loading_verbosity(verbose: bool) -> None:
    """Show (``verbose``) or hide the weight-loading progress bars and info logs of
    transformers and huggingface_hub; warnings and errors always show."""
    if verbose:
        hf_logging.enable_progress_bar()
        hf_logging.set_verbosity_info()
    else:
        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    (enable_progress_bars if verbose else disable_progress_bars)()
    logging.getLogger("huggingface_hub").setLevel(logging.INFO if verbose else logging.WARNING)
