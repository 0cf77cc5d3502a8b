#!/usr/bin/env bash
# Training speed on one CUDA GPU per train.compile mode (punct.train.compile): nagy on the
# IWSLT sets for EPOCHS epochs (default 3) with --ngpu 1, once per mode, each through
# punct.bin.train with its own time limit (TRAIN_LIMIT seconds, default 110). Each mode's
# train.log and history.json (the seconds of each epoch, dev evaluation included) go
# under OUT_DIR, and OUT_DIR.tar.gz beside it: the one file to fetch from a remote machine.
# Then torch.profiler's table of PROFILE_STEPS (default 10; 0: none) eager bf16 steps of
# nagy's model (punct.bin.train_benchmark --profile, at most PROFILE_LIMIT seconds, default
# 90) in OUT_DIR/profile/.
# Data, encoder and wheels as for local/iwslt2012/gpu_check.sh: --bundle DIR unpacks
# what local/iwslt2012/gpu_bundle.sh packed; without it the IWSLT sets must be prepared.
# Call it without a pipe (a pipe stays open while any child lives).
# Usage: local/iwslt2012/gpu_compile_check.sh [--bundle DIR] OUT_DIR [MODES]
#   MODES: default "off default reduce-overhead"; NGPU=0 runs the same on the CPU.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
recipe=$root/egs/iwslt2012/punct1
# shellcheck source=path.sh
. "$root/path.sh"
# shellcheck source=local/iwslt2012/gpu_lib.sh
. "$root/local/iwslt2012/gpu_lib.sh"
gpu_args "Usage: $0 [--bundle DIR] OUT_DIR [MODES]" "$@" || exit 1
modes=${rest[0]:-"off default reduce-overhead"}
ngpu=${NGPU:-1}
gpu_prepare "$bundle" "$recipe" "$out" "$ngpu" || exit 1
for mode in $modes; do
  exp=exp/compile_$mode
  rm -rf "$exp"
  start=$(date +%s)
  timeout --kill-after=15 "${TRAIN_LIMIT:-110}" python -m punct.bin.train \
    --config conf/model/nagy.yaml --train-dir data/train --dev-dir data/dev --exp-dir "$exp" \
    --ngpu "$ngpu" --num-threads 2 --set "train.epochs=${EPOCHS:-3}" \
    --set "train.compile=$mode" > "$out/train_$mode.out" 2>&1
  echo "$mode: exit $? after $(($(date +%s) - start)) s" | tee -a "$out/summary.txt"
  cp "$exp/train.log" "$out/train_$mode.log" 2>/dev/null
  cp "$exp/history.json" "$out/history_$mode.json" 2>/dev/null
done
# where a step's time goes: torch.profiler's table of PROFILE_STEPS eager bf16 steps of
# nagy's model alone (batches of 8; 0 skips it)
if [ "${PROFILE_STEPS:-10}" -gt 0 ]; then
  timeout --kill-after=15 "${PROFILE_LIMIT:-90}" python -m punct.bin.train_benchmark \
    --config conf/model/nagy.yaml --data-dir data/train --out-dir "$out/profile" \
    --device "$(gpu_device "$ngpu")" --precisions bf16 \
    --steps 20 --reps 1 --profile "$out/profile/profile.txt" \
    --profile-steps "${PROFILE_STEPS:-10}" > "$out/profile.log" 2>&1
  echo "profile: exit $?" | tee -a "$out/summary.txt"
fi
tar czf "$out.tar.gz" -C "$(dirname "$out")" "$(basename "$out")"
