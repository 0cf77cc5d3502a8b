#!/usr/bin/env bash
# Stage 1 of the IWSLT 2012 recipe: data/{train,dev,test2011,test2011_full[,test2011asr]}
# (Kaldi files + words.tsv, text only), and data/dev_asrsim: the ASR condition of the
# validation blocks, simulated at $iwslt_asr_dev_wer (default 0.2) with seeded
# substitutions by words that sound alike, deletions and insertions (docs/ASR.md), for
# selecting ASR-robust systems without touching test2011asr. Extra options go to punct.bin.prepare_iwslt,
# also through $iwslt_prepare_opts (e.g. "--max-train-words 8000" for a CI-sized run).
# With iwslt_tts_asr_dev=true (default false: about 20 minutes of CPU, mostly decoding), the
# first $iwslt_tts_asr_dev_words (default 6000) words of data/dev are also read aloud by
# eSpeak NG (data/dev_tts) and decoded by pocketsphinx (data/dev_tts_asr): a real
# recogniser's view of the validation blocks (docs/ASR.md).
# Usage: local/iwslt2012/prepare.sh <downloads-dir> <data-dir> [prepare_iwslt options]
set -euo pipefail
[ $# -ge 2 ] || { echo "Usage: $0 <downloads-dir> <data-dir> [options]" >&2; exit 1; }
db=$1/iwslt2012
data=$2
shift 2
# shellcheck disable=SC2086
python -m punct.bin.prepare_iwslt --db-dir "$db" --data-dir "$data" \
  ${iwslt_prepare_opts:-} "$@"
python -m punct.bin.simulate_asr --data-dir "$data/dev" --train-dir "$data/train" \
  --out-dir "$data/dev_asrsim" --wer "${iwslt_asr_dev_wer:-0.2}" --seed 1
if [ "${iwslt_tts_asr_dev:-false}" = true ]; then
  python -m punct.bin.render_set --data-dir "$data/dev" --out-dir "$data/dev_tts" \
    --max-words "${iwslt_tts_asr_dev_words:-6000}" --seed 1 --quiet
  python -m punct.bin.recognize --data-dir "$data/dev_tts" --out-dir "$data/dev_tts_asr" \
    --asr pocketsphinx --quiet
  if [ -f "$data/dev/score_label_set" ]; then
    cp "$data/dev/score_label_set" "$data/dev_tts_asr/score_label_set"
  fi
fi
