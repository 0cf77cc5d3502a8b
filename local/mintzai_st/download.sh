#!/usr/bin/env bash
# Stage 0 of the mintzai-ST recipe: the corpus (Basque Parliament plenary sessions
# 2011-2018, Spanish and Basque speech with transcriptions and translations; Etchegoyhen
# et al. 2021; CC BY-NC-ND 4.0, Fundación Vicomtech) as <out-dir>/mintzai_st/corpus, the
# folder holding v1.0/.
#
# - MINTZAI_ST (conf/db.sh) an extracted copy: linked, nothing copied.
# - MINTZAI_ST a tarball: checksum verified, then extracted safely.
# - otherwise: MINTZAI_ST_URL (about 25 GB) is downloaded by python -m punct.bin.download
#   (punct/data/download.py: resumable with HTTP Range, free disk space checked first,
#   .part file renamed only when complete), checked, and extracted (absolute paths, ".."
#   and links leaving the target are refused; free space checked before writing).
# Checksum: MINTZAI_ST_SHA256 when pinned; no verified sha256 was published, so when none
# is pinned the tarball's sha256 is recorded in <out-dir>/mintzai_st/SHA256SUMS at first
# sight and every later copy is checked against that record.
# Finally the layout is checked (python -m punct.bin.prepare_mintzai --check-layout): an
# unexpected one stops here with a listing of what the copy holds.
# Usage: local/mintzai_st/download.sh <out-dir>
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=conf/db.sh
. "$here/../../conf/db.sh"
[ $# -eq 1 ] || { echo "Usage: $0 <out-dir>" >&2; exit 1; }
out=$1/mintzai_st
corpus=$out/corpus
sums=$out/SHA256SUMS
mkdir -p "$out"

# verify TARBALL: against the pinned sha256, else against (or into) the record.
verify() {
  local name got want=""
  name=$(basename "$1")
  echo "mintzai_st: computing the sha256 of $1 ($(du -h "$1" | cut -f1))"
  got=$(sha256sum "$1" | cut -d' ' -f1)
  if [ -n "$MINTZAI_ST_SHA256" ]; then
    want=$MINTZAI_ST_SHA256
  elif [ -f "$sums" ]; then
    want=$(awk -v n="$name" '$2 == n {print $1}' "$sums")
  fi
  if [ -z "$want" ]; then
    echo "$got  $name" >> "$sums"
    echo "mintzai_st: no sha256 pinned (MINTZAI_ST_SHA256 in conf/db.sh); recorded $got" \
      "in $sums (later copies are checked against it; pin it once you trust this copy)"
  elif [ "$got" != "$want" ]; then
    echo "download.sh: checksum mismatch for $1: expected $want" \
      "($([ -n "$MINTZAI_ST_SHA256" ] && echo MINTZAI_ST_SHA256 || echo "recorded in $sums")), found" \
      "$got (a different or damaged copy; delete it to download it again)" >&2
    exit 1
  else
    echo "mintzai_st: sha256 verified ($got)"
  fi
}

# extract TARBALL: safely into $out/extracted, then link the folder holding v1.0.
extract() {
  local tmp=$out/extracted.part root
  rm -rf "$tmp"
  python -m punct.bin.download --extract "$1" --to "$tmp"
  rm -rf "$out/extracted"
  mv "$tmp" "$out/extracted"
  root=$(find "$out/extracted" -maxdepth 3 -type d -name v1.0 -print -quit)
  if [ -z "$root" ]; then
    echo "download.sh: no v1.0/ folder in $1; it holds:" >&2
    find "$out/extracted" -maxdepth 3 | head -n 30 >&2
    exit 1
  fi
  ln -sfn "$(cd "$(dirname "$root")" && pwd)" "$corpus"
}

if [ -e "$corpus/v1.0" ]; then
  echo "mintzai_st: $corpus is in place"
elif [ -n "$MINTZAI_ST" ] && [ -d "$MINTZAI_ST" ]; then
  ln -sfn "$(cd "$MINTZAI_ST" && pwd)" "$corpus"
  echo "mintzai_st: using the local copy $MINTZAI_ST (linked as $corpus)"
elif [ -n "$MINTZAI_ST" ] && [ -f "$MINTZAI_ST" ]; then
  verify "$MINTZAI_ST"
  extract "$MINTZAI_ST"
elif [ -n "$MINTZAI_ST" ]; then
  echo "download.sh: MINTZAI_ST=$MINTZAI_ST (conf/db.sh) does not exist; set it to the" \
    "extracted corpus or its tarball, or leave it empty to download $MINTZAI_ST_URL" >&2
  exit 2
else
  tarball=$out/$(basename "$MINTZAI_ST_URL")
  echo "mintzai_st: downloading $MINTZAI_ST_URL (about 25 GB; resumable: rerun after an" \
    "interruption) to $tarball"
  sum_opt=()
  [ -n "$MINTZAI_ST_SHA256" ] && sum_opt=(--sha256 "$MINTZAI_ST_SHA256")
  rc=0
  python -m punct.bin.download --url "$MINTZAI_ST_URL" --out "$tarball" \
    --min-free-gb "$MINTZAI_ST_EXTRACT_GB" "${sum_opt[@]+"${sum_opt[@]}"}" || rc=$?
  if [ "$rc" -ne 0 ]; then
    [ "$rc" -eq 2 ] && echo "download.sh: could not download $MINTZAI_ST_URL (rerun to" \
      "resume, or set MINTZAI_ST in conf/db.sh to a local copy or tarball)" >&2
    exit "$rc"
  fi
  verify "$tarball"
  extract "$tarball"
  echo "mintzai_st: extracted; the tarball $tarball may be deleted to save space"
fi
python -m punct.bin.prepare_mintzai --db-dir "$corpus" --check-layout
