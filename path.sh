# Source this file: puts the project's environment on PATH.
# shellcheck shell=bash
PUNCT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PUNCT_ROOT
export PATH="$PUNCT_ROOT/.venv/bin:$PUNCT_ROOT/utils:$PATH"
export PYTHONPATH="$PUNCT_ROOT${PYTHONPATH:+:$PYTHONPATH}"
export LC_ALL=C
export PYTHONUNBUFFERED=1
# Everything runs offline: never reach a model hub.
export HF_HUB_OFFLINE=1
export TRANSFORMERS_OFFLINE=1
export TOKENIZERS_PARALLELISM=false
