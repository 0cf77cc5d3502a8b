#!/usr/bin/env bash
# GPU check of the IWSLT 2012 recipe (issue 20, item 4), one prepared run of a few minutes
# on a machine with one CUDA GPU:
#  1. the stage driver trains SYSTEMS with --ngpu 1 (bf16 chosen by precision: auto) and
#     decodes and scores every test set (set-up "gpu": RESULTS_gpu.md, results_gpu/);
#  2. punct.bin.benchmark on test2011: words/s of the engine and of the bare encoder over
#     the same windows, on the GPU; then the same on the training set (266k words: test2011
#     fills only 114 windows) once per decode batch size of DECODE_BATCHES (default
#     "32 128 512": at 32 windows a batch the GPU's kernels are bound by their launches);
#  3. meanwhile, on the host CPU, punct.bin.bench_engine: the engine alone (stub encoder,
#     one thread), with and without the document rules, for each family;
#  4. the data-parallel code on the one GPU: the first system trained again as a one-rank
#     job with its process group open (NCCL; gpu_lib.sh's gpu_one_rank), beside the
#     driver's training of it, in OUT_DIR/one_rank/ (ONE_RANK=0 skips it).
# Data, encoder and wheels: --bundle DIR unpacks what local/iwslt2012/gpu_bundle.sh packed
# (on a machine without network or this project's extras); without it, the IWSLT sets must
# be prepared (stages 0-1) and CHE_DIR name Che's dev2012 and test2011 files. Everything it
# writes goes under OUT_DIR (logs, tables, benchmark JSON), and OUT_DIR.tar.gz beside it:
# the one file to fetch from a remote machine (e.g. OUT_DIR=/tmp/check, then copy
# /tmp/check.tar.gz where files are fetched from). The machine must have PyTorch,
# transformers, numpy, scipy, pandas, sacrebleu and tabulate (the lent GPU machines' image
# has them); the bundle adds soundfile and kaldiio.
# Each step has its own time limit (seconds; DRIVER_LIMIT, BENCH_LIMIT, ENGINE_LIMIT,
# ONE_RANK_LIMIT in the environment), after which it and its children are killed, and
# writes its log under OUT_DIR as it runs: call the script without a pipe (a pipe stays
# open while any child lives), so that a step that overruns costs its limit and not the
# whole lease.
# Usage: local/iwslt2012/gpu_check.sh --bundle DIR OUT_DIR [SYSTEMS [DRIVER OPTIONS...]]
#        local/iwslt2012/gpu_check.sh OUT_DIR CHE_DIR [SYSTEMS [DRIVER OPTIONS...]]
#   NGPU=0 in the environment runs the same steps on the CPU (a dry run of the script).
set -uo pipefail
usage="Usage: $0 --bundle DIR OUT_DIR [SYSTEMS] | OUT_DIR CHE_DIR [SYSTEMS]"
bundle=""
if [ "${1:-}" = --bundle ]; then
  [ $# -ge 3 ] || { echo "$usage" >&2; exit 1; }
  bundle=$(cd "$2" && pwd) || exit 1
  out=$(mkdir -p "$3" && cd "$3" && pwd) || exit 1
  che=$bundle/che
  shift 3
else
  [ $# -ge 2 ] || { echo "$usage" >&2; exit 1; }
  out=$(mkdir -p "$1" && cd "$1" && pwd) || exit 1
  che=$(cd "$2" && pwd) || exit 1
  shift 2
fi
systems=${1:-"nagy nagy_gpu32"}
shift $(($# < 1 ? $# : 1))
ngpu=${NGPU:-1}
# limited LIMIT COMMAND...: COMMAND killed (with its process group) after LIMIT seconds
limited() { local limit=$1; shift; timeout --kill-after=15 "$limit" "$@"; }
root=$(cd "$(dirname "$0")/../.." && pwd)
recipe=$root/egs/iwslt2012/punct1
# shellcheck source=path.sh
. "$root/path.sh"

# shellcheck source=local/iwslt2012/gpu_lib.sh
. "$root/local/iwslt2012/gpu_lib.sh"
if [ -n "$bundle" ]; then gpu_unpack "$bundle" "$recipe" || exit 1; fi
device=$(gpu_device "$ngpu")

gpu_device_info "$ngpu" > "$out/device.txt" 2>&1

# 3. the engine alone, on one host core, beside the GPU work
(
  for family in autopunct nagy courtland; do
    for rules in "" --no-constraints; do
      tag=$family${rules:+_norules}
      limited "${ENGINE_LIMIT:-120}" python -m punct.bin.bench_engine --stub-encoder \
        --iwslt "$che/dev2012" --iwslt "$che/test2011" --family "$family" --reps 3 $rules \
        --json "$out/engine_$tag.json" > "$out/engine_$tag.log" 2>&1
    done
  done
) &
engine_pid=$!

# 1. train and score through the stage driver
cd "$recipe" || exit 1
time limited "${DRIVER_LIMIT:-300}" ./run.sh --stage 2 --stop-stage 6 --stage-tag gpu \
  --ngpu "$ngpu" --baseline-systems "" --transformer-systems "$systems" --system-dev-sets "" \
  --test-sets "test2011 test2011_full dev dev_asrsim" --asr-pairs "dev:dev_asrsim" \
  --results-md RESULTS_gpu.md --results-dir results_gpu "$@" > "$out/driver.log" 2>&1
echo "driver exit $?" >> "$out/driver.log"

# 2. engine against the bare encoder on the GPU
exp_dirs=()
for sys in $systems; do [ -f "exp/$sys/.done" ] && exp_dirs+=(--exp-dir "exp/$sys"); done
if [ ${#exp_dirs[@]} -gt 0 ]; then
  limited "${BENCH_LIMIT:-120}" python -m punct.bin.benchmark "${exp_dirs[@]}" \
    --data-dir data/test2011 --out-dir "$out/benchmark" --device "$device" --reps 3 \
    --no-pipeline > "$out/benchmark.log" 2>&1
  for batch in ${DECODE_BATCHES:-32 128 512}; do
    limited "${BENCH_LIMIT:-120}" python -m punct.bin.benchmark "${exp_dirs[@]}" \
      --data-dir data/train --out-dir "$out/benchmark_train_b$batch" --device "$device" \
      --reps 3 --batch-size "$batch" --no-pipeline > "$out/benchmark_train_b$batch.log" 2>&1
  done
fi

# 4. the data-parallel code (NCCL) on one GPU: the first system's config as it is (the
#    DRIVER OPTIONS do not reach it)
read -r first _ <<< "$systems"
if [ "${ONE_RANK:-1}" != 0 ] && [ -f "exp/$first/.done" ]; then
  gpu_one_rank "conf/model/$first.yaml" "$ngpu" "exp/${first}_one_rank" "$out/one_rank"
  cp "exp/$first/history.json" "$out/one_rank/history_driver.json" 2>/dev/null
fi

wait "$engine_pid"
# the recipe's tables and each system's training record beside the logs, then one tarball
# of OUT_DIR next to it (OUT_DIR.tar.gz: the one file to fetch from a remote machine)
mkdir -p "$out/recipe"
cp -r RESULTS_gpu.md results_gpu .stages/gpu "$out/recipe/" 2>/dev/null
cp exp/*_gpu.json "$out/recipe/" 2>/dev/null
for sys in $systems; do
  mkdir -p "$out/recipe/$sys"
  cp -r "exp/$sys/train.log" "exp/$sys/history.json" "exp/$sys/env.json" "exp/$sys/log" \
    "$out/recipe/$sys/" 2>/dev/null
done
tar czf "$out.tar.gz" -C "$(dirname "$out")" "$(basename "$out")"
ls -la "$out" "$out.tar.gz"
