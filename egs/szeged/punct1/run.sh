#!/usr/bin/env bash
# Hungarian punctuation (Nagy et al. 2021's set-up) on the public Szeged subsets, text
# only: UD_Hungarian-Szeged (+ NerKor news for training and validation), Nagy's label
# mapping onto COMMA/PERIOD/QUESTION (label set nagy4), Nagy Table 5 layout. The
# transformer systems run over a sentencepiece BERT trained on this corpus only.
# The full Szeged Treebank is licence-gated: SZEGED_TREEBANK in conf/db.sh (README.md).
# Options are those of the stage driver (utils/stage_driver.sh): ./run.sh --help
set -euo pipefail
cd "$(dirname "$0")"
export PUNCT_RECIPE_DIR=$PWD
exec ../../../utils/stage_driver.sh --corpus szeged --model-conf-dir conf/model --aligner none \
  --test-sets "test test_szeged_ner" --token-type unigram --nbpe 4000 --mlm-epochs 30 \
  --baseline-systems "brnn_text brnn_sp" \
  --transformer-systems "nagy_sp courtland_sp nagy_sp_mlm" --report-layouts nagy "$@"
