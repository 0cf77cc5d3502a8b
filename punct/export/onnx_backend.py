"""The onnxruntime backend: a ``PunctModel`` whose ``predict`` runs ``model.onnx``.

It plugs into the shared engine (``punct.engine.decode.predict_words``) unchanged: the
featurizer still cuts and collates windows, the session computes the probabilities, and
aggregation and decisions are the same as with torch.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import torch

from punct.errors import MissingDataError
from punct.export.onnx_export import INT8_FILE, META_FILE, ONNX_FILE
from punct.export.system import System
from punct.extras import require
from punct.models.base import Prediction, PunctModel


class OnnxModel(PunctModel):
    """``predict`` through an onnxruntime session (CPU); not trainable."""

    def __init__(self, path: Path, inputs: list[str], outputs: list[str],
                 threads: int | None = None):
        super().__init__()
        ort = require("onnxruntime", "onnx", "the onnx backend")  # optional extra

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads or torch.get_num_threads()
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        self.path = path
        self.inputs = inputs
        self.predict_inputs = tuple(inputs)
        self.outputs = outputs

    @classmethod
    def from_system(cls, system: System, int8: bool | None = None,
                    threads: int | None = None) -> OnnxModel:
        """The session of an exported system's ``model.onnx`` (``int8``: the quantised
        copy; default: ``PUNCT_ONNX_INT8=1`` in the environment)."""
        meta_path = system.source / META_FILE
        if not system.exported or not meta_path.is_file():
            raise MissingDataError("the onnx backend needs an exported dir with model.onnx "
                                   "(punct-export --onnx)", system.source)
        require("onnxruntime", "onnx", "the onnx backend")  # optional extra: fail early
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if int8 is None:
            int8 = os.environ.get("PUNCT_ONNX_INT8") == "1"
        path = system.source / (INT8_FILE if int8 else ONNX_FILE)
        if not path.is_file():
            raise MissingDataError("no ONNX model (punct-export --onnx [--quantize])", path)
        return cls(path, list(meta["inputs"]), list(meta["outputs"]), threads)

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        raise NotImplementedError("an ONNX model is for inference only")

    def predict(self, batch: dict[str, torch.Tensor]) -> Prediction:
        feed = {name: _numpy(batch[name]) for name in self.inputs}
        values = dict(zip(self.outputs, self.session.run(self.outputs, feed), strict=True))
        out = {k: torch.from_numpy(np.asarray(v)) for k, v in values.items()}
        extra = {k: v for k, v in out.items() if k not in ("punct", "cap")}
        return Prediction(out["punct"], out.get("cap"), extra)


def _numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()
