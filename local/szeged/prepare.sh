#!/usr/bin/env bash
# Stage 1 of the Hungarian Szeged recipe: data/{train,dev,test[,test_szeged_ner,
# test_treebank]} (Kaldi files + words.tsv, text only, scored with nagy4).
# Extra options go to punct.bin.prepare_szeged (also through $szeged_prepare_opts).
# Usage: local/szeged/prepare.sh <downloads-dir> <data-dir> [prepare_szeged options]
set -euo pipefail
[ $# -ge 2 ] || { echo "Usage: $0 <downloads-dir> <data-dir> [options]" >&2; exit 1; }
db=$1/szeged
data=$2
shift 2
opts=()
[ -e "$db/szeged_ner" ] && opts+=(--szeged-ner "$db/szeged_ner")
[ -e "$db/treebank" ] && opts+=(--treebank "$db/treebank")
# shellcheck disable=SC2086
python -m punct.bin.prepare_szeged --ud-dir "$db/ud" --nerkor-dir "$db/nerkor" \
  --data-dir "$data" "${opts[@]+"${opts[@]}"}" ${szeged_prepare_opts:-} "$@"
