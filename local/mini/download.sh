#!/usr/bin/env bash
# Stage 0 of the mini recipe: synthesise local/mini/corpus with eSpeak NG (C API via
# ctypes, voices of the espeakng-loader wheel) into <out-dir>/{wav,ref,meta}; the
# synthesiser's word timings are kept as the reference CTM. Deterministic, resumable.
# The speech is made more like real speech by a seeded speech style (local/mini/README.md):
# the recipe's conf/synth_style.yaml when it has one, else the defaults of
# punct/synth/style.py; $synth_opts adds synth_mini flags (e.g. "--as-read" for eSpeak's
# reading as it is, a pause at every mark).
# Corpus: original text written for this project (CC0), see local/mini/corpus/README.md.
# Usage: local/mini/download.sh <out-dir>   (uses $cpu_cmd and $nj from the driver)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$1
nj=${nj:-2}
cmd=${cpu_cmd:-$here/../../utils/launch.sh}
style_opts=()
[ -f conf/synth_style.yaml ] && style_opts=(--style conf/synth_style.yaml)
# shellcheck disable=SC2206
style_opts+=(${synth_opts:-})
$cmd JOB=1:"$nj" "log/synth.JOB.log" \
  python -m punct.bin.synth_mini --corpus-dir "$here/corpus" --out-dir "$out/mini" \
    --job JOB --num-jobs "$nj" "${style_opts[@]+"${style_opts[@]}"}"
echo "mini: $(find "$out/mini/wav" -name '*.wav' | wc -l) utterances in $out/mini"
