"""Export a system's ``PunctModel.predict`` to ONNX (``model.onnx`` beside the safetensors).

The graph takes the tensors of a collated batch (``Featurizer.collate``) as inputs, by
name, with dynamic batch and time axes, and returns ``punct`` (B, T, P) probabilities and,
where the family has them, ``cap`` (B, T, 3), ``punct_logits`` and ``cap_logits`` (what
the decoder's ``sum`` aggregation uses). Inputs the model never reads (training
targets) are not graph inputs. ``onnx.json`` records the input and output names;
``model.int8.onnx`` is the dynamically quantised copy (int8 per-channel weights of the
layers with weights; activations quantised on the fly).
Sample windows for tracing come from the featurizer itself, two sequences of different
lengths so no size is baked in.
"""

from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from punct.errors import PunctInputError
from punct.export.system import System, load_system
from punct.extras import require
from punct.models.base import WordSeq

ONNX_FILE = "model.onnx"
INT8_FILE = "model.int8.onnx"
META_FILE = "onnx.json"
OUTPUTS = ("punct", "cap", "punct_logits", "cap_logits")
SUPPORTED = ("brnn", "autopunct", "nagy", "courtland")
SAMPLE = ("the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "and", "then",
          "it", "runs", "away", "to", "the", "river", "where", "nobody", "can", "see", "it")


class PredictGraph(nn.Module):
    """``model.predict`` over positional tensors (ONNX export needs a plain forward)."""

    def __init__(self, model: nn.Module, keys: list[str], outputs: list[str]):
        super().__init__()
        self.model = model
        self.keys = keys
        self.outputs = outputs

    def forward(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        pred = self.model.predict(dict(zip(self.keys, tensors, strict=True)))
        found = {"punct": pred.punct, "cap": pred.cap, **pred.extra}
        return tuple(found[name] for name in self.outputs)


def sample_batch(system: System, window: int, stride: int) -> dict[str, torch.Tensor]:
    """A collated batch of two sample sequences (different lengths, some pauses)."""
    n_labels = len(system.label_set.labels)
    seqs = []
    offset = 0
    for k, n in enumerate((len(SAMPLE), 7)):
        words = list(SAMPLE[:n])
        pauses = np.where(np.arange(n) % 3 == 2, 0.4, 0.05).astype(np.float32)
        seqs.append(WordSeq(f"s{k}", words, pauses, np.zeros((n, n_labels), np.float32),
                            np.zeros(n, np.int64), offset))
        offset += n
    windows = system.featurizer.windows(seqs, window, stride)
    return system.featurizer.collate(windows)


def weight_matmuls(path: Path) -> list[str]:
    """The MatMul/Gemm nodes with a weight (an initializer) input: the layers int8 dynamic
    quantisation helps; products of two activations (attention scores) stay fp32."""
    onnx = require("onnx", "onnx", "ONNX export")  # optional extra
    graph = onnx.load(str(path), load_external_data=False).graph
    weights = {init.name for init in graph.initializer}
    return [node.name for node in graph.node
            if node.op_type in ("MatMul", "Gemm") and any(x in weights for x in node.input)]


def export_onnx(directory: str | Path, quantize: bool = False, opset: int = 17) -> Path:
    """Write ``model.onnx`` (and with ``quantize`` ``model.int8.onnx``) into an exported
    directory; return the ONNX path."""

    onnx = require("onnx", "onnx", "ONNX export")  # optional extra: checked before any work
    directory = Path(directory)
    system = load_system(directory)
    if system.family not in SUPPORTED or system.streams:
        raise PunctInputError(f"ONNX export covers the text families {', '.join(SUPPORTED)}; "
                              f"not {system.family!r}", directory)
    window, stride = system.config.decode_window()
    batch = sample_batch(system, window, stride)
    model = system.model.float().eval()
    for module in model.modules():  # one attention chunk: no loop over steps in the graph
        if hasattr(module, "attention_chunk"):
            module.attention_chunk = 1 << 30
    with torch.inference_mode():
        pred = model.predict(batch)
    found = {"punct": pred.punct, "cap": pred.cap, **pred.extra}
    outputs = [name for name in OUTPUTS if found.get(name) is not None]
    keys = list(batch)
    graph = PredictGraph(model, keys, outputs)
    axes: dict[str, dict[int, str]] = {}
    for key, value in batch.items():
        axes[key] = {0: "batch", 1: "time"} if value.dim() >= 2 else {0: "batch"}
    for name in outputs:
        axes[name] = {0: "batch", 1: "time"}
    path = directory / ONNX_FILE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(graph, tuple(batch[k] for k in keys), str(path), input_names=keys,
                          output_names=outputs, dynamic_axes=axes, opset_version=opset,
                          dynamo=False)
    used = [i.name for i in onnx.load(str(path), load_external_data=False).graph.input]
    meta: dict[str, Any] = {"inputs": used, "outputs": outputs, "opset": opset,
                            "window": window, "stride": stride}
    if quantize:
        # optional extra: onnxruntime quantises the graph
        quant = require("onnxruntime.quantization", "onnx", "ONNX int8 quantisation")
        root = logging.getLogger()
        level = root.level
        root.setLevel(logging.ERROR)  # its advice to pre-process the graph, on every call
        try:
            quant.quantize_dynamic(str(path), str(directory / INT8_FILE),
                                   weight_type=quant.QuantType.QInt8, per_channel=True,
                                   nodes_to_quantize=weight_matmuls(path))
        finally:
            root.setLevel(level)
        meta["int8"] = INT8_FILE
    (directory / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return path
