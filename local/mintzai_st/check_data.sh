#!/usr/bin/env bash
# Data check of the mintzai-ST recipe (the contract of ./run.sh --corpus all, see
# docs/ARCHITECTURE.md): present when MINTZAI_ST (conf/db.sh) names the extracted corpus
# (holding v1.0/ or MintzAI-ST/v1.0/) or its tarball, or stage 0 already fetched it. It
# only looks: stage 0 downloads the 25 GB tarball when asked.
# Usage: local/mintzai_st/check_data.sh <downloads-dir>   (exit 0 present, 2 missing)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=conf/db.sh
. "$here/../../conf/db.sh"
[ $# -eq 1 ] || { echo "Usage: $0 <downloads-dir>" >&2; exit 1; }
for dir in "$MINTZAI_ST" "$1/mintzai_st"; do
  [ -n "$dir" ] || continue
  if [ -f "$dir" ] || [ -d "$dir/v1.0" ] || [ -d "$dir/MintzAI-ST/v1.0" ]; then
    echo "mintzai_st: $dir"
    exit 0
  fi
done
cat <<MSG
check_data.sh: mintzai-ST (CC BY-NC-ND 4.0, about 25 GB) was not found (MINTZAI_ST, conf/db.sh): set it in
  conf/db.sh to an extracted copy or the tarball, or fetch it with
  egs/mintzai_st/punct1/run.sh --stop-stage 0 (internet; URL in MINTZAI_ST_URL).
MSG
exit 2
