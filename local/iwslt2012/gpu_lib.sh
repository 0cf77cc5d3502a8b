# shellcheck shell=bash
# Sourced by the GPU checks (gpu_check.sh, gpu_compile_check.sh, gpu_decode_check.sh). On a machine without
# network, `gpu_unpack BUNDLE RECIPE` makes what local/iwslt2012/gpu_bundle.sh packed in
# BUNDLE usable there (the IWSLT sets go into the recipe folder RECIPE):
#   python    a wrapper around python3 when only python3 is installed (not a link,
#             which would lose a virtualenv's packages), in $TMPDIR/punct_bin
#   whl/      installed into $TMPDIR/punct_site, put on PYTHONPATH
#   encoder/  unpacked to $TMPDIR/punct_encoder, PUNCT_ENCODER_DIR ($TMPDIR: /tmp unset)
#   iwslt_data.tar.xz  unpacked into RECIPE with Python's tarfile (a bare image may lack
#             the xz program)
# Returns non-zero on the first failure. A second call with the same BUNDLE and RECIPE
# (the next check of gpu_lease.sh) only sets the variables again: the files are there
# ($TMPDIR/punct_unpacked records what was unpacked where).
gpu_unpack() {
  local bundle=$1 recipe=$2 tmp=${TMPDIR:-/tmp} done_already=false
  [ "$(cat "$tmp/punct_unpacked" 2>/dev/null)" = "$bundle -> $recipe" ] && done_already=true
  if ! command -v python > /dev/null; then
    mkdir -p "$tmp/punct_bin"
    printf '#!/bin/sh\nexec %s "$@"\n' "$(command -v python3)" > "$tmp/punct_bin/python"
    chmod +x "$tmp/punct_bin/python"
    export PATH=$tmp/punct_bin:$PATH
  fi
  if [ -d "$bundle/whl" ]; then
    $done_already || python -m pip install -q --no-index --no-deps --no-compile \
      --target "$tmp/punct_site" "$bundle"/whl/*.whl || return 1
    export PYTHONPATH=${PYTHONPATH:-}:$tmp/punct_site
  fi
  export PUNCT_ENCODER_DIR=$tmp/punct_encoder
  $done_already && return 0
  rm -f "$tmp/punct_unpacked"
  python -m punct.bin.pack_encoder --src "$bundle/encoder" --out "$tmp/punct_encoder" \
    --unpack || return 1
  python -m tarfile -e "$bundle/iwslt_data.tar.xz" "$recipe" || return 1
  echo "$bundle -> $recipe" > "$tmp/punct_unpacked"
}

# gpu_args USAGE [--bundle DIR] OUT_DIR [MORE...]: the arguments of a check. Sets
# bundle (DIR made absolute, or empty), out (OUT_DIR, made, absolute) and rest (MORE);
# non-zero, with USAGE on stderr where they do not parse, and before OUT_DIR is made
# where DIR is missing.
gpu_args() {
  local usage=$1
  shift
  bundle=""
  if [ "${1:-}" = --bundle ]; then
    [ $# -ge 3 ] || { echo "$usage" >&2; return 1; }
    bundle=$(cd "$2" && pwd) || return 1
    shift 2
  fi
  [ $# -ge 1 ] || { echo "$usage" >&2; return 1; }
  out=$(mkdir -p "$1" && cd "$1" && pwd) || return 1
  shift
  # shellcheck disable=SC2034  # read by the check that sourced this file
  rest=("$@")
}

# gpu_prepare BUNDLE RECIPE OUT NGPU: BUNDLE unpacked into RECIPE (none when empty), the
# shell moved into RECIPE, its IWSLT sets checked, OUT/device.txt written; non-zero when
# something is missing
gpu_prepare() {
  local bundle=$1 recipe=$2 out=$3 ngpu=$4
  if [ -n "$bundle" ]; then gpu_unpack "$bundle" "$recipe" || return 1; fi
  cd "$recipe" || return 1
  [ -f data/train/words.tsv ] || {
    echo "$0: no $recipe/data/train: prepare the sets" >&2; return 1; }
  gpu_device_info "$ngpu" > "$out/device.txt" 2>&1
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

# gpu_one_rank CONF NGPU EXP OUT: train CONF (data/train, dev data/dev, in the recipe
# folder) into EXP as a one-rank job whose process group is open (PUNCT_ONE_RANK_GROUP=1:
# NCCL on a GPU, gloo for a dry run with NGPU 0), so that the data-parallel code of
# --ngpu N runs on a machine with one GPU; its output, train.log and history.json go under
# OUT. At most ONE_RANK_LIMIT seconds (default 150). Returns the training's status.
gpu_one_rank() {
  local conf=$1 ngpu=$2 exp=$3 out=$4 status
  mkdir -p "$out"
  PUNCT_ONE_RANK_GROUP=1 timeout --kill-after=15 "${ONE_RANK_LIMIT:-150}" \
    python -m punct.bin.train --config "$conf" --train-dir data/train --dev-dir data/dev \
    --exp-dir "$exp" --ngpu "$ngpu" --num-threads 2 > "$out/train.out" 2>&1
  status=$?
  echo "exit $status" >> "$out/train.out"
  cp "$exp/train.log" "$exp/history.json" "$out/" 2>/dev/null
  return "$status"
}
