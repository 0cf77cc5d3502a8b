#!/usr/bin/env bash
# Data check of the mTEDx recipe (the contract of ./run.sh --corpus all, see
# docs/ARCHITECTURE.md): present when MTEDX (conf/db.sh) holds <lang>-<lang>/ of
# MTEDX_LANG (or is that folder), or stage 0 already fetched it. MuST-C is optional.
# Usage: local/mtedx/check_data.sh <downloads-dir>   (exit 0 present, 2 missing)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=conf/db.sh
. "$here/../../conf/db.sh"
[ $# -eq 1 ] || { echo "Usage: $0 <downloads-dir>" >&2; exit 1; }
pair=$MTEDX_LANG-$MTEDX_LANG
for dir in "$MTEDX/$pair" "$MTEDX" "$1/mtedx/$pair"; do
  if [ -d "$dir/data/train" ] && [ -d "$dir/data/test" ]; then
    echo "mtedx: $(cd "$dir" && pwd)"
    exit 0
  fi
done
cat <<MSG
check_data.sh: Multilingual TEDx ($pair, OpenSLR 100, CC BY-NC-ND 4.0) was not found (MTEDX, conf/db.sh) at
  $MTEDX: set MTEDX in conf/db.sh, or fetch mtedx_$MTEDX_LANG.tgz with
  egs/mtedx/punct1/run.sh --stop-stage 0 (internet). MuST-C (MUSTC) is optional.
MSG
exit 2
