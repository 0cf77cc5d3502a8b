#!/usr/bin/env bash
# Stage 0 of the IWSLT 2012 recipe: Che et al.'s punctuation package (TED talks, IWSLT
# 2011/2012; text CC BY-NC-ND 3.0 by TED Conferences LLC) into <out-dir>/iwslt2012.
#
# If $IWSLT2012 (conf/db.sh) is an existing directory, it is linked, not copied, and
# the files with pinned checksums are verified. Otherwise the files are downloaded from
# $IWSLT2012_URL by python -m punct.bin.download (punct/data/download.py): resumable (HTTP
# Range), atomic (.part, then renamed) and sha256-checked, no damaged file left behind.
# train2012 and test2011asr have no pinned checksum (no verified copy was available when
# this recipe was written): they are optional, their sha256 is printed and recorded in
# <out-dir>/iwslt2012/SHA256SUMS. Without train2012, stage 1 trains on part of dev2012.
# Usage: local/iwslt2012/download.sh <out-dir>
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=conf/db.sh
. "$here/../../conf/db.sh"
[ $# -eq 1 ] || { echo "Usage: $0 <out-dir>" >&2; exit 1; }
out=$1/iwslt2012

# shellcheck source=local/iwslt2012/files.sh
. "$here/files.sh"

check() {  # check FILE SHA256
  local got
  got=$(sha256sum "$1" | cut -d' ' -f1)
  if [ "$got" != "$2" ]; then
    echo "download.sh: checksum mismatch for $1: expected $2, found $got" \
         "(a different or damaged copy; delete it to download it again)" >&2
    return 1
  fi
}

if [ -d "$IWSLT2012" ]; then
  src=$(cd "$IWSLT2012" && pwd)
  while read -r name sum; do
    if path=$(locate "$src" "$name"); then
      [ "$sum" = - ] || check "$path" "$sum"
    elif [ "$sum" != - ]; then
      echo "download.sh: $name not found in the local copy $src (IWSLT2012, conf/db.sh)" >&2
      exit 2
    else
      echo "download.sh: $name not in $src (optional; see local/iwslt2012/README.md)"
    fi
  done <<< "$files"
  mkdir -p "$(dirname "$out")"
  if [ -e "$out" ] && [ ! -L "$out" ]; then
    echo "download.sh: $out exists and is not a link; remove it to use $src" >&2
    exit 1
  fi
  ln -sfn "$src" "$out"
  echo "iwslt2012: using the local copy $src (linked as $out)"
  exit 0
fi

echo "iwslt2012: $IWSLT2012 not found; downloading from $IWSLT2012_URL"
mkdir -p "$out"
while read -r name sum; do
  if [ -f "$out/$name" ]; then
    [ "$sum" = - ] || check "$out/$name" "$sum"
    continue
  fi
  sum_opt=()
  [ "$sum" = - ] || sum_opt=(--sha256 "$sum")
  rc=0
  python -m punct.bin.download --url "$IWSLT2012_URL/$name" --out "$out/$name" \
    "${sum_opt[@]+"${sum_opt[@]}"}" || rc=$?
  if [ "$rc" -ne 0 ]; then
    if [ "$sum" = - ] && [ "$rc" -eq 2 ]; then
      echo "download.sh: optional $name not downloadable from $IWSLT2012_URL; skipped"
      rm -f "$out/$name.part"
      continue
    fi
    [ "$rc" -eq 2 ] && echo "download.sh: could not download $IWSLT2012_URL/$name (rerun to" \
      "resume, or set IWSLT2012 in conf/db.sh to a local copy)" >&2
    exit "$rc"
  fi
  [ "$sum" != - ] || echo "download.sh: $name has no pinned checksum; sha256" \
    "$(sha256sum "$out/$name" | cut -d' ' -f1)"
done <<< "$files"
(cd "$out" && find . -maxdepth 1 -type f ! -name 'SHA256SUMS*' ! -name '*.part' -printf '%f\n' \
  | LC_ALL=C sort | xargs sha256sum > SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS)
echo "iwslt2012: $(wc -l < "$out/SHA256SUMS") files in $out (sha256 in $out/SHA256SUMS)"
