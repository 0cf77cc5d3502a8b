# shellcheck shell=bash
# utils/parse_options.sh: Kaldi-style command-line options for recipe scripts.
#
# Usage, in a script (works under `set -euo pipefail`):
#
#   stage=0          # first stage to run
#   nj=4             # number of parallel jobs
#   use_gpu=false    # train on the GPU
#   help_message="Usage: $0 [options] <data-dir> <exp-dir>"   # optional
#   . utils/parse_options.sh
#   # "$@" now holds only the positional arguments.
#
# Rules:
#   --foo-bar VALUE and --foo-bar=VALUE set the shell variable foo_bar (dashes
#     become underscores). The variable must already be an option (see below),
#     otherwise the script stops with exit 1 naming the option.
#   If an option's current value is true or false, the new value must be true or false.
#   --config FILE sources FILE before any other option is applied, wherever it
#     appears on the command line (so options given after it still override it);
#     it may be repeated. Every `name=` assignment in FILE must be an option.
#   --help / -h prints $help_message (if set) and then every option with its
#     current default value, then exits 0.
#   Parsing stops at the first argument that does not start with "--" (or at
#     "--", which is removed); the positional arguments are left in "$@".
#
# Which variables are options (so --help is generated and cannot drift):
#   * if the script sets option_vars="stage nj use_gpu", exactly those variables;
#   * otherwise every variable the script has set before sourcing this file whose
#     name is lower case ([a-z][a-z0-9_]*) and that is a plain, non-exported,
#     writable scalar. Exported variables (environment, conf/cmd.sh, path.sh),
#     arrays, names starting with "_" and help_message/option_vars are never options.
#   A trailing comment on the variable's assignment line in the script
#   (`nj=4  # number of parallel jobs`) is shown as its description in --help.
#
# All helper names start with _po_ and are removed again at the end.

_po_prog=${0##*/}
_po_script=${BASH_SOURCE[1]:-}

_po_die() {
  printf '%s: %s\n' "$_po_prog" "$1" >&2
  exit 1
}

# _po_is_option NAME: true when NAME is an option variable of the calling script.
_po_is_option() {
  local _po_v
  if [[ -n ${option_vars+x} ]]; then
    for _po_v in $option_vars; do
      [[ $_po_v == "$1" ]] && return 0
    done
    return 1
  fi
  [[ $1 =~ ^[a-z][a-z0-9_]*$ ]] || return 1
  [[ $1 == help_message || $1 == option_vars ]] && return 1
  [[ -v $1 ]] || return 1
  _po_v=${!1@a}
  [[ $_po_v != *[xaAnr]* ]]
}

# _po_option_names: the option variable names, one per line.
_po_option_names() {
  local _po_v
  if [[ -n ${option_vars+x} ]]; then
    for _po_v in $option_vars; do
      printf '%s\n' "$_po_v"
    done
    return 0
  fi
  for _po_v in $(compgen -v); do
    if _po_is_option "$_po_v"; then
      printf '%s\n' "$_po_v"
    fi
  done
}

# _po_set OPTION VALUE: assign VALUE to the variable of OPTION (--foo-bar -> foo_bar).
_po_set() {
  local _po_name=${1#--}
  _po_name=${_po_name//-/_}
  if ! [[ $_po_name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || ! _po_is_option "$_po_name"; then
    _po_die "invalid option $1: the script has no option variable '$_po_name' (see --help)"
  fi
  local _po_old=${!_po_name-}
  if [[ $_po_old == true || $_po_old == false ]] && [[ $2 != true && $2 != false ]]; then
    _po_die "option $1 is boolean: expected true or false, got '$2'"
  fi
  printf -v "$_po_name" '%s' "$2"
}

# _po_check_config FILE: every `name=` assignment in FILE must set an option.
_po_check_config() {
  local _po_line _po_name _po_n=0 _po_re='^[[:space:]]*([A-Za-z_][A-Za-z0-9_]*)='
  [[ -f $1 && -r $1 ]] || _po_die "--config $1: no such readable file"
  while IFS= read -r _po_line || [[ -n $_po_line ]]; do
    _po_n=$((_po_n + 1))
    [[ $_po_line =~ $_po_re ]] || continue
    _po_name=${BASH_REMATCH[1]}
    if ! _po_is_option "$_po_name"; then
      _po_die "$1:$_po_n: '$_po_name' is not an option of this script (see --help)"
    fi
  done < "$1"
}

_po_help() {
  local _po_v _po_val _po_line _po_w=0 _po_i
  local _po_re='^[[:space:]]*([a-zA-Z_][a-zA-Z0-9_]*)=(.*)$' _po_cre='[[:space:]]#[[:space:]]*(.*)$'
  local -a _po_names=() _po_cols=()
  local -A _po_known=() _po_desc=()
  if [[ -n ${help_message:-} ]]; then
    printf '%s\n\n' "$help_message"
  else
    printf 'Usage: %s [options] [arguments]\n\n' "$_po_prog"
  fi
  while IFS= read -r _po_v; do
    [[ -n $_po_v && $_po_v != config ]] && _po_known[$_po_v]=todo
  done < <(_po_option_names)
  # Options in the order the script assigns them, with the assignment's trailing comment.
  if [[ -n $_po_script && -r $_po_script ]]; then
    while IFS= read -r _po_line || [[ -n $_po_line ]]; do
      [[ $_po_line =~ $_po_re ]] || continue
      _po_v=${BASH_REMATCH[1]}
      _po_val=${BASH_REMATCH[2]}
      [[ ${_po_known[$_po_v]-} == todo ]] || continue
      _po_known[$_po_v]=seen
      _po_names+=("$_po_v")
      if [[ $_po_val =~ $_po_cre ]]; then
        _po_desc[$_po_v]=${BASH_REMATCH[1]}
      fi
    done < "$_po_script"
  fi
  while IFS= read -r _po_v; do
    [[ ${_po_known[$_po_v]-} == todo ]] && _po_names+=("$_po_v")
  done < <(_po_option_names)
  for _po_v in ${_po_names[@]+"${_po_names[@]}"}; do
    _po_val=${!_po_v-}
    if [[ -z $_po_val || $_po_val =~ [[:space:]] ]]; then
      _po_val="'$_po_val'"
    fi
    _po_cols+=("--${_po_v//_/-} $_po_val")
    if (( ${#_po_cols[-1]} > _po_w )); then
      _po_w=${#_po_cols[-1]}
    fi
  done
  (( _po_w >= 13 )) || _po_w=13
  printf 'Options (current defaults shown; --config FILE is read before the others):\n'
  for _po_i in "${!_po_cols[@]}"; do
    _po_v=${_po_names[_po_i]}
    if [[ -n ${_po_desc[$_po_v]-} ]]; then
      printf '  %-*s  # %s\n' "$_po_w" "${_po_cols[_po_i]}" "${_po_desc[$_po_v]}"
    else
      printf '  %s\n' "${_po_cols[_po_i]}"
    fi
  done
  printf '  %-*s  # %s\n' "$_po_w" "--config FILE" "read options from FILE (name=value lines)"
  printf '  %-*s  # %s\n' "$_po_w" "--help" "print this message"
}

# 1. --config files are read first, wherever they appear among the options.
_po_configs=()
_po_args=("$@")
_po_i=0
while (( _po_i < ${#_po_args[@]} )); do
  _po_a=${_po_args[_po_i]}
  case $_po_a in
    --) break ;;
    --help | -h) _po_i=$((_po_i + 1)) ;;
    --config=*) _po_configs+=("${_po_a#--config=}"); _po_i=$((_po_i + 1)) ;;
    --config)
      (( _po_i + 1 < ${#_po_args[@]} )) || _po_die "option --config needs a value"
      _po_configs+=("${_po_args[_po_i + 1]}")
      _po_i=$((_po_i + 2))
      ;;
    --?*=*) _po_i=$((_po_i + 1)) ;;
    --?*) _po_i=$((_po_i + 2)) ;;
    *) break ;;
  esac
done
for _po_a in ${_po_configs[@]+"${_po_configs[@]}"}; do
  _po_check_config "$_po_a"
  # shellcheck source=/dev/null
  . "$_po_a"
done

# 2. The other options, in order, up to the first positional argument.
while (( $# > 0 )); do
  case $1 in
    --) shift; break ;;
    --help | -h) _po_help; exit 0 ;;
    --config=*) shift ;;
    --config) shift 2 ;;
    --?*=*) _po_set "${1%%=*}" "${1#*=}"; shift ;;
    --?*)
      (( $# >= 2 )) || _po_die "option $1 needs a value"
      _po_set "$1" "$2"
      shift 2
      ;;
    *) break ;;
  esac
done

unset -v _po_prog _po_script _po_configs _po_args _po_i _po_a
unset -f _po_die _po_is_option _po_option_names _po_set _po_check_config _po_help
