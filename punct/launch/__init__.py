"""The job launcher (Kaldi run.pl interface): ``utils/launch.sh`` -> :mod:`punct.launch.cli`.

Modules: :mod:`~punct.launch.jobs` (job arrays, resources, job environment),
:mod:`~punct.launch.backend` (the ``Backend`` interface, ``get_backend`` and ``run_jobs``:
at most K jobs at once), :mod:`~punct.launch.local` (local process groups),
:mod:`~punct.launch.runjob` (the per-job log wrapper),
:mod:`~punct.launch.logformat` (log header/footer), :mod:`~punct.launch.slurm` (the Slurm
backend: sbatch job arrays, srun for multi-task steps), :mod:`~punct.launch.slurmconf`
(conf/slurm.conf). The one-node Slurm test cluster is tests/helpers/testcluster.py.
Nothing is imported here, so that the per-job wrapper starts fast.
"""
