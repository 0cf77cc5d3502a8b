# shellcheck shell=bash
# Sourced by the GPU checks (gpu_check.sh, gpu_compile_check.sh). On a machine without
# network, `gpu_unpack BUNDLE RECIPE` makes what local/iwslt2012/gpu_bundle.sh packed in
# BUNDLE usable there (the IWSLT sets go into the recipe folder RECIPE):
#   python    a wrapper around python3 when only python3 is installed (not a link,
#             which would lose a virtualenv's packages), in $TMPDIR/punct_bin
#   whl/      installed into $TMPDIR/punct_site, put on PYTHONPATH
#   encoder/  unpacked to $TMPDIR/punct_encoder, PUNCT_ENCODER_DIR ($TMPDIR: /tmp unset)
#   iwslt_data.tar.xz  unpacked into RECIPE with Python's tarfile (a bare image may lack
#             the xz program)
# Returns non-zero on the first failure.
gpu_unpack() {
  local bundle=$1 recipe=$2 tmp=${TMPDIR:-/tmp}
  if ! command -v python > /dev/null; then
    mkdir -p "$tmp/punct_bin"
    printf '#!/bin/sh\nexec %s "$@"\n' "$(command -v python3)" > "$tmp/punct_bin/python"
    chmod +x "$tmp/punct_bin/python"
    export PATH=$tmp/punct_bin:$PATH
  fi
  if [ -d "$bundle/whl" ]; then
    python -m pip install -q --no-index --no-deps --no-compile --target "$tmp/punct_site" \
      "$bundle"/whl/*.whl || return 1
    export PYTHONPATH=$PYTHONPATH:$tmp/punct_site
  fi
  python -m punct.bin.pack_encoder --src "$bundle/encoder" --out "$tmp/punct_encoder" \
    --unpack || return 1
  export PUNCT_ENCODER_DIR=$tmp/punct_encoder
  python -m tarfile -e "$bundle/iwslt_data.tar.xz" "$recipe" || return 1
}

# gpu_device_info NGPU: the GPU (unless NGPU is 0), torch, transformers and the host CPU
gpu_device_info() {
  [ "$1" -eq 0 ] || nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python -c 'import torch, transformers; print("torch", torch.__version__, "transformers",
transformers.__version__, torch.cuda.is_available() and torch.cuda.get_device_name(0))'
  grep -m1 "model name" /proc/cpuinfo
  nproc
}

# gpu_device NGPU: the torch device the checks run on (cuda, or cpu for a dry run: NGPU=0)
gpu_device() {
  if [ "$1" -gt 0 ]; then echo cuda; else echo cpu; fi
}
