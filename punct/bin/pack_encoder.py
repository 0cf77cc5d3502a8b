"""Pack a pretrained encoder directory for a size-limited transfer, and unpack it.

    python -m punct.bin.pack_encoder --src ENCODER_DIR --out PACKED_DIR            # fp16
    python -m punct.bin.pack_encoder --src default --out PACKED_DIR    # all-MiniLM-L6-v2
    python -m punct.bin.pack_encoder --src PACKED_DIR --out ENCODER_DIR --unpack   # fp32

Packing copies every file of the directory and writes its ``model.safetensors`` with the
floating-point tensors in float16 (all-MiniLM-L6-v2: 91 MB -> 45 MB; the largest rounding
of a weight is below 1e-3), the other tensors (position ids) unchanged; unpacking writes
them back in float32, so that ``from_pretrained`` builds the float32 model the recipes
train. The weights then differ from the original by the float16 rounding alone: figures of
a model trained from a packed encoder are not bit-identical to the package's. Use it with
``PUNCT_ENCODER_DIR=ENCODER_DIR`` (``punct.models.encoders``) on a machine without the
encoder package (local/iwslt2012/gpu_bundle.sh).
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Sequence
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from punct.errors import MissingDataError, PunctInputError, report_error
from punct.models.encoders import default_encoder_path

WEIGHTS = "model.safetensors"


def convert_weights(src: Path, out: Path, dtype: torch.dtype) -> int:
    """Write ``src``'s safetensors to ``out`` with every floating tensor in ``dtype``;
    returns the number of tensors converted."""
    state = load_file(str(src))
    converted = {k: v.to(dtype) if v.is_floating_point() else v for k, v in state.items()}
    save_file(converted, str(out), metadata={"format": "pt"})
    return sum(1 for v in state.values() if v.is_floating_point())


def copy_encoder(src: Path, out: Path, dtype: torch.dtype) -> int:
    """Copy the encoder directory ``src`` to ``out`` with its weights in ``dtype``."""
    if not (src / WEIGHTS).is_file():
        raise MissingDataError(f"no {WEIGHTS} in {src} (an encoder saved by save_pretrained)",
                               src)
    out.mkdir(parents=True, exist_ok=True)
    for item in src.iterdir():
        if item.name == WEIGHTS:
            continue
        if item.is_dir():
            shutil.copytree(item, out / item.name, dirs_exist_ok=True)
        else:
            shutil.copy2(item, out / item.name)
    return convert_weights(src / WEIGHTS, out / WEIGHTS, dtype)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", required=True,
                        help="encoder directory, or 'default' (the recipes' default encoder)")
    parser.add_argument("--out", type=Path, required=True, help="where the copy goes")
    parser.add_argument("--unpack", action="store_true", help="weights back to float32")
    args = parser.parse_args(argv)
    try:
        dtype = torch.float32 if args.unpack else torch.float16
        src = default_encoder_path() if args.src == "default" else Path(args.src)
        n = copy_encoder(src, args.out, dtype)
    except (PunctInputError, OSError) as err:
        return report_error("pack_encoder", err)
    print(f"pack_encoder: {n} tensors in {str(dtype).removeprefix('torch.')} -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
