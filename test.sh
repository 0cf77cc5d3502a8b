#!/usr/bin/env bash
# Set the environment up if needed, then run the test suite (unit + mini recipe integration).
#   ./test.sh                 # everything
#   ./test.sh -m "not slow"   # unit tests only (pytest arguments pass through)
#   ./test.sh -n 0            # in one process (default: PUNCT_TEST_WORKERS=2 workers, one
#                             # test file each at a time, so module fixtures are built once;
#                             # the slowest files first: tests/conftest.py SLOWEST_FIRST)
set -euo pipefail
cd "$(dirname "$0")"
./setup.sh
# shellcheck source=path.sh
. ./path.sh
exec python -m pytest -q -n "${PUNCT_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder "$@"
