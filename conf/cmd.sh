# shellcheck shell=bash
# conf/cmd.sh: how the recipes run their parallel work (Kaldi convention).
# Sourced by run.sh (then the recipe's own conf/cmd.sh, if any); every stage calls e.g.
#   $train_cmd JOB=1:$nj exp/x/log/train.JOB.log python -m punct.bin.train ...
# Options go after the variable: $train_cmd --num-threads 4 --gpu 1 --mem 8G ...
# See `utils/launch.sh --help` and docs/CLUSTER.md.

# launch.sh is utils/launch.sh, on PATH through path.sh.
# Local backend (the default): jobs run as process groups on this machine (like
# Kaldi's run.pl); --max-jobs-run K limits how many run at once (default: all of them).
export train_cmd="launch.sh"
export decode_cmd="launch.sh"
export cpu_cmd="launch.sh"

# Slurm backend: each launcher call is one sbatch job array (JOB=1:N -> --array=1-N),
# waited for; conf/slurm.conf maps --num-threads/--mem/--gpu/--time/--partition/--ntasks
# to sbatch flags (copy it for your site's partitions and accounts and point --config
# at the copy); interrupting the launcher scancels its jobs. To use it, uncomment:
# export train_cmd="launch.sh --backend slurm --config conf/slurm.conf"
# export decode_cmd="launch.sh --backend slurm --config conf/slurm.conf"
# export cpu_cmd="launch.sh --backend slurm --config conf/slurm.conf"
# GPU training on the cluster then reads e.g. $train_cmd --gpu 1 --mem 16G --time 12:00:00
