#!/usr/bin/env bash
# utils/launch.sh: the job launcher with Kaldi's run.pl interface.
#   utils/launch.sh [options] JOB=1:N log/x.JOB.log command args...
#   utils/launch.sh [options] log/x.log command args...
# A thin shim over `python -m punct.launch.cli` (see `utils/launch.sh --help`).
# It uses the python first on PATH (path.sh puts the project's venv first) and puts
# the repository root on PYTHONPATH, so it works from any directory, also through
# the utils symlink of egs/<corpus>/punct1.
set -euo pipefail

src=$(readlink -f -- "${BASH_SOURCE[0]}")
root=$(cd -- "$(dirname -- "$src")/.." && pwd -P)
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"

python=python
if ! command -v "$python" > /dev/null 2>&1; then
  python=python3
fi
exec "$python" -m punct.launch.cli "$@"
