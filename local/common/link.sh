# shellcheck shell=bash
# Sourced by the stage-0 scripts local/<corpus>/download.sh, which set $out (the corpus'
# download folder, <out-dir>/<corpus>) before calling link.

# shellcheck disable=SC2154  # $out: set by the sourcing download.sh
link() {  # link SRC NAME: $out/NAME -> SRC (never over a real directory)
  if [ -e "$out/$2" ] && [ ! -L "$out/$2" ]; then
    echo "download.sh: $out/$2 exists and is not a link; remove it to use $1" >&2
    exit 1
  fi
  ln -sfn "$(cd "$1" && pwd)" "$out/$2"
  echo "$(basename "$out"): $2 -> $(cd "$1" && pwd)"
}
