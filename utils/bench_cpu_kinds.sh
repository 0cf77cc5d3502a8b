#!/usr/bin/env bash
# torch fp32 against torch int8 (punct bench_backends) with the kernel libraries held to
# the instruction sets of older CPU kinds, on the CPU at hand: all its kernels, AVX-512
# with VNNI but no AMX (an Intel Xeon of the 2nd-3rd generation), AVX2 only (an AMD EPYC
# of the Zen 2-3 generation); each with torch's default int8 engine and with oneDNN's.
# bf16 is off in every row (PUNCT_NATIVE_BF16=0): the CPUs imitated have none.
# One JSON per kind, engine and round under OUT_DIR (docs/RESTORE.md reads them).
# Usage: utils/bench_cpu_kinds.sh MODEL_DIR DATA_DIR OUT_DIR [ROUNDS]
#   KINDS: default "all vnni avx2"; ENGINES: default "x86 onednn"; THREADS: default 1.
set -euo pipefail
[ $# -ge 3 ] || { echo "Usage: $0 MODEL_DIR DATA_DIR OUT_DIR [ROUNDS]" >&2; exit 1; }
model=$1 data=$2 out=$3 rounds=${4:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=path.sh
. "$root/path.sh"

# the environment that holds the kernels to one CPU kind
kind_env() {
  case $1 in
    all) echo "PUNCT_NATIVE_BF16=0" ;;
    vnni) echo "PUNCT_NATIVE_BF16=0 ONEDNN_MAX_CPU_ISA=AVX512_CORE_VNNI MKL_ENABLE_INSTRUCTIONS=AVX512" ;;
    avx2) echo "PUNCT_NATIVE_BF16=0 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 FBGEMM_ENABLE_INSTRUCTIONS=AVX2" ;;
    *) echo "unknown CPU kind '$1' (known: all vnni avx2)" >&2; return 1 ;;
  esac
}

for kind in ${KINDS:-all vnni avx2}; do kind_env "$kind" > /dev/null; done
mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
  for kind in ${KINDS:-all vnni avx2}; do
    read -r -a vars <<< "$(kind_env "$kind")"
    for engine in ${ENGINES:-x86 onednn}; do
      echo "== round $round: kernels $kind, int8 engine $engine"
      env "${vars[@]}" python -m punct.bin.bench_backends --model "$model" --data-dir "$data" \
        --backends torch-fp32,torch-int8 --num-threads "${THREADS:-1}" --repeat 2 \
        --int8-engine "$engine" -o "$out/${kind}_${engine}_$round.json"
    done
  done
done
