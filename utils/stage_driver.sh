#!/usr/bin/env bash
# The stage driver of punct recipes (stages 0-7). A recipe's run.sh (egs/<corpus>/punct1)
# exports PUNCT_RECIPE_DIR (its own directory) and calls this script with its corpus,
# sets and systems; the driver works inside that directory (data/ dump/ exp/ results/).
# It never installs anything (./setup.sh does, called by the top-level ./run.sh) and
# never names a model family (it asks python -m punct.bin.system_info).
#
#   egs/mini/punct1/run.sh --stage 2 --stop-stage 3   # a range of stages
#   egs/mini/punct1/run.sh --stage 4 --force true     # rerun stages even if done
#   egs/mini/punct1/run.sh --help                     # every option with its default
set -euo pipefail

root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
readonly root

if [ -z "${PUNCT_RECIPE_DIR:-}" ] || [ ! -d "$PUNCT_RECIPE_DIR" ]; then
  echo "stage_driver.sh: PUNCT_RECIPE_DIR must name the recipe directory" \
    "(run egs/<corpus>/punct1/run.sh, or ./run.sh --corpus <corpus>)" >&2
  exit 1
fi
cd "$PUNCT_RECIPE_DIR"

# ---- options (each is --name value; --help lists them with their defaults) ----
corpus=mini                 # corpus name: local/<corpus>/ holds its download/prepare scripts
stage=0                     # first stage to run
stop_stage=7                # last stage to run
force=false                 # rerun stages that are already done
nj=2                        # parallel jobs for synthesis, alignment, decoding
num_threads=2               # CPU threads of stages 4-6: one job with all of them, or --system-jobs jobs sharing them
ngpu=0                      # GPUs per training job (0 = CPU); N > 1 = N data-parallel processes
system_jobs=auto            # systems trained/decoded at once in stages 4-6, and stage 2's recognition beside alignment (auto: --num-threads on CPU, 1 on GPU)
train_set=train             # training set (data/<set>)
dev_set=dev                 # validation set: model selection and early stopping
system_dev_sets=""          # "system:set ...": systems selected on another validation set (e.g. nagy_asr:dev_asrsim)
test_sets="test"            # test sets to decode and score
aligner=dtw                 # stage 2: dtw | vad | pocketsphinx | ctc | espnet_ctc | auto | reference | ctm | textgrid | none
asr=none                    # stage 2: recogniser of each test set's ASR condition (data/<set>_asr): none | pocketsphinx | espnet | ctc
asr_model=""                # --asr espnet: the ESPnet ASR model dir; ctc: a CTC model dir or HF id (language: --asr-language)
asr_language=""             # --asr espnet/ctc: utt2lang code of the utterances it decodes (empty: all)
ctc_model=""                # --aligner ctc: wav2vec2/MMS CTC model (HF id or dir); espnet_ctc: ESPnet model dir
nonspeech=default           # map of non-speech tokens (<breath>, [noise]): punct/conf/nonspeech/<name>.yaml or a path (docs/NONSPEECH.md)
score_alignment=true        # boundary error vs downloads/<corpus>/ref timings, where they exist
feature_streams=auto          # stage 3 features of sets with audio (auto: what the systems read)
mixed_share=0.5             # share of test utterances without audio in <set>_mixed (UniPunc)
token_type=none             # stage 3 token stage: none | unigram | bpe (sentencepiece model)
nbpe=4000                   # its vocabulary size: data/token_list/[<tag>/]<token_type><nbpe>/sp.model
mlm_epochs=0                # unigram: MLM pre-training epochs of its from-scratch BERT (-> bert_mlm)
baseline_systems="brnn_text brnn_pause"           # stage 4 configs (conf/model/<name>.yaml)
transformer_systems="autopunct_text autopunct_dg" # stage 5 configs
report_layouts="autopunct"  # stage 6 table layouts: autopunct courtland nagy moro unipunc
published=autopunct_2021    # published figures of the autopunct layout ('none': leave out)
pause_twins=""              # stage 6: "system:twin ..." pause-aware systems and their text-only twins (gain table)
results_md=RESULTS.md       # stage 6: the report (e.g. RESULTS_asr.md for a set-up of a few systems)
results_dir=results         # stage 6: its tables and plots (e.g. results_asr with RESULTS_asr.md)
asr_pairs=""                # stage 6: "set:asr_set ..." reference sets and their ASR conditions (penalty table); <set>:<set>_asr of --asr are added
model_conf_dir=conf/model   # where <system>.yaml are looked up (recipe dir, then repo root)
stage_tag=""                # set-up name when several share a recipe dir (markers .stages/<tag>/)
export_dir=""               # stage 7: export the best system on --dev-set here (e.g. exp/export/en); empty: no export
export_systems=""           # stage 7: the candidates (empty: every system of stages 4-5)
export_train_data=""        # stage 7: the training data, as the model card states it
help_message="Usage: run.sh [options]  (stages: 0 data, 1 prepare, 2 align, 3 dump,
4 baselines, 5 transformers, 6 decode+score+report, 7 export the best system on dev)"

# shellcheck source=path.sh
. "$root/path.sh"
# shellcheck source=conf/cmd.sh
. "$root/conf/cmd.sh"
[ -f conf/cmd.sh ] && . conf/cmd.sh
. "$root/utils/parse_options.sh"
[ $# -eq 0 ] || { echo "stage_driver.sh: unexpected arguments: $*" >&2; exit 1; }

log() { echo "$(date '+%Y-%m-%d %H:%M:%S') ($(basename "$0"):${BASH_LINENO[0]}) $*"; }
mkdir -p .stages exp log
# marker N: the done marker of stage N; stages 2-6 of a tagged set-up have their own.
marker() {
  if [ -n "$stage_tag" ] && [ "$1" -ge 2 ]; then echo ".stages/$stage_tag/$1.done"
  else echo ".stages/$1.done"; fi
}
# stage_in_range N: --stage <= N <= --stop-stage; stage_pending N: in range and not done
# (or forced).
stage_in_range() { [ "$stage" -le "$1" ] && [ "$stop_stage" -ge "$1" ]; }
stage_pending() {
  stage_in_range "$1" || return 1
  [ ! -f "$(marker "$1")" ] || $force
}
# stage_begin N NAME: true when stage N is pending (it logs the start, or why not).
stage_begin() {
  stage_in_range "$1" || return 1
  if ! stage_pending "$1"; then
    log "Stage $1 ($2): already done ($(marker "$1"); --force true to rerun)"
    return 1
  fi
  log "Stage $1: $2"
  stage_start=$(date +%s)
}
stage_end() {
  local secs=$(( $(date +%s) - stage_start ))
  mkdir -p "$(dirname "$(marker "$1")")"
  printf '{"stage": %d, "name": "%s", "seconds": %d}\n' "$1" "$2" "$secs" > "$(marker "$1")"
  log "Stage $1 ($2) done in ${secs} s"
}
conf_for() {
  local f
  for f in "$model_conf_dir/$1.yaml" "$root/$model_conf_dir/$1.yaml"; do
    [ -f "$f" ] && { echo "$f"; return 0; }
  done
  echo "stage_driver.sh: no config $1.yaml in $model_conf_dir or $root/$model_conf_dir" >&2
  return 1
}
# all_sets: the training, validation and test sets, each once (a validation set may be
# decoded as a test set too, e.g. to compare rankings on dev and on its ASR condition).
all_sets() {
  local set seen=" "
  for set in $train_set $dev_set $test_sets; do
    case $seen in *" $set "*) ;; *) seen="$seen$set " ;; esac
  done
  echo "$seen"
}
mixed_sets() { local s; for s in $test_sets; do [ ! -d "data/${s}_mixed" ] || echo "${s}_mixed"; done; }
# system_info QUERY SYSTEM...: what the systems' families declare (punct.bin.system_info), so
# that this driver never names a model family. One call answers every query for every
# system of the run (load_system_info: each call pays for importing all families); the
# lists keep the SYSTEMs given (waves: the run's waves restricted to them, in order).
system_info_lines=""
load_system_info() {
  local sys args=() systems=""
  # the systems of the stages this run goes through (stages 3 and 6 ask about all)
  if stage_in_range 3 || stage_in_range 6; then systems="$baseline_systems $transformer_systems"
  else
    if stage_in_range 4; then systems=$baseline_systems; fi
    if stage_in_range 5; then systems="$systems $transformer_systems"; fi
  fi
  for sys in $systems; do args+=(--config "$(conf_for "$sys")"); done
  [ ${#args[@]} -eq 0 ] || system_info_lines=$(python -m punct.bin.system_info --query all "${args[@]}")
}
system_info() {
  local query=$1 line word kept
  shift
  while IFS= read -r line; do
    case $line in "$query"|"$query "*) line=${line#"$query"}; line=${line# } ;; *) continue ;; esac
    case $query in
      streams) echo "$line" ;;
      family) case " $* " in *" ${line%% *} "*) echo "$line" ;; esac ;;
      *) kept=""  # in the order given (stage 4 starts the longest systems first)
         for word in "$@"; do case " $line " in *" $word "*) kept="$kept $word" ;; esac; done
         [ -z "$kept" ] || echo "${kept# }" ;;
    esac
  done <<< "$system_info_lines"
}
# dev_set_of SYSTEM: its validation set (--system-dev-sets, else --dev-set).
dev_set_of() {
  local pair
  for pair in $system_dev_sets; do
    if [ "${pair%%:*}" = "$1" ]; then echo "${pair#*:}"; return; fi
  done
  echo "$dev_set"
}
# ---- the job pool of stages 4-6: up to $system_jobs systems at once, $job_threads threads each
if [ "$system_jobs" = auto ]; then
  if [ "$ngpu" -gt 0 ]; then system_jobs=1; else system_jobs=$num_threads; fi
fi
[ "$system_jobs" -ge 1 ] 2>/dev/null || { echo "stage_driver.sh: --system-jobs must be auto or >= 1" >&2; exit 1; }
# pool_threads N: threads for each of N jobs to come: the slots they fill share
# --num-threads (one system left to train gets them all, not one slot's share).
pool_threads() {
  local jobs=$(( $1 < system_jobs ? $1 : system_jobs ))
  [ "$jobs" -ge 1 ] || jobs=1
  echo $(( num_threads / jobs > 0 ? num_threads / jobs : 1 ))
}
job_threads=$(pool_threads "$system_jobs")
pool_pids=() pool_names=() pool_failed=()
# pool_collect LIMIT: wait until fewer than LIMIT pooled jobs run; records the failed ones.
pool_collect() {
  local i pids names
  while :; do
    pids=() names=()
    for i in "${!pool_pids[@]}"; do
      if kill -0 "${pool_pids[$i]}" 2>/dev/null; then
        pids+=("${pool_pids[$i]}"); names+=("${pool_names[$i]}")
      elif ! wait "${pool_pids[$i]}"; then
        pool_failed+=("${pool_names[$i]}")
      fi
    done
    pool_pids=("${pids[@]+"${pids[@]}"}") pool_names=("${names[@]+"${names[@]}"}")
    [ "${#pool_pids[@]}" -lt "$1" ] && return 0
    sleep 1
  done
}
# pool_run NAME COMMAND...: COMMAND in the background once a slot is free (in the
# foreground with one slot).
pool_run() {
  local name=$1
  shift
  if [ "$system_jobs" -eq 1 ]; then "$@"; return; fi
  pool_collect "$system_jobs"
  "$@" &
  pool_pids+=("$!") pool_names+=("$name")
}
# pool_wait WHAT [LOGS]: wait for every pooled job; exit naming the failed ones and where
# their logs are (default exp/<system>/log/).
pool_wait() {
  pool_collect 1
  [ "${#pool_failed[@]}" -eq 0 ] && return 0
  log "$1 failed: ${pool_failed[*]} (see ${2:-exp/<system>/log/})"
  exit 1
}

train_one() {
  local sys=$1 resume=() then_decode=() set
  if [ -f "exp/$sys/.done" ] && ! $force; then log "  $sys: trained already"; return; fi
  # An interrupted or preempted training (exit 75) continues from its last checkpoint.
  if [ -f "exp/$sys/last.pt" ] && ! $force; then
    resume=(--resume); log "  $sys: resuming from exp/$sys/last.pt"
  fi
  # On CPU, when this run reaches stage 6, the training job also decodes and scores the
  # system's test sets (no second process paying the imports); stage 6 finds them done.
  if $decode_after_training; then
    for set in $(decode_sets "$sys"); do
      then_decode+=(--decode-data-dir "data/$set" --decode-out-dir "exp/$sys/decode_$set")
    done
  fi
  # shellcheck disable=SC2154
  $train_cmd --num-threads "$job_threads" --gpu "$ngpu" "exp/$sys/log/train.log" \
    python -m punct.bin.train --config "$(conf_for "$sys")" \
      --train-dir "data/$train_set" --dev-dir "data/$(dev_set_of "$sys")" --exp-dir "exp/$sys" \
      --num-threads "$job_threads" --ngpu "$ngpu" "${resume[@]+"${resume[@]}"}" \
      --nonspeech "$nonspeech" "${then_decode[@]+"${then_decode[@]}"}"
  touch "exp/$sys/.done"
  log "  $sys: $(tail -n 4 "exp/$sys/train.log" | grep -m1 -i 'best' || echo trained)"
}
# train_systems SYSTEM...: wave by wave (a system after the one its init_from names), the
# systems of a wave through the pool.
train_systems() {
  local waves wave sys pending
  [ $# -gt 0 ] || return 0
  waves=$(system_info waves "$@")
  while read -r wave; do
    pending=0
    for sys in $wave; do
      if [ ! -f "exp/$sys/.done" ] || $force; then pending=$((pending + 1)); fi
    done
    job_threads=$(pool_threads "$pending")
    log "  training in this order, $system_jobs at once: $wave"
    for sys in $wave; do pool_run "$sys" train_one "$sys"; done
    pool_wait training
  done <<< "$waves"
}

# decode_sets SYSTEM: the test sets stage 6 decodes with the system: a family that needs
# audio for every utterance skips the <set>_mixed sets and the withheld test sets.
decode_sets() {
  local s
  case $mixed_ok in
    *" $1 "*) echo "$test_sets $(mixed_sets)" ;;
    *) for s in $test_sets; do [ -f "data/$s/withheld" ] || echo "$s"; done ;;
  esac
}
decode_after_training=false  # set before stage 4 (needs data/ and the test sets)

# What the systems' families declare, for stages 3-6 (a bad config stops the driver here),
# and the systems that decode the <set>_mixed sets.
if [ "$stage" -le 6 ] && [ "$stop_stage" -ge 3 ]; then load_system_info; fi  # any of 3-6
# shellcheck disable=SC2086
mixed_ok=" $(system_info decodes_mixed_sets $baseline_systems $transformer_systems | tr '\n' ' ') "

if stage_begin 0 "data: download or synthesise the $corpus corpus"; then
  nj=$nj cpu_cmd=$cpu_cmd "$root/local/$corpus/download.sh" downloads
  stage_end 0 data
fi

if stage_begin 1 "prepare: Kaldi data dirs and word tables"; then
  nonspeech=$nonspeech "$root/local/$corpus/prepare.sh" downloads data
  stage_end 1 prepare
fi

# A test set named in --test-sets that this copy of the corpus lacks (e.g. IWSLT's
# test2011asr) is skipped with a message.
if [ -d data ] && [ "$stop_stage" -ge 2 ]; then
  kept=""
  for set in $test_sets; do
    if [ -d "data/$set" ]; then kept="$kept $set"; else log "test set $set: no data/$set, skipped"; fi
  done
  test_sets=${kept# }
fi

# align_set SET: word timings of one set with audio (nj jobs, then their merge).
align_set() {
  local set=$1 out ctc_opt=() ref_opt=()
  [ -f "data/$set/wav.scp" ] || { log "  $set: no audio, skipped"; return 0; }
  [ "$aligner" != none ] || { log "  $set: --aligner none, not aligned"; return 0; }
  case $set in *_asr) log "  $set: timed by its recogniser, not aligned"; return 0 ;; esac
  out=data/$set/align/$aligner
  # --reference-dir is the timing source of --aligner reference (unused by dtw/vad).
  [ -n "$ctc_model" ] && ctc_opt=(--ctc-model "$ctc_model")
  python -m punct.bin.split_data --data-dir "data/$set" --num-jobs "$nj"
  # shellcheck disable=SC2154
  $cpu_cmd JOB=1:"$nj" "log/align_$set.JOB.log" \
    python -m punct.bin.align --data-dir "data/$set" --aligner "$aligner" \
      --reference-dir downloads/"$corpus"/ref --out-dir "$out" --job JOB --num-jobs "$nj" \
      --nonspeech "$nonspeech" "${ctc_opt[@]+"${ctc_opt[@]}"}"
  if $score_alignment && [ -d "downloads/$corpus/ref" ]; then
    ref_opt=(--reference-dir "downloads/$corpus/ref")
  fi
  python -m punct.bin.align --data-dir "data/$set" --aligner "$aligner" --out-dir "$out" \
    --merge --num-jobs "$nj" --nonspeech "$nonspeech" "${ref_opt[@]+"${ref_opt[@]}"}"
}
# recognize_sets: the ASR condition of each test set with audio: the recogniser's words,
# their pauses, the labels projected (nj jobs, each decoding its share as the one pass
# over the set would; then merged).
recognize_sets() {
  local set asr_opts=()
  [ -n "$asr_model" ] && asr_opts+=(--asr-model "$asr_model")
  [ -n "$asr_language" ] && asr_opts+=(--language "$asr_language")
  for set in $test_sets; do
    [ -f "data/$set/wav.scp" ] || continue
    python -m punct.bin.split_data --data-dir "data/$set" --num-jobs "$nj"
    $cpu_cmd JOB=1:"$nj" "log/recognize_$set.JOB.log" \
      python -m punct.bin.recognize --data-dir "data/$set" --out-dir "data/${set}_asr" \
        --asr "$asr" --nonspeech "$nonspeech" --quiet --job JOB --num-jobs "$nj" \
        "${asr_opts[@]+"${asr_opts[@]}"}"
    python -m punct.bin.recognize --data-dir "data/$set" --out-dir "data/${set}_asr" \
      --asr "$asr" --nonspeech "$nonspeech" --quiet --merge --num-jobs "$nj" \
      "${asr_opts[@]+"${asr_opts[@]}"}"
  done
}

if stage_begin 2 "align: word timings and pauses ($aligner)"; then
  # The other sets first: the recognition of the test sets (which copies their aligned
  # word tables) then runs beside the alignment of the training set, in the job pool
  # (up to 2 x --nj processes at once; --system-jobs 1 runs them in turn). A training set
  # that is also a test set is aligned before its recognition starts.
  train_first=false
  case " $test_sets " in *" $train_set "*) [ "$asr" = none ] || train_first=true ;; esac
  for set in $(all_sets); do
    if [ "$set" != "$train_set" ] || $train_first; then align_set "$set"; fi
  done
  [ "$asr" = none ] || pool_run recognition recognize_sets
  $train_first || pool_run "alignment of $train_set" align_set "$train_set"
  pool_wait "stage 2" "log/"
  stage_end 2 align
fi

# Each test set's ASR twin (stage 2 with --asr) is decoded and scored as a test set too.
asr_sets=""
if [ "$asr" != none ]; then
  for set in $test_sets; do
    if [ -f "data/${set}_asr/words.tsv" ]; then asr_sets="$asr_sets ${set}_asr"; fi
  done
  test_sets="$test_sets$asr_sets"
fi

if stage_begin 3 "dump: acoustic features ($feature_streams), label statistics, tokens ($token_type)"; then
  # The token stage: a sentencepiece model on the training words (featurizer.sp_model).
  if [ "$token_type" != none ]; then
    oov_opts=()
    for set in $dev_set $test_sets; do oov_opts+=(--oov-dir "data/$set"); done
    python -m punct.bin.train_tokenizer --train-dir "data/$train_set" \
      --out-dir "data/token_list/${stage_tag:+$stage_tag/}$token_type$nbpe" --vocab-size "$nbpe" \
      --model-type "$token_type" "${oov_opts[@]}"
    # A from-scratch BERT over those pieces (featurizer.encoder: data/token_list/<name>/bert).
    tokens=data/token_list/${stage_tag:+$stage_tag/}$token_type$nbpe
    if [ "$token_type" = unigram ]; then
      python -m punct.bin.scratch_encoder --sp-model "$tokens/sp.model" --out-dir "$tokens/bert"
      # ... pre-trained as a masked LM on the training words (featurizer.encoder: .../bert_mlm).
      [ "$mlm_epochs" -eq 0 ] || $train_cmd --num-threads "$num_threads" "$tokens/bert_mlm.log" \
        python -m punct.bin.pretrain_encoder --encoder "$tokens/bert" --train-dir "data/$train_set" \
          --dev-dir "data/$dev_set" --out-dir "$tokens/bert_mlm" --epochs "$mlm_epochs" \
          --num-threads "$num_threads"
    fi
  fi
  if [ "$feature_streams" = auto ]; then
    # shellcheck disable=SC2086
    feature_streams=$(system_info streams $baseline_systems $transformer_systems)
    log "  feature streams the systems read: ${feature_streams:-none}"
  fi
  # Each job computes its share of every set with audio (one process, one model load).
  audio_dirs=()
  for set in $(all_sets); do
    [ -f "data/$set/wav.scp" ] && audio_dirs+=(--data-dir "data/$set")
  done
  if [ -n "$feature_streams" ] && [ ${#audio_dirs[@]} -gt 0 ]; then
    python -m punct.bin.split_data "${audio_dirs[@]}" --num-jobs "$nj"
  fi
  for stream in $feature_streams; do
    [ ${#audio_dirs[@]} -gt 0 ] || break
    $cpu_cmd JOB=1:"$nj" "log/$stream.JOB.log" \
      python -m punct.bin.make_"$stream" "${audio_dirs[@]}" --job JOB --num-jobs "$nj"
    python -m punct.bin.make_"$stream" "${audio_dirs[@]}" --merge --num-jobs "$nj"
  done
  # UniPunc's mixed test sets: the same utterances, a fixed share without audio.
  for set in $test_sets; do
    [ -f "data/$set/fbank.scp" ] || continue
    [ -f "data/$set/withheld" ] && continue  # mixed already (e.g. a UniPunc JSONL set)
    case $set in *_asr) continue ;; esac     # an ASR twin: its reference set has one
    python -m punct.bin.subset_audio --src "data/$set" --dst "data/${set}_mixed" \
      --share "$mixed_share" --seed 1
  done
  dump_args=()
  for set in $(all_sets); do dump_args+=(--data-dir "data/$set"); done
  python -m punct.bin.dump "${dump_args[@]}" --out-dir dump
  stage_end 3 dump
fi

# On CPU, when stage 6 runs after this run's training, each training job decodes and
# scores its system's test sets itself (train_one).
if [ "$ngpu" -eq 0 ] && [ "$stage" -le 5 ] && stage_pending 6; then decode_after_training=true; fi

# With several job slots and both stages to run, stages 4 and 5 share one pool: the
# transformer systems first (the longest, as a rule), every system after the one its
# init_from names. Stage 4's marker then holds the time of both and stage 5's none.
together=false
if [ "$system_jobs" -gt 1 ] && stage_pending 4 && stage_pending 5; then
  together=true
  stage_begin 4 "baselines and transformer systems at once: $transformer_systems $baseline_systems"
  # shellcheck disable=SC2086
  train_systems $transformer_systems $baseline_systems
  stage_end 4 "baselines+transformers"
  log "Stage 5: transformer systems: trained with stage 4"
  stage_start=$(date +%s)
  stage_end 5 "transformers (in stage 4)"
fi

if ! $together && stage_begin 4 "baselines: $baseline_systems"; then
  # shellcheck disable=SC2086
  train_systems $baseline_systems
  stage_end 4 baselines
fi

if ! $together && stage_begin 5 "transformer systems: $transformer_systems"; then
  # shellcheck disable=SC2086
  train_systems $transformer_systems
  stage_end 5 transformers
fi

# decode_and_score SYSTEM SET...: decode the sets with the system and score each (one
# process, the model loaded once; punct.bin.decode --score scores a set against its
# ref_words.tsv or words.tsv, with its score_label_set). A set decoded and scored with the
# same best.pt (its .done holds best.pt's checksum line, e.g. by the training job) is
# skipped unless --force.
decode_and_score() {
  local sys=$1 set out pairs=()
  shift
  for set in "$@"; do
    out=exp/$sys/decode_$set
    if ! $force && [ -f "$out/scores.json" ] && cmp -s "exp/$sys/best.pt.sha256" "$out/.done"; then
      continue
    fi
    pairs+=(--data-dir "data/$set" --out-dir "$out")
  done
  if [ ${#pairs[@]} -eq 0 ]; then log "  $sys: decoded and scored with this best.pt already"; return 0; fi
  # shellcheck disable=SC2154
  $decode_cmd --num-threads "$job_threads" "exp/$sys/log/decode.log" \
    python -m punct.bin.decode --exp-dir "exp/$sys" "${pairs[@]}" --num-threads "$job_threads" \
      --score --nonspeech "$nonspeech"
}

if stage_begin 6 "decode, score and report"; then
  # shellcheck disable=SC2086
  job_threads=$(pool_threads "$(echo $baseline_systems $transformer_systems | wc -w)")
  for sys in $baseline_systems $transformer_systems; do
    # shellcheck disable=SC2046
    pool_run "$sys" decode_and_score "$sys" $(decode_sets "$sys")
  done
  pool_wait decoding
  pp_systems=()
  # shellcheck disable=SC2086
  for sys in $(system_info pr_curves $baseline_systems $transformer_systems); do
    pp_systems+=(--system "exp/$sys")
  done
  if [ ${#pp_systems[@]} -gt 0 ]; then
    for set in $test_sets; do
      pool_run "pr_curves $set" python -m punct.bin.pr_curves --data-dir "data/$set" \
        --set "$set" "${pp_systems[@]}" --out "$results_dir/moro_fig1_pr_$set.png"
    done
    pool_wait "precision-recall curves" "the output above"
  fi
  python -m punct.bin.stage_times --stages-dir "$(dirname "$(marker 6)")" \
    --out "exp/stage_times${stage_tag:+_$stage_tag}.json" --exp-dir exp \
    --systems "$baseline_systems $transformer_systems" \
    --train-out "exp/train_times${stage_tag:+_$stage_tag}.json"
  extra=(--extra-json "run_time=exp/stage_times${stage_tag:+_$stage_tag}.json"
         --extra-json "training=exp/train_times${stage_tag:+_$stage_tag}.json")
  for set in $test_sets; do
    f=data/$set/align/$aligner/eval.json
    [ -f "$f" ] && extra+=(--extra-json "aligner_${aligner}_$set=$f")
    # The mark at each document's end, per system (punct/score/doc_end.py).
    hyps=()
    for sys in $baseline_systems $transformer_systems; do
      hyps+=(--hyp "exp/$sys/decode_$set/words.tsv")
    done
    if [ ${#hyps[@]} -gt 0 ]; then
      python -m punct.bin.doc_end_accuracy --ref "data/$set/words.tsv" "${hyps[@]}" --quiet \
        --json "exp/doc_end_$set.json"
      extra+=(--extra-json "document_ends_$set=exp/doc_end_$set.json")
    fi
  done
  # What the pauses are worth: each pause-aware system minus its text-only twin.
  if [ -n "$pause_twins" ]; then
    pairs=()
    for pair in $pause_twins; do pairs+=(--pair "$pair"); done
    python -m punct.bin.pause_gain --exp-dir exp --sets "$test_sets" "${pairs[@]}" \
      --json "exp/pause_gain${stage_tag:+_$stage_tag}.json"
    extra+=(--extra-json "pause_gain=exp/pause_gain${stage_tag:+_$stage_tag}.json")
  fi
  # What recognition errors cost: each system on each test set and on its ASR twin.
  pairs=()
  for set in $asr_sets; do pairs+=(--pair "${set%_asr}:$set"); done
  for pair in $asr_pairs; do pairs+=(--pair "$pair"); done
  if [ ${#pairs[@]} -gt 0 ]; then
    systems=()
    for sys in $baseline_systems $transformer_systems; do systems+=(--system "$sys"); done
    python -m punct.bin.asr_penalty --exp-dir exp "${pairs[@]}" "${systems[@]}" \
      --json "exp/asr_penalty${stage_tag:+_$stage_tag}.json"
    extra+=(--extra-json "asr_penalty=exp/asr_penalty${stage_tag:+_$stage_tag}.json")
    for pair in $asr_sets $asr_pairs; do
      set=${pair#*:}
      if [ -f "data/$set/asr.json" ]; then extra+=(--extra-json "recogniser_$set=data/$set/asr.json"); fi
    done
  fi
  # How stage 0 made the corpus' speech, where it says (mini: the speech style).
  f=downloads/$corpus/style.json
  [ -f "$f" ] && extra+=(--extra-json "speech_style=$f")
  python -m punct.bin.report --scores 'exp/*/decode_*/scores.json' --out-dir "$results_dir" \
    --results-md "$results_md" --title "Results: $corpus" --layouts "${report_layouts// /,}" \
    --published "$published" \
    "${extra[@]}"
  stage_end 6 report
  log "Results: $PWD/$results_md, tables and plots in $PWD/$results_dir/"
fi

# Stage 7: the system to publish, chosen on the validation set (never on a test set).
if [ -n "$export_dir" ] && stage_begin 7 "export the best system on $dev_set to $export_dir"; then
  candidates=${export_systems:-"$baseline_systems $transformer_systems"}
  for sys in $candidates; do
    out=exp/$sys/decode_$dev_set
    [ -f "$out/scores.json" ] && continue
    python -m punct.bin.decode --exp-dir "exp/$sys" --data-dir "data/$dev_set" --out-dir "$out" \
      --num-threads "$num_threads"
    python -m punct.bin.score --ref "data/$dev_set/words.tsv" --hyp "$out/words.tsv" \
      --utt2lang "data/$dev_set/utt2lang" --decode-info "$out/decode.json" \
      --system "$sys" --test-set "$dev_set" --out "$out/scores.json" --nonspeech "$nonspeech"
  done
  python -m punct.bin.export_best --exp-dir exp --systems "$candidates" --dev-set "$dev_set" \
    --out "$export_dir" --train-dir "data/$train_set" \
    --dev-dir "data/$dev_set" --num-threads "$num_threads" \
    ${export_train_data:+--train-data "$export_train_data"}
  stage_end 7 export
  log "Model: $PWD/$export_dir (punct-restore --model $PWD/$export_dir)"
fi
