"""A tiny CTC-only ESPnet ASR model built offline (random weights; the plumbing counts).

``build_tiny_espnet(dir)`` writes ``config.yaml`` (ESPnet's full training config: the
task parser's defaults plus a 1-block transformer encoder, no decoder, CTC weight 1,
character tokens) and ``model.pth`` (the state dict of ``ASRTask.build_model``), the
two files a trained ESPnet model directory holds.
"""

from __future__ import annotations

import string
from pathlib import Path

import torch
import yaml

from punct.asr.espnet_env import import_espnet2

TOKENS = ["<blank>", "<unk>", "<space>", *string.ascii_lowercase, "'", "<sos/eos>"]


def build_tiny_espnet(out: Path, seed: int = 0, blank_bias: float = 0.0) -> Path:
    """A model directory under ``out``; ``blank_bias`` shifts the CTC blank's logit."""
    asr = import_espnet2("espnet2.tasks.asr")
    out.mkdir(parents=True, exist_ok=True)
    args = asr.ASRTask.get_parser().parse_args([
        "--token_type", "char", "--output_dir", str(out),
        "--frontend", "default", "--normalize", "utterance_mvn",
        "--encoder", "transformer",
    ])
    args.token_list = list(TOKENS)
    args.frontend_conf = {"fs": 16000, "n_fft": 400, "hop_length": 160, "n_mels": 20}
    args.encoder_conf = {"output_size": 16, "attention_heads": 2, "linear_units": 32,
                         "num_blocks": 1, "dropout_rate": 0.0,
                         "positional_dropout_rate": 0.0, "attention_dropout_rate": 0.0,
                         "input_layer": "conv2d"}
    args.model_conf = {"ctc_weight": 1.0}
    args.decoder = None
    args.init = None
    torch.manual_seed(seed)
    model = asr.ASRTask.build_model(args)
    if blank_bias:
        with torch.no_grad():
            model.ctc.ctc_lo.bias[0] += blank_bias
    with open(out / "config.yaml", "w", encoding="utf-8") as fh:
        yaml.safe_dump(vars(args), fh, sort_keys=True)
    torch.save(model.state_dict(), out / "model.pth")
    return out


def n_parameters(model_dir: Path) -> int:
    """Parameters in a model directory's ``model.pth``."""
    state = torch.load(model_dir / "model.pth", map_location="cpu")
    return sum(int(t.numel()) for t in state.values())
