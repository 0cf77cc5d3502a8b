#!/usr/bin/env bash
# Everything a lent GPU machine is for, in one prepared run (issue 20, items 2 and 4), from
# what local/iwslt2012/gpu_bundle.sh packed:
#  1. gpu_check.sh: SYSTEM (default nagy_gpu32) through the stage driver with --ngpu 1,
#     every test set scored, the benchmark on test2011, the engine on the host, the
#     one-rank NCCL job (its own sweep of decode batches left to step 2);
#  2. gpu_decode_check.sh: the engine against the bare encoder per decode batch, on the
#     system step 1 trained (LEASE_DECODE_BATCHES, default "default 512": batch 32 was
#     measured in two leases), then punct-restore on the training text with the CUDA
#     flush size and with the CPU's 2048 words (RESTORE_BATCH_WORDS);
#  3. gpu_compile_check.sh with MODES (default none: the training profile alone).
# Each writes its folder under WORK (default /tmp/punct_gpu) and a tarball beside it;
# only the three tarballs, the tail of each step's output and lease.log are copied into
# FETCH_DIR, because a lent machine brings back a few files of a run (8), not folders.
# The steps of the second H200 lease took about 7 minutes together; the time limits below
# (those of the three scripts, in seconds) add up to 515 s, at most 560 s with the host's
# engine benchmarks that run beside step 1 (6 x 60 s), plus the unpacking (once: the
# later steps find it done): under a device call's 10 minutes even when every step runs
# out.
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
  local name=$1 start status
  shift
  start=$(date +%s)
  rm -f "$work/$name.tar.gz"  # never an earlier run's
  "$@" > "$work/$name.out" 2>&1
  status=$?
  echo "$name: exit $status after $(($(date +%s) - start)) s" >> "$log"
  tail -n 20 "$work/$name.out" > "$fetch/$name.tail" 2>/dev/null
  cp "$work/$name.tar.gz" "$fetch/" 2>/dev/null
}
export ENGINE_LIMIT=${ENGINE_LIMIT:-60} DRIVER_LIMIT=${DRIVER_LIMIT:-200} \
  BENCH_LIMIT=${BENCH_LIMIT:-45} ONE_RANK_LIMIT=${ONE_RANK_LIMIT:-70} \
  STEP_LIMIT=${STEP_LIMIT:-40} RESTORE_LIMIT=${RESTORE_LIMIT:-30} \
  PROFILE_LIMIT=${PROFILE_LIMIT:-60}
DECODE_BATCHES=" " step check "$here/gpu_check.sh" --bundle "$bundle" "$work/check" "$system"
DECODE_BATCHES=${LEASE_DECODE_BATCHES:-default 512} step decode \
  "$here/gpu_decode_check.sh" --bundle "$bundle" "$work/decode" "$system"
step compile "$here/gpu_compile_check.sh" --bundle "$bundle" "$work/compile" "${MODES:- }"
cat "$log"
