#!/usr/bin/env bash
# The embedded multilingual mini recipe (EN, ES, EU, HU): eSpeak NG synthesis of a
# corpus written for this project, alignment, BRNN and AutoPunct, scoring.
# Options are those of the stage driver: ./run.sh --help
set -euo pipefail
cd "$(dirname "$0")"
export PUNCT_RECIPE_DIR=$PWD
exec ../../../run.sh --corpus mini --model-conf-dir conf/model "$@"
