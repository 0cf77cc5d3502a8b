# shellcheck shell=bash
# conf/cmd.sh: how the recipes run their parallel work (Kaldi convention).
# Sourced by run.sh; every stage calls e.g.
#   $train_cmd JOB=1:$nj exp/x/log/train.JOB.log python -m punct.bin.train ...
# Options go after the variable: $train_cmd --num-threads 4 --gpu 1 --mem 8G ...
# See `utils/launch.sh --help`.

# launch.sh is utils/launch.sh, on PATH through path.sh.
# Local backend: jobs run as process groups on this machine (like Kaldi's run.pl);
# --max-jobs-run K limits how many run at once (default: all of them).
export train_cmd="launch.sh"
export decode_cmd="launch.sh"
export cpu_cmd="launch.sh"

# Slurm backend (not implemented yet: `--backend slurm` stops with an error for now).
# conf/slurm.conf will map --num-threads/--mem/--gpu/--time to sbatch options:
# export train_cmd="launch.sh --backend slurm --config conf/slurm.conf"
# export decode_cmd="launch.sh --backend slurm --config conf/slurm.conf"
# export cpu_cmd="launch.sh --backend slurm --config conf/slurm.conf"
