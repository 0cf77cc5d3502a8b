"""The Slurm backend against a real one-node Slurm cluster started on localhost.

The cluster (munged, slurmctld, slurmd under a temporary directory) is started once
for this module and stopped by its PIDs afterwards. The tests skip when the Slurm or
munge programs are missing or when not run as root, except under CI=true where that
is a failure (.ci/run installs slurm-wlm and munge).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
from helpers.testcluster import TestCluster, missing_programs, start_cluster, stop_cluster

from punct.launch.logformat import log_exit_code
from punct.wordtable import rows_from_text, write_word_table

REPO = Path(__file__).resolve().parents[1]
DRIVER = REPO / "utils" / "stage_driver.sh"  # what egs/<corpus>/punct1/run.sh call
LAUNCH = REPO / "utils" / "launch.sh"
TINY_BRNN = REPO / "conf" / "model" / "tiny" / "brnn_text.yaml"
RESOURCES_RE = re.compile(r"^# Resources: .*slurm_job=(\d+)(?:_(\d+))? node=\S+$")


def _unavailable() -> str | None:
    missing = missing_programs()
    if missing:
        return f"Slurm/munge programs missing: {' '.join(missing)}"
    if os.geteuid() != 0:
        return "the one-node test cluster must be started as root"
    return None


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestCluster]:
    """A running one-node cluster for the whole session, stopped by its PIDs at the end."""
    reason = _unavailable()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI=true: .ci/run installs slurm-wlm and munge)")
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("slurm") / "cluster"
    started = start_cluster(root)
    try:
        yield started
    finally:
        stop_cluster(root)
        for pid in started.pids.values():
            assert not Path(f"/proc/{pid}").exists() or _zombie(pid), f"daemon {pid} survived"


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, IndexError):
        return True


@pytest.fixture(scope="session")
def slurm_conf(cluster: TestCluster) -> Path:
    """conf/slurm.conf with the short polling a 1-2 s test job wants."""
    text = (REPO / "conf" / "slurm.conf").read_text()
    text = re.sub(r"^poll_interval .*$", "poll_interval 1", text, flags=re.M)
    text = re.sub(r"^log_wait .*$", "log_wait 1", text, flags=re.M)
    path = cluster.root / "launch-slurm.conf"
    path.write_text(text)
    return path


def env_for(cluster: TestCluster) -> dict[str, str]:
    env = dict(os.environ, **cluster.env)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.pop("PYTHONPATH", None)
    env["OMP_NUM_THREADS"] = "1"
    return env


def launch_argv(conf: Path, *args: str) -> list[str]:
    return [str(LAUNCH), "--backend", "slurm", "--config", str(conf), *args]


def launch(cluster: TestCluster, conf: Path, cwd: Path, *args: str,
           timeout: float = 170) -> subprocess.CompletedProcess:
    return subprocess.run(launch_argv(conf, *args), cwd=cwd, env=env_for(cluster),
                          capture_output=True, text=True, timeout=timeout)


def squeue(cluster: TestCluster, job_id: str) -> str:
    proc = subprocess.run(["squeue", "-h", "-r", "-j", job_id, "-o", "%i %T"],
                          env=env_for(cluster), capture_output=True, text=True, timeout=30)
    return proc.stdout


def job_id_of(log: Path) -> str:
    for line in log.read_text().splitlines():
        match = RESOURCES_RE.match(line)
        if match:
            return match.group(1)
    raise AssertionError(f"no slurm_job in the Resources line of {log}")


def test_array_with_one_failing_task_then_rerun_failed(
    cluster: TestCluster, slurm_conf: Path, tmp_path: Path
) -> None:
    command = "echo task=JOB; test JOB != 2 -o -e fixed"
    proc = launch(cluster, slurm_conf, tmp_path, "JOB=1:3", "log/t.JOB.log", command)
    assert proc.returncode == 1
    assert proc.stderr == "launch.sh: 1 / 3 failed, log is in log/t.2.log\n"
    ids = set()
    for i in (1, 2, 3):
        log = tmp_path / f"log/t.{i}.log"
        lines = log.read_text().splitlines()
        assert lines[0] == "# " + command.replace("JOB", str(i))
        assert re.match(r"^# Started at \w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d ", lines[1])
        match = RESOURCES_RE.match(lines[2])
        assert match and match.group(2) == str(i), lines[2]
        ids.add(match.group(1))
        assert f"task={i}" in lines
        assert log_exit_code(log) == (1 if i == 2 else 0)
        assert lines[-2] == "# Accounting: time=0 threads=1"
    assert len(ids) == 1  # one array job
    (job_id,) = ids
    assert sorted((tmp_path / "log/q").iterdir()) == sorted(
        [tmp_path / f"log/q/slurm-{job_id}.sh"]
        + [tmp_path / f"log/q/slurm-{job_id}_{i}.out" for i in (1, 2, 3)])
    # Only the failed task runs again (and now succeeds).
    before = {i: (tmp_path / f"log/t.{i}.log").stat().st_mtime_ns for i in (1, 3)}
    (tmp_path / "fixed").touch()
    proc = launch(cluster, slurm_conf, tmp_path, "--rerun-failed", "JOB=1:3", "log/t.JOB.log",
                  command)
    assert proc.returncode == 0, proc.stderr
    assert log_exit_code(tmp_path / "log/t.2.log") == 0
    assert job_id_of(tmp_path / "log/t.2.log") != job_id
    assert {i: (tmp_path / f"log/t.{i}.log").stat().st_mtime_ns for i in (1, 3)} == before


def test_generic_options_become_sbatch_flags(
    cluster: TestCluster, slurm_conf: Path, tmp_path: Path
) -> None:
    proc = launch(cluster, slurm_conf, tmp_path, "--num-threads", "2", "--mem", "100M",
                  "--time", "5", "--gpu", "0", "--partition", "debug", "log/r.log",
                  "echo threads=$OMP_NUM_THREADS cpus=$SLURM_CPUS_PER_TASK "
                  "mem=$SLURM_MEM_PER_NODE partition=$SLURM_JOB_PARTITION; "
                  "scontrol -o show job $SLURM_JOB_ID | grep -o 'TimeLimit=[^ ]*'")
    assert proc.returncode == 0, proc.stderr
    lines = (tmp_path / "log/r.log").read_text().splitlines()
    assert lines[2].startswith("# Resources: threads=2 mem=100M gpu=0 time=5 config=")
    assert " partition=debug slurm_job=" in lines[2]
    assert "threads=2 cpus=2 mem=100 partition=debug" in lines
    assert "TimeLimit=00:05:00" in lines
    assert lines[-2] == "# Accounting: time=0 threads=2"


def test_task_killed_without_footer_gets_slurms_verdict(
    cluster: TestCluster, slurm_conf: Path, tmp_path: Path
) -> None:
    # The command kills the log wrapper itself: only Slurm knows how the task ended.
    proc = launch(cluster, slurm_conf, tmp_path, "log/k.log", "kill -KILL $PPID; sleep 5")
    assert proc.returncode == 1
    assert proc.stderr == "launch.sh: 1 / 1 failed, log is in log/k.log\n"
    lines = (tmp_path / "log/k.log").read_text().splitlines()
    assert re.match(r"^# launch\.sh: Slurm job \d+ ended in state FAILED \(exit code 0:9\) "
                    r"without the task's footer", lines[-3]), lines
    assert log_exit_code(tmp_path / "log/k.log") == 137


def test_ntasks_runs_the_command_under_srun(
    cluster: TestCluster, slurm_conf: Path, tmp_path: Path
) -> None:
    proc = launch(cluster, slurm_conf, tmp_path, "--ntasks", "2", "log/s.log",
                  "echo rank=$SLURM_PROCID of $SLURM_NTASKS")
    assert proc.returncode == 0, proc.stderr
    lines = (tmp_path / "log/s.log").read_text().splitlines()
    assert lines[0] == ("# srun --kill-on-bad-exit=1 bash -c "
                        "'echo rank=$SLURM_PROCID of $SLURM_NTASKS'")
    assert "ntasks=2 slurm_job=" in lines[2]
    assert sorted(line for line in lines if line.startswith("rank=")) == [
        "rank=0 of 2", "rank=1 of 2"]


def wait_for(test: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not test():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def stop_launcher(proc: subprocess.Popen) -> None:
    """After a failed check: interrupt the launcher (it cancels its jobs), kill it if stuck."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def test_interrupting_the_launcher_cancels_its_jobs(
    cluster: TestCluster, slurm_conf: Path, tmp_path: Path
) -> None:
    proc = subprocess.Popen(
        launch_argv(slurm_conf, "--max-jobs-run", "1", "JOB=1:2", "log/w.JOB.log", "sleep 300"),
        cwd=tmp_path, env=env_for(cluster), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )
    first = tmp_path / "log/w.1.log"
    try:
        wait_for(lambda: first.exists() and "Resources" in first.read_text(), 60, "task 1")
        job_id = job_id_of(first)
        assert sorted(squeue(cluster, job_id).splitlines()) == [
            f"{job_id}_1 RUNNING", f"{job_id}_2 PENDING"]
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        stop_launcher(proc)
    assert proc.returncode == 130
    assert err == "launch.sh: received SIGINT, killed the running jobs\n"
    assert squeue(cluster, job_id) == ""
    assert log_exit_code(first) == 143  # the wrapper got SIGTERM and wrote its footer
    second = (tmp_path / "log/w.2.log").read_text()
    assert f"Slurm job {job_id}_2 ended in state CANCELLED" in second
    assert log_exit_code(tmp_path / "log/w.2.log") == 1


# ---- the recipe and training through Slurm (slow) ----

def write_cmd_sh(recipe: Path, conf: Path) -> None:
    (recipe / "conf").mkdir(parents=True)
    cmd = f"launch.sh --backend slurm --config {conf}"
    (recipe / "conf" / "cmd.sh").write_text(
        "".join(f'export {name}="{cmd}"\n' for name in ("train_cmd", "decode_cmd", "cpu_cmd")))


@pytest.mark.slow
def test_mini_recipe_parallel_stages_through_slurm(
    cluster: TestCluster, slurm_conf: Path, tmp_path: Path
) -> None:
    # Stage 0 synthesises with $cpu_cmd, stage 2 aligns with it (the synthesiser's own
    # timings: the DTW aligner would take minutes on a busy 2-core machine).
    write_cmd_sh(tmp_path, slurm_conf)
    env = dict(env_for(cluster), PUNCT_RECIPE_DIR=str(tmp_path))
    proc = subprocess.Popen(
        ["bash", str(DRIVER), "--corpus", "mini", "--model-conf-dir", "conf/model/tiny",
         "--stop-stage", "2", "--aligner", "reference"], cwd=tmp_path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=170)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGINT)  # the launchers cancel their jobs
        out, err = proc.communicate(timeout=60)
        raise AssertionError(f"the recipe timed out:\n{out[-3000:]}\n{err[-3000:]}") from None
    assert proc.returncode == 0, out[-3000:] + err[-3000:]
    for stage in (0, 1, 2):
        assert (tmp_path / f".stages/{stage}.done").is_file()
    logs = sorted((tmp_path / "log").glob("*.log"))
    names = [p.name for p in logs]
    assert names == ["align_dev.1.log", "align_dev.2.log", "align_test.1.log",
                     "align_test.2.log", "align_train.1.log", "align_train.2.log",
                     "synth.1.log", "synth.2.log"]
    job_ids = {p.name.split(".")[0]: job_id_of(p) for p in logs}
    assert len(set(job_ids.values())) == 4  # one array per launcher call
    for log in logs:
        assert log_exit_code(log) == 0
    for split in ("train", "dev", "test"):
        ctm = (tmp_path / f"data/{split}/align/reference/ctm").read_text().splitlines()
        utts = (tmp_path / f"data/{split}/text").read_text().splitlines()
        assert {line.split()[0] for line in ctm} == {line.split()[0] for line in utts}


PREEMPT_COPIES = 8
"""Copies of the training data in the preemption test."""


def make_data(root: Path, copies: int = 1) -> tuple[Path, Path]:
    """train/dev word tables from the English mini corpus text (no audio needed);
    ``copies``: each training utterance that many times (longer epochs)."""
    splits: dict[str, dict] = {"train": {}, "dev": {}}
    split = None
    text = (REPO / "local/mini/corpus/en.txt").read_text(encoding="utf-8")
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("#") or not line.strip():
            continue
        if line.startswith("@doc"):
            split = line.split()[2]
        elif split in splits:
            for copy in range(copies if split == "train" else 1):
                utt = f"en_{number:04d}" + (f"_{copy}" if copy else "")
                splits[split][utt] = rows_from_text(utt, line)
    for name, utts in splits.items():
        (root / name).mkdir(parents=True)
        write_word_table(root / name / "words.tsv", utts)
    return root / "train", root / "dev"


def trainer_has_resume() -> bool:
    proc = subprocess.run([sys.executable, "-m", "punct.bin.train", "--help"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    return "--resume" in proc.stdout


def train_args(train: Path, dev: Path, exp: Path, *extra: str) -> list[str]:
    return ["python", "-m", "punct.bin.train", "--config", str(TINY_BRNN), "--train-dir",
            str(train), "--dev-dir", str(dev), "--exp-dir", str(exp), "--num-threads", "1",
            "--quiet", "--set", "train.epochs=3", *extra]


@pytest.mark.slow
def test_ddp_training_with_two_tasks_under_srun(
    cluster: TestCluster, slurm_conf: Path, tmp_path: Path
) -> None:
    if not trainer_has_resume():
        pytest.skip("punct.bin.train has no distributed/--resume support yet")
    train, dev = make_data(tmp_path / "data")
    proc = launch(cluster, slurm_conf, tmp_path, "--ntasks", "2", "--num-threads", "1",
                  "exp/ddp/log/train.log", *train_args(train, dev, tmp_path / "exp/ddp"))
    log = (tmp_path / "exp/ddp/log/train.log").read_text()
    assert proc.returncode == 0, proc.stderr + log
    summaries = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    assert len(summaries) == 1  # rank 0 only
    assert summaries[0]["epochs_run"] == 3
    first = (tmp_path / "exp/ddp/train.log").read_text().splitlines()[0]
    assert "2 process(es) on cpu" in first
    assert (tmp_path / "exp/ddp/best.pt").is_file()


@pytest.mark.slow
def test_training_preempted_by_signal_then_resumed(
    cluster: TestCluster, slurm_conf: Path, tmp_path: Path
) -> None:
    if not trainer_has_resume():
        pytest.skip("punct.bin.train has no --resume support yet")
    # epochs of a second or more (0.2 s with one copy of the data on a fast CPU: the whole
    # run could end before the signal lands)
    train, dev = make_data(tmp_path / "data", copies=PREEMPT_COPIES)
    exp = tmp_path / "exp/pre"
    log = tmp_path / "exp/pre/log/train.log"
    proc = subprocess.Popen(
        launch_argv(slurm_conf, "--num-threads", "1", str(log), *train_args(train, dev, exp)),
        cwd=tmp_path, env=env_for(cluster), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # Preempt in the second epoch, as Slurm does: SIGTERM to every process of the job.
        wait_for(lambda: " epoch 1 " in _text(exp / "train.log"), 120, "the first epoch")
        job_id = job_id_of(log)
        subprocess.run(["scancel", "--full", "--signal=TERM", job_id], env=env_for(cluster),
                       check=True, timeout=30)
        _, err = proc.communicate(timeout=120)
    finally:
        stop_launcher(proc)
    assert proc.returncode == 1
    assert err == f"launch.sh: 1 / 1 failed, log is in {log}\n"
    assert log_exit_code(log) == 75
    assert "preempted" in log.read_text()
    assert (exp / "last.pt").is_file()
    assert re.search(r" preempted by SIGTERM in epoch [23] ", _text(exp / "train.log"))
    assert " epoch 3 train_loss " not in _text(exp / "train.log")  # it did not finish

    resumed = launch(cluster, slurm_conf, tmp_path, "--num-threads", "1", str(log),
                     *train_args(train, dev, exp, "--resume"))
    assert resumed.returncode == 0, resumed.stderr + log.read_text()
    assert " epoch 3 train_loss " in _text(exp / "train.log")

    # The same final weights as an uninterrupted run (CPU, one thread).
    whole = tmp_path / "exp/whole"
    direct = subprocess.run(train_args(train, dev, whole), cwd=tmp_path, env=env_for(cluster),
                            capture_output=True, text=True, timeout=170)
    assert direct.returncode == 0, direct.stderr
    a = torch.load(exp / "best.pt", map_location="cpu", weights_only=True)["model"]
    b = torch.load(whole / "best.pt", map_location="cpu", weights_only=True)["model"]
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""
