#!/usr/bin/env bash
# UniPunc (Zhu et al. 2022) on TED speech: Multilingual TEDx ($MTEDX_LANG, Spanish by
# default; OpenSLR 100) and, when you have it, MuST-C English with UniPunc's own test
# files (audio / mixed JSONL). Systems: the BRNN ("BiLSTM"), a text-only encoder ("BERT"),
# UniPunc-Mix, UniPunc-Audio and the BRNN graft (BiLSTM-UniPunc); three marks (comma, full
# stop, question mark); audio-only and mixed test sets scored in UniPunc's Tables 2-3.
# MuST-C (licence-gated): MUSTC in conf/db.sh, then
#   ./run.sh --train-set mustc_train --dev-set mustc_dev \
#     --test-sets "mustc_tst_common unipunc_audio unipunc_mixed"
# Options are those of the stage driver: ./run.sh --help
set -euo pipefail
cd "$(dirname "$0")"
export PUNCT_RECIPE_DIR=$PWD
exec ../../../utils/stage_driver.sh --corpus mtedx --model-conf-dir conf/model --test-sets test \
  --mixed-share 0.79 --baseline-systems brnn_text \
  --transformer-systems "autopunct_text unipunc unipunc_audio unipunc_brnn" \
  --report-layouts unipunc "$@"
