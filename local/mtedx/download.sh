#!/usr/bin/env bash
# Stage 0 of the mTEDx / MuST-C recipe (UniPunc): the corpora into <out-dir>/mtedx/.
#
#   MTEDX         Multilingual TEDx (OpenSLR 100, CC BY-NC-ND 4.0). A folder holding
#                 $MTEDX_LANG-$MTEDX_LANG/ is linked; missing -> mtedx_$MTEDX_LANG.tgz is
#                 downloaded from MTEDX_URL (resumable; sha256-checked when MTEDX_SHA256 is
#                 set; free disk space checked) and extracted safely (python -m
#                 punct.bin.download).
#   MUSTC         MuST-C v1.0 en-xx folder (licence-gated); optional: linked when set,
#                 otherwise this script says how to get it.
#   MUSTC1_PATH   the folder UniPunc's JSONL audio paths call <MUSTC1_PATH>.
#   UNIPUNC_JSONL UniPunc's test-audio.jsonl / test-mixed.jsonl (optional).
# Usage: local/mtedx/download.sh <out-dir>
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=conf/db.sh
. "$here/../../conf/db.sh"
[ $# -eq 1 ] || { echo "Usage: $0 <out-dir>" >&2; exit 1; }
out=$1/mtedx
lang=$MTEDX_LANG
mkdir -p "$out"
echo "$lang" > "$out/lang"  # the language stage 1 prepares

# shellcheck source=local/common/link.sh
. "$here/../common/link.sh"

if [ -d "$MTEDX/$lang-$lang/data" ]; then
  link "$MTEDX/$lang-$lang" "$lang-$lang"
elif [ -d "$MTEDX/data" ] && [ "$(basename "$MTEDX")" = "$lang-$lang" ]; then
  link "$MTEDX" "$lang-$lang"
elif [ -f "$out/.extracted_$lang" ] && [ -d "$out/$lang-$lang/data" ]; then
  echo "mtedx: $out/$lang-$lang already downloaded and extracted"
else
  tgz=$out/mtedx_$lang.tgz
  echo "mtedx: $MTEDX/$lang-$lang not found; downloading $MTEDX_URL/mtedx_$lang.tgz"
  [ -L "$out/$lang-$lang" ] && rm "$out/$lang-$lang"
  sum_opt=()
  if [ -n "$MTEDX_SHA256" ]; then
    sum_opt=(--sha256 "$MTEDX_SHA256")
  else
    echo "mtedx: WARNING: no sha256 pinned for mtedx_$lang.tgz (MTEDX_SHA256 in conf/db.sh" \
      "is empty): the archive is not verified"
  fi
  python -m punct.bin.download --url "$MTEDX_URL/mtedx_$lang.tgz" --out "$tgz" \
    "${sum_opt[@]+"${sum_opt[@]}"}" --min-free-gb 1
  if [ -z "$MTEDX_SHA256" ]; then
    echo "mtedx: sha256 of $tgz: $(sha256sum "$tgz" | cut -d' ' -f1) (set MTEDX_SHA256 to pin it)"
  fi
  python -m punct.bin.download --extract "$tgz" --to "$out" --min-free-gb 1
  [ -d "$out/$lang-$lang/data" ] || {
    echo "download.sh: $tgz has no $lang-$lang/data folder" >&2; exit 1; }
  touch "$out/.extracted_$lang"
fi

if [ -n "$MUSTC" ]; then
  if [ ! -d "$MUSTC/data" ]; then
    echo "download.sh: MUSTC=$MUSTC has no data/ folder (an en-xx folder of MuST-C v1.0;" \
      "conf/db.sh)" >&2
    exit 2
  fi
  link "$MUSTC" mustc
else
  rm -f "$out/mustc"
  cat <<'MSG'
mtedx: MuST-C (UniPunc's English data) is not configured; this run uses mTEDx only.
  MuST-C v1.0 is licence-gated (CC BY-NC-ND 4.0): request it at https://ict.fbk.eu/must-c/,
  then set MUSTC in conf/db.sh to an en-xx folder (e.g. .../MUSTC_v1.0/en-de).
MSG
fi
if [ -n "$MUSTC1_PATH" ] && [ -d "$MUSTC1_PATH" ]; then
  link "$MUSTC1_PATH" mustc1_path
else
  rm -f "$out/mustc1_path"
fi
if [ -f "$UNIPUNC_JSONL/test-audio.jsonl" ] || [ -f "$UNIPUNC_JSONL/test-mixed.jsonl" ]; then
  link "$UNIPUNC_JSONL" unipunc_jsonl
else
  rm -f "$out/unipunc_jsonl"
  echo "mtedx: no UniPunc JSONL test files in $UNIPUNC_JSONL (UNIPUNC_JSONL; optional)"
fi
