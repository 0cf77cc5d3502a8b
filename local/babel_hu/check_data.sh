#!/usr/bin/env bash
# Data check of the Hungarian BABEL recipe (the contract of ./run.sh --corpus all, see
# docs/ARCHITECTURE.md): present when BABEL_HU (conf/db.sh) holds a corpus in the BABEL
# layout (a <subset>/transcription folder), or stage 0 already linked one.
# Usage: local/babel_hu/check_data.sh <downloads-dir>   (exit 0 present, 2 missing)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=conf/db.sh
. "$here/../../conf/db.sh"
[ $# -eq 1 ] || { echo "Usage: $0 <downloads-dir>" >&2; exit 1; }
for dir in "$BABEL_HU" "$1/babel_hu/corpus"; do
  if [ -n "$dir" ] && [ -d "$dir" ] \
      && [ -n "$(find -L "$dir" -type d -name transcription -print -quit)" ]; then
    echo "babel_hu: $(cd "$dir" && pwd)"
    exit 0
  fi
done
cat <<MSG
check_data.sh: the Hungarian BABEL corpus (licence-gated, ELRA) was not found (BABEL_HU, conf/db.sh): set BABEL_HU
  (and BABEL_HU_PUNCT for punctuated transcripts) in conf/db.sh to your copy in the BABEL
  layout; egs/babel_hu/punct1/README.md says what to obtain and how to arrange it.
MSG
exit 2
