#!/usr/bin/env bash
# Stage 1 of the mini recipe: data/{train,dev,test} (Kaldi files + words.tsv).
# Usage: local/mini/prepare.sh <downloads-dir> <data-dir>
# The non-speech map comes from run.sh's --nonspeech (environment variable nonspeech).
set -euo pipefail
python -m punct.bin.prepare_mini --synth-dir "$1/mini" --data-dir "$2" \
  --nonspeech "${nonspeech:-default}"
