#!/usr/bin/env bash
# Stage 0 of the Hungarian Szeged recipe: the corpora into <out-dir>/szeged/.
#
# Public subsets (conf/db.sh; default the shared copies next to the repository):
#   SZEGED_UD   UD_Hungarian-Szeged; missing -> its 3 CoNLL-U files are downloaded from
#               SZEGED_UD_URL (resumable, sha256-checked: python -m punct.bin.download)
#   NERKOR      NYTK-NerKor news subset (train/ devel/); missing -> exit 2 with instructions
#   SZEGED_NER  Szeged NER valid.txt (optional extra test set)
# The full Szeged Treebank (Nagy et al.'s data) is licence-gated: set SZEGED_TREEBANK to
# your copy; without it the recipe runs on the public subsets and says how to get it.
# Usage: local/szeged/download.sh <out-dir>
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=conf/db.sh
. "$here/../../conf/db.sh"
# shellcheck source=local/szeged/sources.sh
. "$here/sources.sh"
[ $# -eq 1 ] || { echo "Usage: $0 <out-dir>" >&2; exit 1; }
out=$1/szeged
mkdir -p "$out"

# shellcheck source=local/common/link.sh
. "$here/../common/link.sh"

if [ -d "$SZEGED_UD" ]; then
  link "$SZEGED_UD" ud
else
  echo "szeged: $SZEGED_UD not found; downloading UD_Hungarian-Szeged from $SZEGED_UD_URL"
  [ -L "$out/ud" ] && rm "$out/ud"
  mkdir -p "$out/ud"
  while read -r name sum; do
    python -m punct.bin.download --url "$SZEGED_UD_URL/$name" --out "$out/ud/$name" \
      --sha256 "$sum"
  done <<'SUMS'
hu_szeged-ud-train.conllu 1e9d02111d6e842ad60d20cccfb43d8f758b4cc311d13e2044af2e285372847a
hu_szeged-ud-dev.conllu 8cb5b630e09d5d938ce624b06fe3abe57a631533f5aef186ba533daca6e4ab5b
hu_szeged-ud-test.conllu 9031ec98f775ceae6940580a1bb4ef8a2a9e9bee38c40eb9e8ce0f006b56fa59
SUMS
fi

if [ -d "$NERKOR/train" ] && [ -d "$NERKOR/devel" ]; then
  link "$NERKOR" nerkor
else
  nerkor_howto download.sh >&2
  exit 2
fi

if [ -f "$SZEGED_NER/valid.txt" ]; then
  link "$SZEGED_NER" szeged_ner
else
  rm -f "$out/szeged_ner"
  echo "szeged: Szeged NER not found at $SZEGED_NER (optional test set test_szeged_ner skipped)"
fi

if [ -n "$SZEGED_TREEBANK" ]; then
  if [ ! -e "$SZEGED_TREEBANK" ]; then
    echo "download.sh: SZEGED_TREEBANK=$SZEGED_TREEBANK does not exist (conf/db.sh)" >&2
    exit 2
  fi
  ln -sfn "$(cd "$(dirname "$SZEGED_TREEBANK")" && pwd)/$(basename "$SZEGED_TREEBANK")" \
    "$out/treebank"
  echo "szeged: full Szeged Treebank -> $SZEGED_TREEBANK"
else
  rm -f "$out/treebank"
  cat <<'MSG'
szeged: the full Szeged Treebank (Nagy et al. 2021's data: 1.2M words, 6 genres) is not
  configured; this run uses the public subsets (UD_Hungarian-Szeged, NerKor news).
  The treebank is licence-gated: register at https://rgai.inf.u-szeged.hu (Szeged
  Treebank 2.0 download page), then set SZEGED_TREEBANK in conf/db.sh to the CoNLL-U
  file or folder, or to szeged.allChunks.newKr.unshuffled (form in column 2).
MSG
fi
