"""A throw-away one-node Slurm cluster on localhost, for tests and CI (needs root).

Everything (slurm.conf, state, spool, logs, PID files) lives under one directory,
except munge's key and socket (a fresh /tmp/punct-munge.* directory, which the
unprivileged munge user must be able to reach; removed by stop). The daemons run
in the foreground modes of their tools and are stopped by the PIDs recorded in
``<dir>/pids``::

    python tests/helpers/testcluster.py start DIR [--cpus N]   # prints SLURM_CONF=...
    python tests/helpers/testcluster.py stop DIR

Clients find the cluster through ``SLURM_CONF=<dir>/slurm.conf`` (its AuthInfo names
the munge socket, its ports are free ones picked at start).
"""

from __future__ import annotations

import argparse
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
"""The daemons started, in order (stopped in reverse order)."""

CLIENTS = ("sbatch", "squeue", "scontrol", "scancel", "sacct", "srun", "sinfo")
"""The Slurm client commands the launcher and the tests use."""


class ClusterError(RuntimeError):
    """The test cluster could not be started (the message says which daemon and its log)."""


@dataclass
class TestCluster:
    """A running test cluster: its directory, config file and daemon PIDs."""

    __test__ = False  # not a pytest test class

    root: Path
    conf: Path
    pids: dict[str, int]

    @property
    def env(self) -> dict[str, str]:
        """Variables a client needs on top of its environment."""
        return {"SLURM_CONF": str(self.conf)}


def missing_programs() -> list[str]:
    """The munge/Slurm programs not found on PATH (empty when the cluster can run)."""
    return [name for name in (*DAEMONS, *CLIENTS) if shutil.which(name) is None]


def _free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports that were free a moment ago."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _memory_mb() -> int:
    """Half of this machine's memory in MiB (the node's RealMemory)."""
    with open("/proc/meminfo", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 2048
    return 1000


def slurm_conf_text(root: Path, munge_socket: Path, host: str, cpus: int, memory_mb: int,
                    ports: list[int]) -> str:
    """The slurm.conf of a one-node cluster whose files all live under ``root``."""
    lines = [
        "ClusterName=punct-test",
        f"SlurmctldHost={host}",
        f"SlurmctldPort={ports[0]}",
        f"SlurmdPort={ports[1]}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={munge_socket}",
        f"StateSaveLocation={root / 'state'}",
        f"SlurmdSpoolDir={root / 'spool'}",
        f"SlurmctldPidFile={root / 'slurmctld.pid'}",
        f"SlurmdPidFile={root / 'slurmd.pid'}",
        f"SlurmctldLogFile={root / 'slurmctld.log'}",
        f"SlurmdLogFile={root / 'slurmd.log'}",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/linux",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/filetxt",
        f"JobCompLoc={root / 'jobcomp.txt'}",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "SlurmdParameters=config_overrides",
        "SchedulerParameters=batch_sched_delay=0,sched_min_interval=100000",
        "MpiDefault=none",
        "MailProg=/bin/true",
        "ReturnToService=2",
        "KillWait=5",
        f"NodeName={host} CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN",
        "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
    ]
    return "\n".join(lines) + "\n"


def _munge_dir(root: Path) -> Path:
    """A fresh directory for munge's key and socket that the munge user can reach.

    munged refuses directories it cannot canonicalise, and pytest's temporary
    directories are private to root, so it lives in /tmp (its path is kept in
    ``root/munge_dir`` for :func:`stop_cluster`).
    """
    path = Path(tempfile.mkdtemp(prefix="punct-munge.", dir="/tmp"))
    (root / "munge_dir").write_text(f"{path}\n", encoding="utf-8")
    return path


def _start_munge(root: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """munged with its own key and socket (directory owned by munge, mode 755)."""
    munge_dir = _munge_dir(root)
    os.chmod(munge_dir, 0o755)
    key = munge_dir / "munge.key"
    key.write_bytes(os.urandom(1024))
    os.chmod(key, 0o400)
    user = pwd.getpwnam("munge")
    for path in (munge_dir, key):
        os.chown(path, user.pw_uid, user.pw_gid)
    socket_path = munge_dir / "munge.socket"
    argv = [
        "munged", "--foreground", f"--key-file={key}", f"--socket={socket_path}",
        f"--pid-file={munge_dir / 'munged.pid'}", f"--log-file={munge_dir / 'munged.log'}",
        f"--seed-file={munge_dir / 'munged.seed'}",
    ]
    proc = _spawn(argv, root / "munged.out", user=user.pw_uid, group=user.pw_gid)
    return proc, socket_path


def _spawn(
    argv: list[str], out: Path, env: dict[str, str] | None = None,
    user: int | None = None, group: int | None = None,
) -> subprocess.Popen[bytes]:
    """Start a daemon in the foreground, in its own session, output to ``out``."""
    with open(out, "wb") as handle:
        return subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT, env=env,
            start_new_session=True, user=user, group=group,
            extra_groups=[] if group is not None else None,
        )


def _wait_for(test: Callable[[], bool], what: str, procs: dict[str, subprocess.Popen[bytes]],
              root: Path, timeout: float) -> None:
    """Poll ``test()`` until true; ClusterError when a daemon died or time ran out."""
    deadline = time.monotonic() + timeout
    while not test():
        for name, proc in procs.items():
            if proc.poll() is not None:
                raise ClusterError(f"{name} exited with {proc.returncode} (see {root}/{name}.out "
                                   f"and its log in {root})")
        if time.monotonic() > deadline:
            raise ClusterError(
                f"timed out after {timeout:.0f} s waiting for {what} (logs in {root})"
            )
        time.sleep(0.1)


def start_cluster(root: Path, cpus: int | None = None, timeout: float = 60.0) -> TestCluster:
    """Start munged, slurmctld and slurmd under ``root`` (created; must not exist yet).

    Returns once the node is idle. The PIDs are written to ``root/pids`` at once, so
    :func:`stop_cluster` can clean up even after a failed start.
    """
    if os.geteuid() != 0:
        raise ClusterError("the test cluster must be started as root")
    missing = missing_programs()
    if missing:
        raise ClusterError(f"missing programs: {' '.join(missing)} "
                           "(apt-get install slurm-wlm munge)")
    root = root.resolve()
    root.mkdir(parents=True)
    os.chmod(root, 0o755)
    for sub in ("state", "spool"):
        (root / sub).mkdir()
    host = socket.gethostname().split(".")[0]
    conf = root / "slurm.conf"
    env = dict(os.environ, SLURM_CONF=str(conf))
    procs: dict[str, subprocess.Popen[bytes]] = {}
    cluster = TestCluster(root, conf, {})
    try:
        procs["munged"], socket_path = _start_munge(root)
        _record(cluster, procs)
        conf.write_text(slurm_conf_text(root, socket_path, host, cpus or os.cpu_count() or 1,
                                        _memory_mb(), _free_ports(2)), encoding="utf-8")
        _wait_for(socket_path.exists, "the munge socket", procs, root, timeout)
        procs["slurmctld"] = _spawn(["slurmctld", "-D", "-i"], root / "slurmctld.out", env)
        _record(cluster, procs)
        procs["slurmd"] = _spawn(["slurmd", "-D"], root / "slurmd.out", env)
        _record(cluster, procs)
        _wait_for(lambda: _node_state(env) == "idle", "the node to become idle", procs, root,
                  timeout)
    except BaseException:
        stop_cluster(root)
        raise
    return cluster


def _record(cluster: TestCluster, procs: dict[str, subprocess.Popen[bytes]]) -> None:
    cluster.pids = {name: proc.pid for name, proc in procs.items()}
    text = "".join(f"{name} {pid}\n" for name, pid in cluster.pids.items())
    (cluster.root / "pids").write_text(text, encoding="ascii")


def _node_state(env: dict[str, str]) -> str:
    proc = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True,
                          timeout=30, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def read_pids(root: Path) -> dict[str, int]:
    """The daemon PIDs recorded in ``root/pids`` (empty when there is none)."""
    try:
        text = (root / "pids").read_text(encoding="ascii")
    except FileNotFoundError:
        return {}
    return {name: int(pid) for name, pid in (line.split() for line in text.splitlines())}


def cancel_all_jobs(root: Path, timeout: float = 30.0) -> None:
    """scancel every job of the cluster and wait until the queue is empty (or ``timeout``).

    Without this, the job step daemons (slurmstepd) and their jobs outlive slurmd.
    """
    env = dict(os.environ, SLURM_CONF=str(root / "slurm.conf"))

    def queued() -> list[str]:
        proc = subprocess.run(["squeue", "-h", "-o", "%A"], env=env, capture_output=True,
                              text=True, timeout=30, check=False)
        return proc.stdout.split() if proc.returncode == 0 else []

    jobs = queued()
    if not jobs:
        return
    subprocess.run(["scancel", *jobs], env=env, capture_output=True, timeout=30, check=False)
    deadline = time.monotonic() + timeout
    while queued() and time.monotonic() < deadline:
        time.sleep(0.2)


def stop_cluster(root: Path, timeout: float = 15.0) -> None:
    """Cancel the cluster's jobs, then SIGTERM the daemons recorded in ``root/pids``
    (SIGKILL after ``timeout``), newest first; remove munge's directory."""
    pids = read_pids(root)
    if "slurmctld" in pids and _alive(pids["slurmctld"]) and "slurmd" in pids:
        cancel_all_jobs(root)
    for name in reversed(DAEMONS):
        pid = pids.get(name)
        if pid is None:
            continue
        _kill_group(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _alive(pid):
            _kill_group(pid, signal.SIGKILL)
            while _alive(pid) and time.monotonic() < deadline + 5:
                time.sleep(0.05)
    try:
        munge_dir = Path((root / "munge_dir").read_text(encoding="utf-8").strip())
    except FileNotFoundError:
        return
    if munge_dir.name.startswith("punct-munge."):
        shutil.rmtree(munge_dir, ignore_errors=True)


def _kill_group(pid: int, sig: int) -> None:
    """Signal the process group led by ``pid`` (each daemon was started in its own session)."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie; reaps it when it is our child."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    except ChildProcessError:
        pass
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def main(argv: list[str] | None = None) -> int:
    """``start DIR`` prints ``SLURM_CONF=...`` once the node is idle; ``stop DIR`` stops it."""
    parser = argparse.ArgumentParser(prog="testcluster", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("start", "stop"))
    parser.add_argument("dir", type=Path, help="the cluster's directory (created by start)")
    parser.add_argument("--cpus", type=int, default=None, help="CPUs of the node (default: all)")
    args = parser.parse_args(argv)
    try:
        if args.action == "start":
            cluster = start_cluster(args.dir, args.cpus)
            print(f"SLURM_CONF={cluster.conf}")
        else:
            stop_cluster(args.dir)
    except (ClusterError, OSError) as err:
        print(f"testcluster: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
