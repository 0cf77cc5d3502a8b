#!/usr/bin/env bash
# The newcomer's entry: set up the environment if needed (./setup.sh), then run a recipe.
# The stages themselves are the stage driver's (utils/stage_driver.sh, which every
# egs/<corpus>/punct1/run.sh calls); every option except --corpus goes to the recipe.
#
#   ./run.sh                                  # egs/mini: set up if needed, stages 0-6
#   ./run.sh --corpus szeged --stage 4        # another recipe, options of the driver
#   ./run.sh --corpus all                     # every recipe whose data is present, then
#                                             #   one report of all tables: RESULTS_ALL.md
#   ./run.sh --help                           # the driver's options with their defaults
#
# --corpus all asks local/<corpus>/check_data.sh of each recipe whether its data is
# present (exit 0) or what to obtain (exit 2); recipes without that script are listed
# as "no data check" and not run. The combined report is written by
# python -m punct.bin.results_all; the exit status is that of the first failed recipe.
set -euo pipefail

root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
readonly root

corpus=mini
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --corpus)
      [ $# -ge 2 ] || { echo "run.sh: --corpus needs a value (a recipe under egs/, or all)" >&2; exit 1; }
      corpus=$2; shift 2 ;;
    --corpus=*) corpus=${1#--corpus=}; shift ;;
    *) args+=("$1"); shift ;;
  esac
done

recipes() { find "$root/egs" -mindepth 2 -maxdepth 2 -name punct1 -printf '%h\n' | sort | xargs -n1 basename | paste -sd' '; }

for a in "${args[@]+"${args[@]}"}"; do
  if [ "$a" = --help ] || [ "$a" = -h ]; then
    echo "Usage: ./run.sh [--corpus NAME|all] [options of the stage driver]"
    echo "  --corpus NAME   recipe egs/NAME/punct1 (default mini; known: $(recipes))"
    echo "  --corpus all    every recipe whose data is present, then RESULTS_ALL.md"
    echo
    [ "$corpus" = all ] && corpus=mini
    break
  fi
done

if [ "$corpus" != all ]; then
  if [ ! -x "$root/egs/$corpus/punct1/run.sh" ]; then
    echo "run.sh: no recipe egs/$corpus/punct1 (known: $(recipes))" >&2
    exit 1
  fi
  "$root/setup.sh"
  exec "$root/egs/$corpus/punct1/run.sh" "${args[@]+"${args[@]}"}"
fi

# ---- --corpus all: check, run what is present, combine the reports ----
"$root/setup.sh"
status_dir=$(mktemp -d)
trap 'rm -rf "$status_dir"' EXIT
first_failure=0
for name in $(recipes); do
  dir=$root/egs/$name/punct1
  check=$root/local/$name/check_data.sh
  if [ ! -x "$check" ]; then
    echo "no-check" > "$status_dir/$name.status"
    echo "run.sh: $name: no data check (local/$name/check_data.sh); not run"
    continue
  fi
  rc=0
  (cd "$dir" && "$check" downloads) > "$status_dir/$name.check" 2>&1 || rc=$?
  if [ "$rc" -eq 2 ]; then
    echo "missing" > "$status_dir/$name.status"
    echo "run.sh: $name: data missing, not run (see RESULTS_ALL.md)"
    continue
  elif [ "$rc" -ne 0 ]; then
    echo "check-failed $rc" > "$status_dir/$name.status"
    echo "run.sh: $name: local/$name/check_data.sh failed (exit $rc)" >&2
    cat "$status_dir/$name.check" >&2
    [ "$first_failure" -ne 0 ] || first_failure=$rc
    continue
  fi
  echo "run.sh: $name: data present, running egs/$name/punct1/run.sh ${args[*]+"${args[*]}"}"
  rc=0
  "$dir/run.sh" "${args[@]+"${args[@]}"}" || rc=$?
  echo "ran $rc" > "$status_dir/$name.status"
  if [ "$rc" -ne 0 ]; then
    echo "run.sh: $name: recipe failed (exit $rc)" >&2
    [ "$first_failure" -ne 0 ] || first_failure=$rc
  fi
done
# shellcheck source=path.sh
. "$root/path.sh"
python -m punct.bin.results_all --egs-dir "$root/egs" --status-dir "$status_dir" \
  --out "$root/RESULTS_ALL.md" --command "./run.sh --corpus all${args[*]+ ${args[*]}}"
exit "$first_failure"
