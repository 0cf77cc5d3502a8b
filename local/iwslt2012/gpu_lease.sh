#!/usr/bin/env bash
# Everything a lent GPU machine is for, in one prepared run of about 7 minutes (issue 20,
# items 2 and 4), from what local/iwslt2012/gpu_bundle.sh packed:
#  1. gpu_check.sh: SYSTEM (default nagy_gpu32) through the stage driver with --ngpu 1,
#     every test set scored, the benchmark, the engine on the host, the one-rank NCCL job;
#  2. gpu_decode_check.sh: the engine against the bare encoder per decode batch, on the
#     system step 1 trained (DECODE_BATCHES, default "32 default 512");
#  3. gpu_compile_check.sh with MODES (default none: the training profile alone).
# Each writes its folder under WORK (default /tmp/punct_gpu) and a tarball beside it;
# only the three tarballs (and lease.log) are copied into FETCH_DIR, because a lent
# machine brings back a few files of a run, not whole folders. Time limits: those of the
# three scripts (the defaults here keep the whole run under 9 minutes).
# Usage: local/iwslt2012/gpu_lease.sh BUNDLE FETCH_DIR [SYSTEM]
set -uo pipefail
[ $# -ge 2 ] || { echo "Usage: $0 BUNDLE FETCH_DIR [SYSTEM]" >&2; exit 1; }
bundle=$(cd "$1" && pwd) || exit 1
fetch=$(mkdir -p "$2" && cd "$2" && pwd) || exit 1
system=${3:-nagy_gpu32}
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-/tmp/punct_gpu}
mkdir -p "$work"
log=$fetch/lease.log
step() {  # step NAME COMMAND...: run, log its status and time, copy its tarball
  local name=$1 start
  shift
  start=$(date +%s)
  "$@" > "$work/$name.out" 2>&1
  echo "$name: exit $? after $(($(date +%s) - start)) s" >> "$log"
  tail -n 20 "$work/$name.out" > "$fetch/$name.tail" 2>/dev/null
  cp "$work/$name.tar.gz" "$fetch/" 2>/dev/null
}
export ENGINE_LIMIT=${ENGINE_LIMIT:-60} DRIVER_LIMIT=${DRIVER_LIMIT:-240} \
  BENCH_LIMIT=${BENCH_LIMIT:-60} ONE_RANK_LIMIT=${ONE_RANK_LIMIT:-90} \
  STEP_LIMIT=${STEP_LIMIT:-60} PROFILE_LIMIT=${PROFILE_LIMIT:-80} \
  DECODE_BATCHES=${DECODE_BATCHES:-32 default 512}
step check "$here/gpu_check.sh" --bundle "$bundle" "$work/check" "$system"
step decode "$here/gpu_decode_check.sh" --bundle "$bundle" \
  "$work/decode" "$system"
step compile "$here/gpu_compile_check.sh" --bundle "$bundle" "$work/compile" "${MODES:- }"
cat "$log"
