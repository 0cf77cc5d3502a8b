#!/usr/bin/env bash
# Everything local/iwslt2012/gpu_check.sh needs on a GPU machine without network that has
# PyTorch, transformers, numpy, scipy, pandas, sacrebleu and tabulate (as the lent GPU
# machines' image does) but not this project's other extras, in one folder to carry:
#   encoder/           the default encoder, weights in float16 (punct.bin.pack_encoder)
#   iwslt_data.tar.xz  the prepared IWSLT sets (stages 0-1 of egs/iwslt2012/punct1)
#   che/               Che's dev2012 and test2011 (the engine benchmark's input)
#   whl/               wheels of the few Python packages the recipe adds (for GPU_PYTHON,
#                      default 3.12; skipped with GPU_WHEELS=none)
# About 50 MB. On the machine: local/iwslt2012/gpu_check.sh --bundle DIR OUT_DIR
# Usage: local/iwslt2012/gpu_bundle.sh DIR
set -euo pipefail
[ $# -eq 1 ] || { echo "Usage: $0 DIR" >&2; exit 1; }
root=$(cd "$(dirname "$0")/../.." && pwd)
recipe=$root/egs/iwslt2012/punct1
mkdir -p "$1"
out=$(cd "$1" && pwd)
# shellcheck source=path.sh
. "$root/path.sh"
# shellcheck source=conf/db.sh
. "$root/conf/db.sh"
# shellcheck source=local/iwslt2012/files.sh
. "$root/local/iwslt2012/files.sh"
[ -f "$recipe/.stages/1.done" ] || {
  echo "$0: prepare the IWSLT sets first (cd $recipe && ./run.sh --stop-stage 1)" >&2; exit 1; }

python -m punct.bin.pack_encoder --src default --out "$out/encoder"
tar cJf "$out/iwslt_data.tar.xz" -C "$recipe" data/train data/dev data/dev_asrsim \
  data/test2011 data/test2011_full data/local .stages/0.done .stages/1.done
mkdir -p "$out/che"
for name in dev2012 test2011; do cp "$(locate "$IWSLT2012" "$name")" "$out/che/$name"; done
if [ "${GPU_WHEELS:-}" != none ]; then
  python -m pip download -q --no-deps --only-binary=:all: --implementation cp \
    --python-version "${GPU_PYTHON:-3.12}" --platform manylinux_2_28_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$out/whl" \
    soundfile==0.14.0 kaldiio==2.18.1 cffi pycparser
fi
du -sh "$out"
