"""A one-node Slurm cluster of Debian's slurmctld, slurmd and munged, for tests and benchmarks.

Everything it needs lies in one folder of the caller's (its slurm.conf, munge key and socket,
spool, state, logs), its daemons run in the foreground as our children on ports of their own,
and they are stopped when the `with` block ends: nothing of the machine's is read or changed,
so a cluster can run beside another. Clients reach it through `cluster.env` (SLURM_CONF).
Needs root (slurmd starts jobs as their users); nothing here imports pytest.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ssebench.core.stopping import stop_server
from ssebench.testing.servers import free_port
from ssebench.testing.waiting import wait_for

DAEMONS = ("slurmctld", "slurmd", "munged", "sbatch", "sinfo")
NODE = "ssebench-node"
READY_SECONDS = 60.0


def slurm_missing() -> str | None:
    """Why no cluster can start here; None when one can."""
    missing = [name for name in DAEMONS if shutil.which(name) is None]
    if missing:
        return f"no {', '.join(missing)}: apt-get install slurmctld slurmd slurm-client munge"
    if os.geteuid() != 0:
        return "slurmd needs root"
    return None


@dataclass(frozen=True)
class Cluster:
    folder: Path
    env: dict[str, str]  # for sbatch, sinfo, ...: SLURM_CONF names this cluster's slurm.conf


def _conf(folder: Path, munge_socket: Path, cpus: int) -> str:
    host = socket.gethostname().split(".")[0]
    return f"""\
ClusterName=ssebench
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
SlurmUser=root
SlurmdUser=root
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd.pid
SlurmctldLogFile={folder}/slurmctld.log
SlurmdLogFile={folder}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
NodeName={NODE} NodeAddr=127.0.0.1 NodeHostname={host} CPUs={cpus} State=UNKNOWN
PartitionName=ssebench Nodes={NODE} Default=YES MaxTime=INFINITE State=UP
"""


@contextlib.contextmanager
def one_node_cluster(folder: Path, cpus: int | None = None) -> Iterator[Cluster]:
    """A cluster of this machine's `cpus` (default all), running until the block ends."""
    for part in ("munge", "state", "spool"):
        (folder / part).mkdir(parents=True, exist_ok=True)
    munge = folder / "munge"
    munge.chmod(0o700)
    key = munge / "munge.key"
    key.write_bytes(secrets.token_bytes(1024))
    key.chmod(0o400)
    conf = folder / "slurm.conf"
    conf.write_text(_conf(folder, munge / "socket", cpus or os.cpu_count() or 1))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    started: list[subprocess.Popen[bytes]] = []
    try:
        for argv in (
            ["munged", "--foreground", "--force", f"--key-file={key}", f"--socket={munge}/socket",
             f"--pid-file={munge}/pid", f"--log-file={munge}/log", f"--seed-file={munge}/seed"],
            ["slurmctld", "-D", "-c", "-f", str(conf)],
            ["slurmd", "-D", "-N", NODE, "-f", str(conf)],
        ):  # fmt: skip
            quiet = subprocess.DEVNULL  # each keeps a log file in `folder`
            started.append(subprocess.Popen(argv, env=env, stdin=quiet, stdout=quiet, stderr=quiet))
            if argv[0] == "munged":
                _wait(lambda: (munge / "socket").exists(), "munged", folder)
        _wait(lambda: _idle(env), "the node", folder)
        yield Cluster(folder, env)
    finally:
        for proc in reversed(started):
            stop_server(proc)


def _idle(env: dict[str, str]) -> bool:
    done = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], env=env, capture_output=True,
                          text=True, timeout=30)  # fmt: skip
    return done.returncode == 0 and done.stdout.strip() == "idle"


def _wait(ready: Callable[[], bool], what: str, folder: Path) -> None:
    def said() -> str:
        logs = {p.name: p.read_text()[-2000:] for p in folder.glob("*.log")}
        return f"{what} up (its logs: {logs})"

    wait_for(ready, READY_SECONDS, said, 0.2)
