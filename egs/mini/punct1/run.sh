#!/usr/bin/env bash
# The embedded multilingual mini recipe (EN, ES, EU, HU): eSpeak NG synthesis of a
# corpus written for this project, alignment, prosodic features and fbank, then the
# BRNN, the prosodic-phrase system (Moró & Szaszák), AutoPunct and UniPunc; scoring in
# the layouts of AutoPunct, Moró & Szaszák (Table 2) and UniPunc (Tables 2-3).
# Options are those of the stage driver (utils/stage_driver.sh): ./run.sh --help
set -euo pipefail
cd "$(dirname "$0")"
export PUNCT_RECIPE_DIR=$PWD
exec ../../../utils/stage_driver.sh --corpus mini --model-conf-dir conf/model --asr pocketsphinx \
  --baseline-systems "brnn_text brnn_pause prosodic_pp_dense prosodic_pp_sparse prosodic_pp_nopause prosodic_pp_labelonly" \
  --transformer-systems "autopunct_text autopunct_dg unipunc unipunc_brnn" \
  --report-layouts "autopunct moro unipunc" \
  --pause-twins "brnn_pause:brnn_text unipunc_brnn:brnn_text autopunct_dg:autopunct_text prosodic_pp_dense:prosodic_pp_nopause prosodic_pp_sparse:prosodic_pp_nopause" \
  "$@"
