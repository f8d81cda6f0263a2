"""A real Slurm cluster on this one host, for tests/test_deploy_slurm.py and bench/deploy.py:
Debian's slurmctld and two slurmd "nodes", n1 at 127.0.0.2 and n2 at 127.0.0.3, all state in
one folder, started under `unshare --pid --fork --mount-proc --kill-child` so that killing one
process ends every daemon and job step (../shared/TOOLCHAIN.md). Each slurmd runs in a mount
namespace of its own in which `FOLDER/local` is that node's own storage (FOLDER/n1, FOLDER/n2),
as node-local disks are on a cluster; on n2, FOLDER/data is hidden behind an empty folder."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from alpha_core.run.launch import free_port_base

ROOT = Path(__file__).resolve().parents[1]
NODES = {"n1": "127.0.0.2", "n2": "127.0.0.3"}


@dataclass
class Cluster:
    folder: Path
    conf: Path
    env: dict[str, str]
    data: Path  # a data folder every node but n2 sees

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "alpha_cli.main", *args],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=600,
            env={**self.env, "COLUMNS": "200"},
        )

    def jobs(self) -> list[str]:
        out = subprocess.run(
            ["squeue", "-h", "-o", "%i"], capture_output=True, text=True, env=self.env, timeout=30
        )
        return out.stdout.split()


def _config(folder: Path, ports: int, cpus: int = 8) -> str:
    host = socket.gethostname()
    nodes = "\n".join(
        f"NodeName={name} NodeAddr={address} NodeHostname={host} Port={ports + 1 + i} CPUs={cpus}"
        for i, (name, address) in enumerate(NODES.items())
    )
    return f"""ClusterName=alpha{secrets.token_hex(3)}
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ports}
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1
MailProg=/bin/true
ReturnToService=2
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool-%n
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd-%n.pid
SlurmctldLogFile={folder}/slurmctld.log
SlurmdLogFile={folder}/slurmd-%n.log
SlurmdParameters=config_overrides
{nodes}
PartitionName=debug Nodes={",".join(NODES)} Default=YES MaxTime=INFINITE State=UP
"""


def _start_script(folder: Path, conf: Path) -> str:
    """The daemons, each slurmd in a mount namespace where `local` is its node's own folder
    (and on n2 the data folder is an empty one); `wait` keeps the namespace's init alive."""
    lines = [f"slurmctld -D -c -f {conf} >/dev/null 2>&1 &"]
    for name in NODES:
        hide = f"mount --bind {folder}/empty {folder}/data && " if name == "n2" else ""
        lines.append(
            f"unshare --mount --propagation private sh -c '"
            f"mount --bind {folder}/{name} {folder}/local && {hide}"
            f"exec slurmd -D -N {name} -f {conf}' >/dev/null 2>&1 &"
        )
    return "\n".join(lines) + "\nwait\n"


def _wait_idle(env: dict[str, str], daemons: subprocess.Popen[bytes]) -> None:
    """Polls sinfo until both nodes report idle (about a second)."""
    pause = threading.Event()
    for _ in range(300):
        assert daemons.poll() is None, "the cluster's daemons ended at start-up"
        listed = subprocess.run(
            ["sinfo", "-h", "-N", "-o", "%N %T"], capture_output=True, text=True, env=env
        ).stdout.split("\n")
        if sum(1 for line in listed if line.endswith(" idle")) == len(NODES):
            return
        pause.wait(0.1)
    raise AssertionError("the Slurm nodes never became idle")


@contextmanager
def slurm_cluster(folder: Path, cpus: int = 8) -> Iterator[Cluster]:
    """The cluster, up (both nodes idle) until the block ends; then every process of it ends.
    Each node claims `cpus` CPUs (config_overrides): a task slot per role of a large plan."""
    for sub in ("state", "local", "empty", "data", *NODES):
        (folder / sub).mkdir(parents=True)
    shutil.copy(ROOT / "examples" / "data" / "digits.csv", folder / "data" / "digits.csv")
    conf = folder / "slurm.conf"
    conf.write_text(_config(folder, free_port_base(len(NODES) + 1), cpus))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    script = folder / "start.sh"
    script.write_text(_start_script(folder, conf))
    daemons = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "sh", str(script)],
        env=env,
    )
    try:
        _wait_idle(env, daemons)
        yield Cluster(folder, conf, env, folder / "data")
    finally:
        daemons.kill()  # the namespace's init: every daemon and job step ends with it
        daemons.wait()
