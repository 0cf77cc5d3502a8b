#!/usr/bin/env bash
# IWSLT 2012 TED punctuation benchmark (English, text only; Che et al. 2016 package):
# BRNN (punctuator2) and transformer systems, 4-class labels (iwslt4), tested on
# test2011 (Che's labels), test2011_full (the cased, fully punctuated reference) and,
# when the corpus copy holds it, test2011asr (ASR output; skipped otherwise). The
# validation blocks are decoded too, as the reference (dev) and in two ASR conditions:
# simulated (dev_asrsim, the selection set of nagy_asr) and, with iwslt_tts_asr_dev=true
# in stage 1, read by eSpeak NG and recognised by pocketsphinx (dev_tts_asr; dev_tts:
# the same blocks' reference words).
# Without train2012 the systems train on dev2012 blocks (see README.md).
# Options are those of the stage driver (utils/stage_driver.sh): ./run.sh --help
set -euo pipefail
cd "$(dirname "$0")"
export PUNCT_RECIPE_DIR=$PWD
exec ../../../utils/stage_driver.sh --corpus iwslt2012 --model-conf-dir conf/model --aligner none \
  --test-sets "test2011 test2011_full test2011asr dev dev_asrsim dev_tts dev_tts_asr" \
  --baseline-systems brnn_text \
  --transformer-systems "nagy nagy_fp32 nagy_asr nagy_asr_half nagy_asr_mix nagy_asr_soup courtland courtland_adamw courtland_frozen autopunct_text" \
  --system-dev-sets "nagy_asr:dev_asrsim nagy_asr_half:dev_asrsim nagy_asr_mix:dev_asrsim nagy_asr_soup:dev_asrsim" \
  --asr-pairs "test2011:test2011asr dev:dev_asrsim dev_tts:dev_tts_asr" \
  --report-layouts "courtland nagy" \
  --export-dir exp/export/en --export-train-data "IWSLT 2012 TED talks, English, lower-cased (Che et al. 2016 package)" \
  "$@"
