#!/usr/bin/env bash
# Data check of the IWSLT 2012 recipe (the contract of ./run.sh --corpus all, see
# docs/ARCHITECTURE.md): present when $IWSLT2012 (conf/db.sh) is a local copy holding the
# files stage 1 needs, or when stage 0 has downloaded them into <downloads-dir>/iwslt2012.
# Nothing is downloaded or checksummed here (stage 0 does both).
# Usage: local/iwslt2012/check_data.sh <downloads-dir>   (exit 0 present, 2 missing)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=conf/db.sh
. "$here/../../conf/db.sh"
# shellcheck source=local/iwslt2012/files.sh
. "$here/files.sh"
[ $# -eq 1 ] || { echo "Usage: $0 <downloads-dir>" >&2; exit 1; }

# complete DIR: true when DIR holds every file with a pinned checksum.
complete() {
  local name sum
  [ -d "$1" ] || return 1
  while read -r name sum; do
    [ "$sum" = - ] || locate "$1" "$name" > /dev/null || return 1
  done <<< "$files"
}

for dir in "$IWSLT2012" "$1/iwslt2012"; do
  if complete "$dir"; then
    echo "iwslt2012: $(cd "$dir" && pwd)"
    exit 0
  fi
done
cat <<MSG
iwslt2012: Che et al.'s IWSLT 2012 punctuation package (TED, CC BY-NC-ND 3.0) was not
  found at $IWSLT2012 (IWSLT2012, conf/db.sh). Point IWSLT2012 at a copy holding
  dev2012, test2011, IWSLT12.TED.MT.tst2011.en-fr.en.xml and _ReadMe_.txt (train2012 and
  test2011asr optional), or download it (internet) with
  egs/iwslt2012/punct1/run.sh --stop-stage 0   (from $IWSLT2012_URL).
MSG
exit 2
