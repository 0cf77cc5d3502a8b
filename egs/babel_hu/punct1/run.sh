#!/usr/bin/env bash
# Hungarian BABEL (Moró & Szaszák 2017): the prosodic-phrase punctuation system on the
# licence-gated Hungarian read speech in the BABEL layout (BABEL_HU in conf/db.sh; see
# README.md), marks mapped as in the paper (label set moro2_paper). Stage 0 links the copy (exit 2 with instructions without it), stage 1 makes
# the paper's 80/10/10 split of the recordings, stage 2 aligns the words (the paper's
# forced alignment: dtw against eSpeak NG renderings), stage 3 extracts F0/intensity, stage
# 4 trains the dense and sparse PP systems and the feature-stream ablations, stage 6
# scores them into the paper's Table 2 and Figs. 1-2 layouts, published figures beside.
# Options are those of the stage driver: ./run.sh --help
set -euo pipefail
cd "$(dirname "$0")"
export PUNCT_RECIPE_DIR=$PWD
exec ../../../utils/stage_driver.sh --corpus babel_hu --model-conf-dir conf/model --aligner dtw --nonspeech babel \
  --baseline-systems "prosodic_pp_dense prosodic_pp_sparse prosodic_pp_nopause prosodic_pp_labelonly" \
  --transformer-systems "" --report-layouts moro "$@"
