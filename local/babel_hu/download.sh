#!/usr/bin/env bash
# Stage 0 of the Hungarian BABEL recipe (egs/babel_hu/punct1): link the user's corpus copy
# into <out-dir>/babel_hu/. Nothing is downloaded: the corpus is licence-gated.
#
#   BABEL_HU        the corpus copy in the BABEL layout (conf/db.sh):
#                   <subset>/audio/<recording>.sph|wav + <subset>/transcription/<recording>.txt
#   BABEL_HU_PUNCT  optional: punctuated copies of the transcripts (<recording>.txt with the
#                   same time stamps and words), when the transcripts carry no punctuation
# Without BABEL_HU: exit 2 with what to obtain and where to set it (egs/babel_hu/punct1/README.md).
# Usage: local/babel_hu/download.sh <out-dir>
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=conf/db.sh
. "$here/../../conf/db.sh"
[ $# -eq 1 ] || { echo "Usage: $0 <out-dir>" >&2; exit 1; }
out=$1/babel_hu

# shellcheck source=local/common/link.sh
. "$here/../common/link.sh"

if [ -z "$BABEL_HU" ] || [ ! -d "$BABEL_HU" ] \
    || [ -z "$(find -L "$BABEL_HU" -type d -name transcription -print -quit)" ]; then
  cat >&2 <<MSG
download.sh: the Hungarian BABEL corpus was not found (BABEL_HU='${BABEL_HU}', conf/db.sh).
  Moró & Szaszák (2017) trained on the Hungarian part of BABEL, the Eastern European
  multi-language speech database (Roach et al., ICSLP 1996; read speech of non-professional
  native speakers), distributed under licence by ELRA (catalogue.elra.info). It cannot be
  downloaded here. With your licensed copy:
    1. arrange it in the BABEL layout: <subset>/audio/<recording>.sph or .wav and
       <subset>/transcription/<recording>.txt, transcripts alternating [seconds] lines and
       text lines (egs/babel_hu/punct1/README.md);
    2. give the reference punctuation: punctuated transcript text lines (the read texts),
       or a second folder of punctuated transcripts in BABEL_HU_PUNCT;
    3. set BABEL_HU (and BABEL_HU_PUNCT) in conf/db.sh or the environment and rerun.
MSG
  exit 2
fi
mkdir -p "$out"
link "$BABEL_HU" corpus
if [ -n "$BABEL_HU_PUNCT" ]; then
  if [ ! -d "$BABEL_HU_PUNCT" ]; then
    echo "download.sh: BABEL_HU_PUNCT=$BABEL_HU_PUNCT is not a folder (conf/db.sh)" >&2
    exit 2
  fi
  link "$BABEL_HU_PUNCT" punct
else
  rm -f "$out/punct"
fi
