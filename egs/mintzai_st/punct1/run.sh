#!/usr/bin/env bash
# AutoPunct's corpus (González-Docasal et al. 2021): mintzai-ST, Basque Parliament speech,
# with its own train/dev/test partitions, in three set-ups as in the paper: ES (Spanish
# speech), EU (Basque speech) and ES+EU (both, one model). Each set-up trains its own
# systems (<system>_<lang>: the BRNN in two stages, text then pauses; the sub-word BRNN
# over sentencepiece units; AutoPunct's 8 Table 4 variants with BETO, BERTeus or IXAmBERT)
# and is scored in AutoPunct's Tables 4-7 layout beside the published figures.
#
#   ./run.sh                                  # stages 0-6, every set-up
#   ./run.sh --langs es_eu --transformers "autopunct_dg_b"
#
# Options of this script (the others go to the stage driver: ../../../utils/stage_driver.sh --help):
#   --langs "es eu es_eu"      set-ups to run (in this order; stages 0-1 run once)
#   --baselines "..."          stage-4 systems, without the _<lang> suffix
#   --transformers "..."       stage-5 systems, without the _<lang> suffix
# The set-ups share data/ and downloads/; their stage markers are .stages/<lang>/ and
# their token models data/token_list/<lang>/. Stage 2 aligns the ES+EU sets anew (they
# hold the same segments as the ES and EU sets).
# Its working directory (downloads/ data/ exp/ ...) is this folder, or $PUNCT_RECIPE_DIR
# when that is set (the recipe test runs it in a temporary folder).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export PUNCT_RECIPE_DIR=${PUNCT_RECIPE_DIR:-$here}
cd "$PUNCT_RECIPE_DIR"
langs="es eu es_eu"
baselines="brnn_text brnn_pause brnn_sp"
transformers="autopunct_text autopunct_text_b autopunct_cont autopunct_cont_b autopunct_dg"
transformers="$transformers autopunct_dg_b autopunct_du autopunct_du_b"
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --langs|--baselines|--transformers)
      [ $# -ge 2 ] || { echo "run.sh: $1 needs a value" >&2; exit 1; }
      declare "${1#--}=$2"; shift 2 ;;
    --langs=*|--baselines=*|--transformers=*)
      name=${1%%=*}; declare "${name#--}=${1#*=}"; shift ;;
    --help|-h)
      sed -n '2,20p' "$here/run.sh" | sed 's/^# \{0,1\}//'
      exec "$here/../../../utils/stage_driver.sh" --help ;;
    *) args+=("$1"); shift ;;
  esac
done

suffixed() {  # suffixed LANG NAME...: NAME_LANG...
  local lang=$1 out="" name
  shift
  for name in "$@"; do out="$out ${name}_$lang"; done
  echo "${out# }"
}

for lang in $langs; do
  case $lang in
    es|eu|es_eu) ;;
    *) echo "run.sh: unknown set-up $lang in --langs (known: es eu es_eu)" >&2; exit 1 ;;
  esac
done
for lang in $langs; do
  echo "$(date '+%Y-%m-%d %H:%M:%S') mintzai_st: set-up $lang"
  # shellcheck disable=SC2086
  "$here/../../../utils/stage_driver.sh" --corpus mintzai_st --stage-tag "$lang" \
    --train-set "train_$lang" --dev-set "dev_$lang" --test-sets "test_$lang" \
    --baseline-systems "$(suffixed "$lang" $baselines)" \
    --transformer-systems "$(suffixed "$lang" $transformers)" \
    --token-type unigram --nbpe 4000 --report-layouts autopunct \
    "${args[@]+"${args[@]}"}"
done
