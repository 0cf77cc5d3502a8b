#!/usr/bin/env bash
# Data check of the Szeged recipe (the contract of ./run.sh --corpus all, see
# docs/ARCHITECTURE.md): present when UD_Hungarian-Szeged ($SZEGED_UD, or stage 0's
# download in <downloads-dir>/szeged/ud) and the NerKor news subset ($NERKOR) are there.
# The full Szeged Treebank and Szeged NER are optional (the recipe says what they add).
# Usage: local/szeged/check_data.sh <downloads-dir>   (exit 0 present, 2 missing)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=conf/db.sh
. "$here/../../conf/db.sh"
# shellcheck source=local/szeged/sources.sh
. "$here/sources.sh"
[ $# -eq 1 ] || { echo "Usage: $0 <downloads-dir>" >&2; exit 1; }

missing=0
ud=$1/szeged/ud
if [ -d "$SZEGED_UD" ]; then
  echo "szeged: UD_Hungarian-Szeged $(cd "$SZEGED_UD" && pwd)"
elif [ -f "$ud/hu_szeged-ud-train.conllu" ] && [ -f "$ud/hu_szeged-ud-dev.conllu" ] \
  && [ -f "$ud/hu_szeged-ud-test.conllu" ]; then
  echo "szeged: UD_Hungarian-Szeged downloaded in $ud"
else
  cat <<MSG
check_data.sh: UD_Hungarian-Szeged (CC BY-NC-SA 3.0) was not found at $SZEGED_UD
  (SZEGED_UD, conf/db.sh). Point SZEGED_UD at a folder with hu_szeged-ud-{train,dev,test}.conllu,
  or download them (internet) with egs/szeged/punct1/run.sh --stop-stage 0.
MSG
  missing=1
fi
if [ -d "$NERKOR/train" ] && [ -d "$NERKOR/devel" ]; then
  echo "szeged: NerKor news $(cd "$NERKOR" && pwd)"
else
  nerkor_howto check_data.sh
  missing=1
fi
[ "$missing" -eq 0 ] || exit 2
