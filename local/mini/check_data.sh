#!/usr/bin/env bash
# Data check of the mini recipe (the contract of ./run.sh --corpus all, see
# docs/ARCHITECTURE.md): always present, stage 0 synthesises it from local/mini/corpus.
# Usage: local/mini/check_data.sh <downloads-dir>   (exit 0 present, 2 missing)
set -euo pipefail
[ $# -eq 1 ] || { echo "Usage: $0 <downloads-dir>" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$here/corpus" ] || { echo "mini: local/mini/corpus is missing from this checkout"; exit 2; }
echo "mini: synthesised by stage 0 from local/mini/corpus (eSpeak NG)"
