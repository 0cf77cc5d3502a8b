"""utils/launch.sh (punct.launch): the Kaldi run.pl interface with the local backend."""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from punct.launch.backend import get_backend
from punct.launch.jobs import (
    JobRange,
    LaunchError,
    Resources,
    expand_jobs,
    parse_job_range,
)
from punct.launch.logformat import log_exit_code

REPO = Path(__file__).resolve().parents[1]
LAUNCH = REPO / "utils" / "launch.sh"
HEADER_RE = re.compile(r"^# Started at \w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \S+ \d{4}$")
ACCOUNTING_RE = re.compile(r"^# Accounting: time=(\d+) threads=(\d+)$")
ENDED_RE = re.compile(
    r"^# Ended \(code (\d+)\) at \w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \S+ \d{4}, "
    r"elapsed time (\d+) seconds$"
)


def launcher_env() -> dict[str, str]:
    """The venv's python first on PATH and no PYTHONPATH: the shim must find the repo."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.pop("PYTHONPATH", None)
    return env


def launch(cwd: Path, *args: str, launcher: str | Path = LAUNCH) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(launcher), *args], cwd=cwd, env=launcher_env(), capture_output=True, text=True,
        timeout=60,
    )


def read_log(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_three_jobs_write_logs_with_header_and_footer(tmp_path: Path) -> None:
    proc = launch(tmp_path, "JOB=1:3", "exp/log/x.JOB.log", "echo", "index=JOB", "env=$JOB")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    for i in (1, 2, 3):
        lines = read_log(tmp_path / f"exp/log/x.{i}.log")
        assert lines[0] == f"# echo index={i} env=$JOB"
        assert HEADER_RE.match(lines[1]), lines[1]
        assert lines[2] == "# Resources: threads=1"
        assert f"index={i} env={i}" in lines
        acc = ACCOUNTING_RE.match(lines[-2])
        assert acc and acc.group(2) == "1" and int(acc.group(1)) <= 2
        end = ENDED_RE.match(lines[-1])
        assert end and end.group(1) == "0"
    assert sorted(p.name for p in (tmp_path / "exp/log").iterdir()) == [
        "x.1.log", "x.2.log", "x.3.log"
    ]


def test_range_offset_and_single_job_form(tmp_path: Path) -> None:
    proc = launch(tmp_path, "SPLIT=3:4", "log/s.SPLIT.log", "echo part SPLIT of 4")
    assert proc.returncode == 0, proc.stderr
    assert "part 3 of 4" in read_log(tmp_path / "log/s.3.log")
    assert "part 4 of 4" in read_log(tmp_path / "log/s.4.log")
    assert not (tmp_path / "log/s.1.log").exists()
    single = launch(tmp_path, "log/one.log", "echo", "JOB stays", "${JOB:-unset}")
    assert single.returncode == 0, single.stderr
    assert "JOB stays unset" in read_log(tmp_path / "log/one.log")


def test_one_failing_job_exit_1_and_stderr_names_its_log(tmp_path: Path) -> None:
    proc = launch(tmp_path, "JOB=1:3", "log/f.JOB.log", "echo out JOB; [ JOB -ne 2 ]")
    assert proc.returncode == 1
    assert proc.stderr.strip() == "launch.sh: 1 / 3 failed, log is in log/f.2.log"
    assert ENDED_RE.match(read_log(tmp_path / "log/f.2.log")[-1]).group(1) == "1"
    assert ENDED_RE.match(read_log(tmp_path / "log/f.3.log")[-1]).group(1) == "0"


def test_two_failing_jobs_are_both_named(tmp_path: Path) -> None:
    proc = launch(tmp_path, "JOB=1:4", "log/f.JOB.log", "exit $(( JOB % 2 ? 3 : 0 ))")
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        "launch.sh: 2 / 4 failed, log is in log/f.1.log log/f.3.log"
    )
    assert ENDED_RE.match(read_log(tmp_path / "log/f.1.log")[-1]).group(1) == "3"


def test_rerun_failed_reruns_only_the_failed_job(tmp_path: Path) -> None:
    # each run appends its index to a counter file; job 2 fails until ok.2 exists
    cmd = "echo JOB >> counter; [ JOB -ne 2 ] || [ -e ok.JOB ]"
    first = launch(tmp_path, "JOB=1:3", "log/r.JOB.log", cmd)
    assert first.returncode == 1
    assert "log is in log/r.2.log" in first.stderr
    assert sorted((tmp_path / "counter").read_text().split()) == ["1", "2", "3"]
    kept = {i: (tmp_path / f"log/r.{i}.log").read_bytes() for i in (1, 3)}
    mtimes = {i: (tmp_path / f"log/r.{i}.log").stat().st_mtime_ns for i in (1, 3)}

    (tmp_path / "ok.2").touch()
    second = launch(tmp_path, "--rerun-failed", "JOB=1:3", "log/r.JOB.log", cmd)
    assert second.returncode == 0, second.stderr
    assert (tmp_path / "counter").read_text().split()[3:] == ["2"]
    assert ENDED_RE.match(read_log(tmp_path / "log/r.2.log")[-1]).group(1) == "0"
    for i in (1, 3):
        assert (tmp_path / f"log/r.{i}.log").read_bytes() == kept[i]
        assert (tmp_path / f"log/r.{i}.log").stat().st_mtime_ns == mtimes[i]

    third = launch(tmp_path, "--rerun-failed", "JOB=1:3", "log/r.JOB.log", cmd)
    assert third.returncode == 0
    assert len((tmp_path / "counter").read_text().split()) == 4  # nothing ran


def test_rerun_failed_runs_jobs_without_a_log_or_unfinished(tmp_path: Path) -> None:
    (tmp_path / "log").mkdir()
    (tmp_path / "log/u.1.log").write_text("# echo 1\n# Started at x\npartial output\n")
    proc = launch(tmp_path, "--rerun-failed", "JOB=1:2", "log/u.JOB.log", "echo JOB >> c")
    assert proc.returncode == 0
    assert sorted((tmp_path / "c").read_text().split()) == ["1", "2"]


def test_pipe_and_redirection_inside_quoted_command(tmp_path: Path) -> None:
    proc = launch(
        tmp_path, "JOB=1:2", "log/p.JOB.log",
        "printf 'b\\na\\nc\\n' | sort | tr a-z A-Z > out.JOB.txt && wc -l < out.JOB.txt",
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out.2.txt").read_text() == "A\nB\nC\n"
    assert "3" in read_log(tmp_path / "log/p.1.log")


def _intervals(path: Path) -> list[tuple[float, float]]:
    spans = []
    for line in path.read_text().splitlines():
        start, end = line.split()
        spans.append((float(start), float(end)))
    return sorted(spans)


SPAN_CMD = "s=$(date +%s.%N); sleep 0.3; echo $s $(date +%s.%N) >> spans"


def test_max_jobs_run_1_runs_sequentially(tmp_path: Path) -> None:
    proc = launch(tmp_path, "--max-jobs-run", "1", "JOB=1:3", "log/q.JOB.log", SPAN_CMD)
    assert proc.returncode == 0, proc.stderr
    spans = _intervals(tmp_path / "spans")
    assert len(spans) == 3
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert start >= end


def test_default_runs_all_jobs_at_once(tmp_path: Path) -> None:
    proc = launch(tmp_path, "JOB=1:3", "log/q.JOB.log", SPAN_CMD)
    assert proc.returncode == 0, proc.stderr
    spans = _intervals(tmp_path / "spans")
    assert max(s for s, _ in spans) < min(e for _, e in spans)  # all three overlapped


def _is_dead(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")  # a zombie has exited; only its parent may reap it


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_kills_the_running_jobs(tmp_path: Path, sig: signal.Signals) -> None:
    proc = subprocess.Popen(
        [str(LAUNCH), "JOB=1:2", "log/k.JOB.log", "sleep 60 & echo $! > pid.JOB; wait"],
        cwd=tmp_path, env=launcher_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )
    pidfiles = [tmp_path / "pid.1", tmp_path / "pid.2"]
    deadline = time.monotonic() + 20
    while not all(p.exists() and p.read_text().strip() for p in pidfiles):
        assert time.monotonic() < deadline, "jobs did not start"
        time.sleep(0.05)
    pids = [int(p.read_text()) for p in pidfiles]
    assert not any(_is_dead(pid) for pid in pids)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 128 + sig
    assert f"received {sig.name}" in err
    deadline = time.monotonic() + 5
    while not all(_is_dead(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_is_dead(pid) for pid in pids)
    assert ENDED_RE.match(read_log(tmp_path / "log/k.1.log")[-1]).group(1) == "143"


def test_threads_gpu_mem_time_options(tmp_path: Path) -> None:
    proc = launch(
        tmp_path, "--num-threads", "3", "--gpu", "0", "--mem=2G", "--time", "1:00:00",
        "log/t.log",
        "echo omp=$OMP_NUM_THREADS mkl=$MKL_NUM_THREADS cvd=[${CUDA_VISIBLE_DEVICES-unset}]",
    )
    assert proc.returncode == 0, proc.stderr
    lines = read_log(tmp_path / "log/t.log")
    assert "omp=3 mkl=3 cvd=[]" in lines
    assert lines[2] == "# Resources: threads=3 mem=2G gpu=0 time=1:00:00"
    assert ACCOUNTING_RE.match(lines[-2]).group(2) == "3"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bogus", "1", "log/x.log", "true"], "unknown option --bogus"),
        (["--num-threads", "two", "log/x.log", "true"], "--num-threads expects an integer"),
        (["--max-jobs-run", "0", "log/x.log", "true"], "--max-jobs-run must be >= 1"),
        (["--rerun-failed=maybe", "log/x.log", "true"], "true or false"),
        (["--ntasks", "2", "log/x.log", "true"], "--ntasks 2 needs --backend slurm"),
        (["--backend", "pbs", "log/x.log", "true"], "unknown backend 'pbs'"),
        (["JOB=1:2", "log/x.log", "true"], "does not contain JOB"),
        (["JOB=3:1", "log/x.JOB.log", "true"], "end 1 is before start 3"),
        (["log/x.log"], "no command given"),
        (["--mem"], "--mem needs a value"),
    ],
)
def test_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    proc = launch(tmp_path, *args)
    assert proc.returncode == 1
    assert proc.stderr.startswith("launch.sh: ")
    assert message in proc.stderr
    assert not (tmp_path / "log").exists()


def test_shim_works_from_a_recipe_dir_through_the_utils_symlink(tmp_path: Path) -> None:
    recipe = tmp_path / "egs/demo/punct1"
    recipe.mkdir(parents=True)
    (recipe / "utils").symlink_to(REPO / "utils")
    proc = launch(recipe, "JOB=1:2", "exp/log/d.JOB.log", "pwd", launcher="utils/launch.sh")
    assert proc.returncode == 0, proc.stderr
    assert str(recipe) in read_log(recipe / "exp/log/d.2.log")


def test_help_exits_0_and_no_args_exits_1(tmp_path: Path) -> None:
    helped = launch(tmp_path, "--help")
    assert helped.returncode == 0 and "--max-jobs-run K" in helped.stdout
    assert launch(tmp_path).returncode == 1


# ---- the Python API --------------------------------------------------------------------------


def test_parse_job_range_and_expand() -> None:
    assert parse_job_range("JOB=2:4") == JobRange("JOB", 2, 4)
    assert parse_job_range("log/x.log") is None
    assert parse_job_range("JOB=1") is None
    with pytest.raises(LaunchError):
        parse_job_range("JOB=5:4")
    jobs = expand_jobs(JobRange("JOB", 1, 2), "a/JOB.log", ["cmd", "x.JOB", "$JOB ${JOB}"])
    assert [(j.index, j.command, str(j.log), j.env) for j in jobs] == [
        (1, "cmd x.1 $JOB ${JOB}", "a/1.log", {"JOB": "1"}),
        (2, "cmd x.2 $JOB ${JOB}", "a/2.log", {"JOB": "2"}),
    ]


def test_log_exit_code(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    assert log_exit_code(log) is None
    ended = "# Ended (code 0) at Thu Jan 01 00:00:00 UTC 2025, elapsed time 1 seconds"
    log.write_text(f"# cmd\n{ended}\n\n")
    assert log_exit_code(log) == 0
    log.write_text("# Ended (code 0) at x\nmore output\n")
    assert log_exit_code(log) is None
    log.write_text("# Ended (code 127) at x, elapsed time 0 seconds\n")
    assert log_exit_code(log) == 127


def test_backends_by_name() -> None:
    assert get_backend("slurm", Resources()).name == "slurm"
    assert get_backend("local", Resources()).name == "local"
