#!/usr/bin/env bash
# Set the environment up if needed, then run the test suite (unit + mini recipe integration).
#   ./test.sh                 # everything
#   ./test.sh -m "not slow"   # unit tests only (pytest arguments pass through)
set -euo pipefail
cd "$(dirname "$0")"
./setup.sh
# shellcheck source=path.sh
. ./path.sh
exec python -m pytest -q "$@"
