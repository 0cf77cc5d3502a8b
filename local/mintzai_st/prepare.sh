#!/usr/bin/env bash
# Stage 1 of the mintzai-ST recipe: data/{train,dev,test}_{es,eu,es_eu} (Kaldi files +
# words.tsv; wav.scp names the segments' m4a files) from <downloads-dir>/mintzai_st/corpus.
# Extra options go to python -m punct.bin.prepare_mintzai, also through
# $mintzai_prepare_opts (e.g. "--max-utts 2000" for a quick trial run).
# Usage: local/mintzai_st/prepare.sh <downloads-dir> <data-dir> [prepare_mintzai options]
set -euo pipefail
[ $# -ge 2 ] || { echo "Usage: $0 <downloads-dir> <data-dir> [options]" >&2; exit 1; }
db=$1/mintzai_st/corpus
data=$2
shift 2
# shellcheck disable=SC2086
python -m punct.bin.prepare_mintzai --db-dir "$db" --data-dir "$data" \
  ${mintzai_prepare_opts:-} "$@"
