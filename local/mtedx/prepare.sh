#!/usr/bin/env bash
# Stage 1 of the mTEDx / MuST-C recipe: data/{train,dev,test} (mTEDx in the language
# stage 0 wrote to <out>/mtedx/lang; talk-level flac + segments),
# data/mustc_{train,dev,tst_common} when MuST-C is linked, and data/unipunc_{audio,mixed}
# from UniPunc's JSONL files when linked. Without MuST-C audio
# (no <out>/mtedx/mustc1_path) the JSONL records are kept text-only (--missing-audio
# text, counted in prep.json); with it a missing file is an error.
# Extra options go to punct.bin.prepare_mtedx (also through $mtedx_prepare_opts).
# Usage: local/mtedx/prepare.sh <downloads-dir> <data-dir> [prepare_mtedx options]
set -euo pipefail
[ $# -ge 2 ] || { echo "Usage: $0 <downloads-dir> <data-dir> [options]" >&2; exit 1; }
db=$1/mtedx
data=$2
shift 2
[ -f "$db/lang" ] || { echo "prepare.sh: no $db/lang: run stage 0 first" >&2; exit 2; }
lang=$(cat "$db/lang")
opts=(--mtedx-dir "$db" --lang "$lang")
[ -e "$db/mustc" ] && opts+=(--mustc-dir "$db/mustc")
if [ -e "$db/unipunc_jsonl" ]; then
  for kind in audio mixed; do
    f=$db/unipunc_jsonl/test-$kind.jsonl
    [ -f "$f" ] && opts+=(--jsonl "unipunc_$kind=$f")
  done
  if [ -e "$db/mustc1_path" ]; then
    opts+=(--audio-root "MUSTC1_PATH=$db/mustc1_path" --missing-audio error)
  else
    opts+=(--missing-audio text)
  fi
fi
# shellcheck disable=SC2086
python -m punct.bin.prepare_mtedx --data-dir "$data" "${opts[@]}" ${mtedx_prepare_opts:-} "$@"
