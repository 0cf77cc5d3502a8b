#!/usr/bin/env bash
# Where decoding on one CUDA GPU spends its time (issue 20, items 2 and 4): SYSTEM
# (default nagy_gpu32) as the stage driver trained it (exp/SYSTEM, e.g. after
# gpu_check.sh), else trained here for EPOCHS epochs (default 1: the speed does not depend
# on the weights) into exp/SYSTEM_decode; then punct.bin.benchmark on the training set
# (266k words) once per decode batch size of DECODE_BATCHES (default "32 128 512";
# "default": the config's, decode.gpu_batch_tokens on a GPU), each with its engine split
# into plan, predict and decide, and for those in PROFILE_BATCHES (default "default 512";
# profiling 75 batches of 32 takes minutes) torch.profiler's table of one engine run
# (--profile-engine), into OUT_DIR/b<N>/; then punct-restore on the training text (one
# document per utterance) as a user runs it, once per flush size of RESTORE_BATCH_WORDS
# (default "default 2048": the CUDA default, a whole decoding batch, against the CPU's),
# its summary line in OUT_DIR/restore_<N>.log (each at most RESTORE_LIMIT seconds, default
# STEP_LIMIT). Everything goes into
# OUT_DIR.tar.gz beside OUT_DIR, the one file to fetch. Each step at most STEP_LIMIT
# seconds (default 120). Data and encoder as for gpu_check.sh (--bundle DIR).
# Usage: local/iwslt2012/gpu_decode_check.sh [--bundle DIR] OUT_DIR [SYSTEM]
#   NGPU=0 runs the same on the CPU (a dry run).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
recipe=$root/egs/iwslt2012/punct1
# shellcheck source=path.sh
. "$root/path.sh"
# shellcheck source=local/iwslt2012/gpu_lib.sh
. "$root/local/iwslt2012/gpu_lib.sh"
gpu_args "Usage: $0 [--bundle DIR] OUT_DIR [SYSTEM]" "$@" || exit 1
system=${rest[0]:-nagy_gpu32}
ngpu=${NGPU:-1}
gpu_prepare "$bundle" "$recipe" "$out" "$ngpu" || exit 1
exp=exp/$system
[ -f "$exp/.done" ] || exp=exp/${system}_decode
if [ ! -f "$exp/best.pt" ]; then
  timeout --kill-after=15 "${STEP_LIMIT:-120}" python -m punct.bin.train \
    --config "conf/model/$system.yaml" --train-dir data/train --dev-dir data/dev \
    --exp-dir "$exp" --ngpu "$ngpu" --num-threads 2 --set "train.epochs=${EPOCHS:-1}" \
    > "$out/train.out" 2>&1
  echo "train: exit $?" | tee -a "$out/summary.txt"
fi
for batch in ${DECODE_BATCHES:-32 128 512}; do
  extra=(--batch-size "$batch")
  [ "$batch" = default ] && extra=()
  case " ${PROFILE_BATCHES-default 512} " in *" $batch "*) extra+=(--profile-engine) ;; esac
  timeout --kill-after=15 "${STEP_LIMIT:-120}" python -m punct.bin.benchmark --exp-dir "$exp" \
    --data-dir data/train --out-dir "$out/b$batch" --device "$(gpu_device "$ngpu")" \
    --reps 3 "${extra[@]+"${extra[@]}"}" --no-pipeline > "$out/b$batch.log" 2>&1
  echo "batch $batch: exit $?" | tee -a "$out/summary.txt"
done
input=${TMPDIR:-/tmp}/punct_restore_input.txt  # not in the tarball
cut -d' ' -f2- data/train/text > "$input"
for words in ${RESTORE_BATCH_WORDS-default 2048}; do
  extra=(--batch-words "$words")
  [ "$words" = default ] && extra=()
  timeout --kill-after=15 "${RESTORE_LIMIT:-${STEP_LIMIT:-120}}" python -m punct.bin.restore \
    --exp-dir "$exp" \
    --device "$(gpu_device "$ngpu")" "${extra[@]+"${extra[@]}"}" "$input" \
    > /dev/null 2> "$out/restore_$words.log"
  echo "restore $words: exit $? $(grep -m1 'words/s' "$out/restore_$words.log")" \
    | tee -a "$out/summary.txt"
done
tar czf "$out.tar.gz" -C "$(dirname "$out")" "$(basename "$out")"
