"""The Slurm backend without a cluster: slurm.conf mapping, sbatch command, batch script,
state parsing, and the polling/cancel logic against scripted Slurm client answers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from punct.errors import MissingDataError, PunctInputError
from punct.launch.backend import Placement, get_backend
from punct.launch.jobs import (
    Job,
    JobsCancelled,
    LaunchError,
    Resources,
    expand_jobs,
    parse_job_range,
)
from punct.launch.logformat import log_exit_code, log_footer, log_header
from punct.launch.slurm import (
    SlurmBackend,
    TaskState,
    array_spec,
    parse_sacct,
    parse_scontrol,
    parse_squeue,
)
from punct.launch.slurmconf import SlurmConfig, parse_slurm_config, read_slurm_config

REPO = Path(__file__).resolve().parents[1]

CONF = """\
command sbatch --export=ALL   # every job
option num_threads=* --cpus-per-task=$0
option mem=* --mem=$0
option gpu=0
option gpu=* --gres=gpu:$0 --partition=gpuq
default gpu=0
option time=* --time=$0
option partition=* -p $0
option ntasks=1
option ntasks=* --ntasks=$0
srun env FAKE_SRUN=yes
poll_interval 0.2
log_wait 0
"""


def config(tmp_path: Path) -> SlurmConfig:
    return parse_slurm_config(CONF, tmp_path / "slurm.conf")


def jobs_for(tmp_path: Path, spec: str, *command: str) -> list[Job]:
    return expand_jobs(parse_job_range(spec), str(tmp_path / "log/x.JOB.log"), command)


# ---- slurm.conf ----

def test_config_maps_given_options_and_defaults(tmp_path: Path) -> None:
    conf = config(tmp_path)
    assert conf.command == ("sbatch", "--export=ALL")
    assert conf.srun == ("env", "FAKE_SRUN=yes")
    assert (conf.poll_interval, conf.log_wait) == (0.2, 0.0)
    assert conf.flags({}) == []  # default gpu=0 maps to nothing
    flags = conf.flags({"num-threads": "4", "mem": "8G", "gpu": "2", "time": "1:00:00",
                        "partition": "short", "ntasks": "2"})
    assert flags == ["--cpus-per-task=4", "--mem=8G", "--gres=gpu:2", "--partition=gpuq",
                     "--time=1:00:00", "-p", "short", "--ntasks=2"]
    assert conf.flags({"ntasks": "1", "gpu": "0"}) == []  # exact values win over *


def test_option_without_a_rule_names_the_config(tmp_path: Path) -> None:
    conf = parse_slurm_config("option mem=* --mem=$0\n", tmp_path / "site.conf")
    assert conf.flags({"mem": "1G"}) == ["--mem=1G"]
    with pytest.raises(LaunchError, match=r"site.conf has no rule for --partition x"):
        conf.flags({"partition": "x"})


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("command sbatch\nbogus 1\n", 2, "unknown directive 'bogus'"),
        ("option cores=* -c $0\n", 1, "unknown option 'cores'"),
        ("\n\noption mem --mem\n", 3, "expected 'option NAME=VALUE"),
        ("default gpu=0 --gres\n", 1, "'default' takes only NAME=VALUE"),
        ("poll_interval soon\n", 1, "poll_interval expects one number"),
        ("log_wait -1\n", 1, "log_wait must not be negative"),
        ("command\n", 1, "'command' needs a program name"),
        ("option mem=* 'unclosed\n", 1, "cannot split the line"),
    ],
)
def test_bad_config_names_file_and_line(
    tmp_path: Path, text: str, line: int, message: str
) -> None:
    path = tmp_path / "slurm.conf"
    with pytest.raises(PunctInputError, match=message) as info:
        parse_slurm_config(text, path)
    assert (info.value.path, info.value.line) == (str(path), line)
    assert str(info.value).startswith(f"{path}:{line}: ")


def test_shipped_config_is_site_neutral(tmp_path: Path) -> None:
    conf = read_slurm_config(REPO / "conf" / "slurm.conf")
    assert conf.flags({"num-threads": "2", "gpu": "1", "mem": "4G", "time": "10",
                       "partition": "p", "ntasks": "4"}) == [
        "--cpus-per-task=2", "--mem=4G", "--gpus-per-task=1", "--time=10", "--partition=p",
        "--ntasks=4",
    ]
    assert conf.flags({"gpu": "0", "ntasks": "1"}) == []
    assert conf.command == ("sbatch", "--export=ALL")
    with pytest.raises(MissingDataError, match="no such Slurm configuration file"):
        read_slurm_config(tmp_path / "absent.conf")


# ---- parsing Slurm's answers ----

def test_array_spec_compresses_ranges() -> None:
    assert array_spec([1, 2, 3]) == "1-3"
    assert array_spec([7, 1, 2, 3, 5, 8]) == "1-3,5,7-8"
    assert array_spec([4]) == "4"
    assert array_spec([1, 2, 3, 4], throttle=2) == "1-4%2"
    assert array_spec([1, 2], throttle=2) == "1-2"  # no throttle needed
    with pytest.raises(ValueError):
        array_spec([])


def test_parse_squeue_scontrol_sacct() -> None:
    assert parse_squeue("12_1 RUNNING\n12_3 PENDING\n\n13 COMPLETING\n") == {
        "12_1": "RUNNING", "12_3": "PENDING", "13": "COMPLETING"}
    scontrol = (
        "JobId=14 ArrayJobId=12 ArrayTaskId=2 JobState=FAILED Reason=NonZeroExitCode "
        "ExitCode=3:0\n"
        "JobId=12 ArrayJobId=12 ArrayTaskId=4-6%2 JobState=PENDING ExitCode=0:0\n"
        "JobId=13 ArrayJobId=12 ArrayTaskId=1 JobState=CANCELLED ExitCode=0:15\n"
        "JobId=20 JobName=x JobState=TIMEOUT ExitCode=0:1\n"
    )
    assert parse_scontrol(scontrol) == {
        "12_2": TaskState("FAILED", "3:0"), "12_1": TaskState("CANCELLED", "0:15"),
        "20": TaskState("TIMEOUT", "0:1")}
    sacct = "12_2|FAILED|3:0\n12_1|CANCELLED by 0|0:15\n12_5|OUT_OF_MEMORY|0:125\n"
    assert parse_sacct(sacct) == {
        "12_2": TaskState("FAILED", "3:0"), "12_1": TaskState("CANCELLED", "0:15"),
        "12_5": TaskState("OUT_OF_MEMORY", "0:125")}


@pytest.mark.parametrize(
    ("state", "exit_code", "code"),
    [("COMPLETED", "0:0", 0), ("FAILED", "3:0", 3), ("CANCELLED", "0:15", 143),
     ("CANCELLED", "0:0", 1), ("NODE_FAIL", "", 1), ("TIMEOUT", "garbage", 1)],
)
def test_task_state_return_code(state: str, exit_code: str, code: int) -> None:
    assert TaskState(state, exit_code).returncode() == code


# ---- the submission ----

def test_sbatch_command_maps_options_and_throttles(tmp_path: Path) -> None:
    backend = SlurmBackend(Resources(num_threads=2, mem="4G", gpu=1),
                           Placement(partition="long"), config=config(tmp_path))
    jobs = jobs_for(tmp_path, "JOB=1:4", "echo", "JOB")
    argv = backend.sbatch_command(jobs[1:], tmp_path / "s.sh", tmp_path / "q", max_jobs_run=2)
    assert argv == [
        "sbatch", "--export=ALL", "--parsable", "--kill-on-invalid-dep=yes", "--job-name=x",
        "--array=2-4%2", f"--output={tmp_path}/q/slurm-%A_%a.out",
        "--cpus-per-task=2", "--mem=4G", "--gres=gpu:1", "--partition=gpuq", "-p", "long",
        str(tmp_path / "s.sh"),
    ]
    single = expand_jobs(None, str(tmp_path / "log/one.log"), ["true"])
    argv = backend.sbatch_command(single, tmp_path / "s.sh", tmp_path / "q")
    assert "--job-name=one" in argv
    assert f"--output={tmp_path}/q/slurm-%j.out" in argv
    assert not any(a.startswith("--array") for a in argv)


def run_script(script: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    path = tmp_path / "batch.sh"
    path.write_text(script)
    full_env = dict(os.environ, SLURM_ARRAY_JOB_ID="77", SLURMD_NODENAME="n1", **env)
    full_env["PYTHONPATH"] = str(REPO)
    return subprocess.run(["bash", str(path)], env=full_env, capture_output=True, text=True,
                          timeout=60)


def test_batch_script_runs_the_task_of_its_array_index(tmp_path: Path) -> None:
    backend = SlurmBackend(Resources(num_threads=3), config=config(tmp_path))
    jobs = jobs_for(tmp_path, "JOB=1:3", "echo", "task=JOB", "omp=$OMP_NUM_THREADS;", "exit", "JOB")
    script = backend.batch_script(jobs)
    assert script.startswith("#!/bin/bash\n")
    proc = run_script(script, tmp_path, SLURM_ARRAY_TASK_ID="2")
    assert proc.returncode == 2, proc.stderr
    lines = (tmp_path / "log/x.2.log").read_text().splitlines()
    assert lines[0] == "# echo task=2 omp=$OMP_NUM_THREADS; exit 2"
    assert lines[2] == "# Resources: threads=3 slurm_job=77_2 node=n1"
    assert "task=2 omp=3" in lines
    assert log_exit_code(tmp_path / "log/x.2.log") == 2
    assert not (tmp_path / "log/x.1.log").exists()
    proc = run_script(script, tmp_path, SLURM_ARRAY_TASK_ID="9")
    assert proc.returncode == 1
    assert "no task 9 in this script" in proc.stderr


def test_ntasks_runs_the_command_under_srun(tmp_path: Path) -> None:
    backend = SlurmBackend(Resources(), Placement(ntasks=2), config=config(tmp_path))
    jobs = expand_jobs(None, str(tmp_path / "log/ddp.log"), ["echo", "srun=$FAKE_SRUN", "|",
                                                              "tr", "a-z", "A-Z"])
    script = backend.batch_script(jobs)
    assert "case" not in script
    proc = run_script(script, tmp_path, SLURM_JOB_ID="55", SLURM_CPUS_PER_TASK="2")
    assert proc.returncode == 0, proc.stderr
    lines = (tmp_path / "log/ddp.log").read_text().splitlines()
    assert lines[0] == "# env FAKE_SRUN=yes bash -c 'echo srun=$FAKE_SRUN | tr a-z A-Z'"
    assert lines[2] == "# Resources: threads=1 ntasks=2 slurm_job=55 node=n1"
    assert "SRUN=YES" in lines


# ---- polling, exit codes and cancel against scripted Slurm clients ----

class FakeSlurm:
    """Answers the backend's Slurm calls; tasks 'run' when sbatch is called."""

    def __init__(self, jobs: list[Job], finish: dict[int, int | None], scontrol: str = ""):
        self.jobs = {job.index: job for job in jobs}
        self.finish = finish  # index -> exit code written to its log, None: no log
        self.scontrol = scontrol
        self.calls: list[list[str]] = []
        self.polls_left = 2  # squeue shows the tasks running for this many polls

    def __call__(self, argv: list[str], what: str, retries: int = 0,
                 timeout: float = 120) -> str:
        self.calls.append(argv)
        if argv[0] == "sbatch":
            script = Path(argv[-1]).read_text()
            assert "case" in script
            return "42;cluster\n"
        if argv[0] == "squeue":
            if self.polls_left > 0 and not any(c[0] == "scancel" for c in self.calls):
                self.polls_left -= 1
                return "".join(f"42_{i} RUNNING\n" for i in self.jobs)
            for index, code in self.finish.items():
                log = self.jobs[index].log
                if code is not None and not log.exists():
                    log.write_text(log_header("x", "threads=1") + log_footer(code, 1.0, 1))
            return ""
        if argv[0] == "scontrol":
            return self.scontrol
        if argv[0] == "scancel":
            return ""
        raise LaunchError(f"{argv[0]} is not available")


def test_run_reads_codes_from_logs_and_notes_tasks_that_ended_without_one(
    tmp_path: Path,
) -> None:
    jobs = jobs_for(tmp_path, "JOB=1:3", "true")
    for job in jobs:  # stale logs of an earlier run must not count
        job.log.parent.mkdir(parents=True, exist_ok=True)
        job.log.write_text(log_footer(0, 1.0, 1))
    fake = FakeSlurm(jobs, {1: 0, 2: 3, 3: None}, scontrol=(
        "JobId=45 ArrayJobId=42 ArrayTaskId=3 JobState=CANCELLED ExitCode=0:15\n"))
    backend = SlurmBackend(Resources(), config=config(tmp_path))
    backend._call = fake  # type: ignore[method-assign]
    handles = backend.run(jobs, max_jobs_run=2)
    assert [h.backend_id for h in handles] == ["42_1", "42_2", "42_3"]
    assert [h.returncode for h in handles] == [0, 3, 143]
    assert any("--array=1-3%2" in c for c in fake.calls if c[0] == "sbatch")
    assert (tmp_path / "log/q/slurm-42.sh").is_file()
    note = jobs[2].log.read_text().splitlines()
    assert note[0].startswith("# launch.sh: Slurm job 42_3 ended in state CANCELLED "
                              "(exit code 0:15) without the task's footer")
    assert note[0].endswith(f"{tmp_path}/log/q/slurm-42_3.out")
    assert log_exit_code(jobs[2].log) == 143
    assert not any(c[0] == "scancel" for c in fake.calls)


def test_stop_cancels_the_array(tmp_path: Path) -> None:
    jobs = jobs_for(tmp_path, "JOB=1:2", "sleep", "100")
    fake = FakeSlurm(jobs, {1: 143, 2: 143})
    fake.polls_left = 1000
    backend = SlurmBackend(Resources(), config=config(tmp_path))
    backend._call = fake  # type: ignore[method-assign]
    polls = iter(range(1000))
    with pytest.raises(JobsCancelled):
        backend.run(jobs, stop=lambda: next(polls) >= 3)
    assert ["scancel", "42_1", "42_2"] in fake.calls
    assert [log_exit_code(j.log) for j in jobs] == [143, 143]


def test_squeue_failures_are_tolerated_for_a_while(tmp_path: Path) -> None:
    jobs = jobs_for(tmp_path, "JOB=1:1", "true")
    fake = FakeSlurm(jobs, {1: 0})
    failures = iter([True, True, False])

    def flaky(argv: list[str], what: str, retries: int = 0, timeout: float = 120) -> str:
        if argv[0] == "squeue" and next(failures):
            raise LaunchError("squeue failed: Socket timed out on send/recv operation")
        return fake(argv, what, retries, timeout)

    backend = SlurmBackend(Resources(), config=config(tmp_path))
    backend._call = flaky  # type: ignore[method-assign]
    fake.polls_left = 0
    assert [h.returncode for h in backend.run(jobs)] == [0]


# ---- the command line ----

def launch(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return subprocess.run([str(REPO / "utils/launch.sh"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def test_cli_errors_for_slurm_options(tmp_path: Path) -> None:
    proc = launch(tmp_path, "--ntasks", "2", "log/x.log", "true")
    assert proc.returncode == 1
    assert "--ntasks 2 needs --backend slurm" in proc.stderr
    proc = launch(tmp_path, "--backend", "slurm", "--config", "nope.conf", "log/x.log", "true")
    assert proc.returncode == 2
    assert proc.stderr == "launch.sh: nope.conf: no such Slurm configuration file\n"
    (tmp_path / "bad.conf").write_text("command sbatch\noption foo=* --foo\n")
    proc = launch(tmp_path, "--backend", "slurm", "--config", "bad.conf", "log/x.log", "true")
    assert proc.returncode == 1
    assert proc.stderr.startswith("launch.sh: bad.conf:2: unknown option 'foo'")
    (tmp_path / "min.conf").write_text("command sbatch\n")
    proc = launch(tmp_path, "--backend", "slurm", "--config", "min.conf", "--mem", "1G",
                  "log/x.log", "true")
    assert proc.returncode == 1
    assert "min.conf has no rule for --mem 1G" in proc.stderr
    assert not (tmp_path / "log").exists()


def test_local_backend_accepts_partition_and_one_task(tmp_path: Path) -> None:
    proc = launch(tmp_path, "--partition", "p", "--ntasks", "1", "log/x.log", "echo", "ok")
    assert proc.returncode == 0, proc.stderr
    assert "ok" in (tmp_path / "log/x.log").read_text().splitlines()
    assert get_backend("local", Resources(), Placement(ntasks=1)).name == "local"
    assert Placement(partition="p", ntasks=2).describe() == "partition=p ntasks=2"
    assert Placement().describe() == ""
