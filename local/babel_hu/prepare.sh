#!/usr/bin/env bash
# Stage 1 of the Hungarian BABEL recipe: data/{train,dev,test} (Kaldi files with segments,
# words.tsv) from the copy linked by stage 0.
# Extra options go to punct.bin.prepare_babel_hu (also through $babel_hu_prepare_opts,
# e.g. "--split pack" for the pack's training/dev/eval folders instead of the paper's
# 80/10/10 split of the recordings).
# The non-speech map comes from run.sh's --nonspeech (environment variable nonspeech; the
# recipe passes babel, punct/conf/nonspeech/babel.yaml).
# Usage: local/babel_hu/prepare.sh <downloads-dir> <data-dir> [prepare_babel_hu options]
set -euo pipefail
[ $# -ge 2 ] || { echo "Usage: $0 <downloads-dir> <data-dir> [options]" >&2; exit 1; }
db=$1/babel_hu
data=$2
shift 2
if [ ! -e "$db/corpus" ]; then
  echo "prepare.sh: $db/corpus not found: run stage 0 (BABEL_HU in conf/db.sh)" >&2
  exit 2
fi
opts=()
[ -e "$db/punct" ] && opts+=(--punct-dir "$db/punct")
# shellcheck disable=SC2086
python -m punct.bin.prepare_babel_hu --corpus-dir "$db/corpus" --data-dir "$data" \
  --nonspeech "${nonspeech:-babel}" "${opts[@]+"${opts[@]}"}" ${babel_hu_prepare_opts:-} "$@"
