#!/usr/bin/env bash
# GPU check of the IWSLT 2012 recipe (issue 20, item 4), one prepared run of a few minutes
# on a machine with one CUDA GPU:
#  1. the stage driver trains SYSTEMS with --ngpu 1 (bf16 chosen by precision: auto) and
#     decodes and scores every test set (set-up "gpu": RESULTS_gpu.md, results_gpu/);
#  2. punct.bin.benchmark on test2011: words/s of the engine and of the bare encoder over
#     the same windows, on the GPU;
#  3. meanwhile, on the host CPU, punct.bin.bench_engine: the engine alone (stub encoder,
#     one thread), with and without the document rules, for each family.
# Prepared data (stages 0-1 done: data/ and .stages/ of the recipe) and the encoder must be
# in place (a machine without network: carry data/{train,dev,dev_asrsim,test2011,
# test2011_full,local}, and the encoder's files with its weights in fp16 if the transfer is
# limited, restored to fp32 there); everything it writes goes under OUT_DIR (logs, tables,
# benchmark JSON) and a tarball of it.
# Each step has its own time limit (seconds; DRIVER_LIMIT, BENCH_LIMIT, ENGINE_LIMIT in the
# environment), after which it and its children are killed, and writes its log under
# OUT_DIR as it runs: call the script without a pipe (a pipe stays open while any child
# lives), so that a step that overruns costs its limit and not the whole lease.
# Usage: local/iwslt2012/gpu_check.sh OUT_DIR CHE_DIR [SYSTEMS [DRIVER OPTIONS...]]
#   CHE_DIR: the folder with Che's dev2012 and test2011 files (bench_engine's input);
#   NGPU=0 in the environment runs the same steps on the CPU (a dry run of the script).
set -uo pipefail
[ $# -ge 2 ] || { echo "Usage: $0 OUT_DIR CHE_DIR [SYSTEMS]" >&2; exit 1; }
out=$(mkdir -p "$1" && cd "$1" && pwd)
che=$(cd "$2" && pwd)
systems=${3:-"nagy nagy_gpu32"}
shift $(($# < 3 ? $# : 3))
ngpu=${NGPU:-1}
device=cuda; [ "$ngpu" -gt 0 ] || device=cpu
# limited LIMIT COMMAND...: COMMAND killed (with its process group) after LIMIT seconds
limited() { local limit=$1; shift; timeout --kill-after=15 "$limit" "$@"; }
root=$(cd "$(dirname "$0")/../.." && pwd)
recipe=$root/egs/iwslt2012/punct1
# shellcheck source=path.sh
. "$root/path.sh"

{ [ "$ngpu" -eq 0 ] || nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python -c 'import torch, transformers; print("torch", torch.__version__, "transformers",
transformers.__version__, torch.cuda.is_available() and torch.cuda.get_device_name(0))'
  grep -m1 "model name" /proc/cpuinfo; nproc; } > "$out/device.txt" 2>&1

# 3. the engine alone, on one host core, beside the GPU work
(
  for family in autopunct nagy courtland; do
    for rules in "" --no-constraints; do
      tag=$family${rules:+_norules}
      limited "${ENGINE_LIMIT:-60}" python -m punct.bin.bench_engine --stub-encoder \
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
fi

wait "$engine_pid"
logs=()
for sys in $systems; do
  logs+=("exp/$sys/train.log" "exp/$sys/history.json" "exp/$sys/env.json" "exp/$sys/log")
done
tar czf "$out/gpu_check.tar.gz" RESULTS_gpu.md results_gpu exp/*_gpu.json .stages/gpu \
  "${logs[@]}" "$out/benchmark" 2>/dev/null
ls -la "$out"
