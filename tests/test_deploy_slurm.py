"""`alpha deploy slurm` on a real Slurm cluster: Debian's slurmctld and two slurmd "nodes" on
this one host, started by the fixture under `unshare --pid --fork --mount-proc --kill-child`
(so that killing one process removes every daemon and job step) with all state in a temp
folder, and torn down when the module ends.

The nodes are n1 at 127.0.0.2 and n2 at 127.0.0.3 (every 127.0.0.0/8 address is bindable
without setup), so each role listens on its own node's address. Each slurmd runs in a mount
namespace of its own where the same path is that node's own local storage, as on a cluster:
sbcast really copies to each node, and what is on one node is not on the other. On n2 the
fixture's data folder is hidden, so a role placed there can fail for a reason of that node.

Every role is started by srun (the runtime's start event arrives through srun's labelled
output); the digits `star` plan and a heterogeneous plan (an AArch64 worker, run under
qemu-aarch64 on its x86-64 node, beside x86-64 roles) end with the single-process SHA-256."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurm_cluster import NODES, Cluster, slurm_cluster
from test_partitioned import SHORT, build_single, written_sha

from alpha_core.run.launch import free_port_base

MIXED = """
pairing mixed for star {
  hub: host x86_64
  worker[0..3]: host x86_64
  worker[3]: host aarch64
}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with slurm_cluster(tmp_path_factory.mktemp("slurm")) as running:
        yield running


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> str:
    return written_sha(build_single(SHORT, tmp_path_factory.mktemp("single")).run("--quiet"))


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("src") / "digits.alpha"
    path.write_text(SHORT + MIXED)
    return path


def deploy(cluster: Cluster, source: Path, *args: str) -> tuple[int, dict[str, object]]:
    proc = cluster.cli(
        "deploy", "slurm", str(source), "--node-dir", str(cluster.folder / "local"),
        "--port-base", str(free_port_base(8, NODES["n1"])), "--timeout-ms", "5000", *args,
        "--json",
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    try:
        body = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise AssertionError(proc.stdout[-2000:] + proc.stderr[-2000:]) from None
    return proc.returncode, body


def roles_of(body: dict[str, object]) -> dict[str, dict[str, object]]:
    roles = body["roles"]
    assert isinstance(roles, list)
    return {str(r["role"]): r for r in roles}


def test_star_runs_on_two_nodes_to_the_single_process_bits(
    cluster: Cluster, source: Path, reference: str
) -> None:
    params = cluster.folder / "star.params"  # a folder every node shares
    code, body = deploy(
        cluster, source, "--plan", "star", "--ntasks-per-node", "3", "--params-out", str(params)
    )
    assert code == 0 and body["ok"], json.dumps(body)[:3000]
    roles = roles_of(body)
    [sha] = {r["params_sha256"] for r in roles.values() if r["params_sha256"]}
    assert sha == reference == hashlib.sha256(params.read_bytes()).hexdigest()
    assert {r["node"] for r in roles.values()} == set(NODES)  # the roles span both nodes
    started = body["role_started"]
    assert isinstance(started, dict) and set(started) == set(roles)  # each started via srun
    assert cluster.jobs() == []  # the allocation was released
    # the copies were removed from each node's own storage
    assert [sorted((cluster.folder / n).iterdir()) for n in NODES] == [[], []]


def test_a_heterogeneous_plan_puts_the_aarch64_role_in_its_own_component(
    cluster: Cluster, source: Path, reference: str
) -> None:
    assert shutil.which("qemu-aarch64"), "qemu-user is installed by .ci/run"
    code, body = deploy(cluster, source, "--plan", "star", "--pairing", "mixed")
    assert code == 0 and body["ok"], json.dumps(body)[:3000]
    roles = roles_of(body)
    [sha] = {r["params_sha256"] for r in roles.values() if r["params_sha256"]}
    assert sha == reference
    assert "+" not in str(body["jobid"]) and cluster.jobs() == []
    # x86-64 roles on one component's node, the AArch64 worker on the other component's
    x86 = {r["node"] for name, r in roles.items() if name != "worker[3]"}
    assert len(x86) == 1 and roles["worker[3]"]["node"] not in x86


def test_a_role_that_fails_on_its_node_is_reported_with_its_refusal_and_node(
    cluster: Cluster, source: Path
) -> None:
    """The data folder is hidden on n2: the roles placed there refuse `data-missing`, named
    with n2; the others refuse by name as their peers go; the allocation is released."""
    csv = str(cluster.data / "digits.csv")
    fail = ("--plan", "star", "--ntasks-per-node", "3", "--data", csv, "--timeout-ms", "1500")
    code, body = deploy(cluster, source, *fail)
    assert code == 1 and not body["ok"]
    roles = roles_of(body)
    on_n2 = {name for name, r in roles.items() if r["node"] == "n2"}
    assert on_n2, roles
    for name in on_n2:
        assert roles[name]["refusal"] == "data-missing", roles[name]
        assert csv in str(roles[name]["message"])
    assert all(r["refusal"] for r in roles.values())
    assert cluster.jobs() == []

    local = str(cluster.folder / "local")
    proc = cluster.cli("deploy", "slurm", str(source), *fail, "--node-dir", local)
    assert proc.returncode == 1
    assert "error[data-missing]: " in proc.stderr and " on n2: " in proc.stderr


@pytest.mark.parametrize(
    ("pairing", "nodelist", "hostfiles"),
    [
        ((), "n1,n2", [["n1", "n1", "n1", "n2", "n2"]]),
        (("--pairing", "mixed"), "n1:n2", [["n1"] * 4, ["n2"]]),
    ],
    ids=["one-component", "heterogeneous"],
)
def test_emit_writes_a_job_that_sbatch_runs(
    cluster: Cluster,
    source: Path,
    reference: str,
    tmp_path: Path,
    pairing: tuple[str, ...],
    nodelist: str,
    hostfiles: list[list[str]],
) -> None:
    """`--emit DIR` for the cluster's nodes: the job script, the step files and the hosts
    file; submitted with `sbatch --wait`, the job ends with every role done and the
    single-process bits (the heterogeneous one as two components, `#SBATCH hetjob`)."""
    into = tmp_path / "job"
    proc = cluster.cli(
        "deploy", "slurm", str(source), "--plan", "star", *pairing, "--emit", str(into),
        "--nodelist", nodelist, "--node-dir", str(cluster.folder / "local"),
        "--port-base", str(free_port_base(8, NODES["n1"])),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    hosts = (into / "hosts").read_text()
    assert "hub 127.0.0.2:" in hosts and f"worker[3] {NODES[hostfiles[-1][-1]]}:" in hosts
    script = (into / "job.sh").read_text()
    assert "--multi-prog" in script and ("#SBATCH hetjob" in script) == bool(pairing)
    for k, nodes in enumerate(hostfiles):
        assert (into / f"hostfile-{k}").read_text().split() == nodes
    assert oct((into / "secret").stat().st_mode & 0o777) == "0o600"
    log = tmp_path / "job.out"
    done = subprocess.run(
        ["sbatch", "--wait", "--output", str(log), str(into / "job.sh")],
        capture_output=True,
        text=True,
        env=cluster.env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr + log.read_text()
    events = [line.split(": ", 1)[1] for line in log.read_text().splitlines() if ": {" in line]
    finished = [json.loads(e) for e in events if '"event":"done"' in e]
    assert len(finished) == 5
    assert {e["params_sha256"] for e in finished if "params_sha256" in e} == {reference}
    assert "Warning" not in log.read_text()
    assert [sorted((cluster.folder / n).iterdir()) for n in NODES] == [
        sorted((cluster.folder / "n1").glob("*.params")),
        [],
    ]  # the copies removed; the parameter file stays on the writer's node
    for leftover in (cluster.folder / "n1").glob("*.params"):
        leftover.unlink()


def test_a_capture_on_a_shared_folder_resumes_on_a_reused_allocation(
    cluster: Cluster, reference: str, tmp_path: Path
) -> None:
    """Four owners of partitioned state capture every 10 rounds into a folder every node
    shares; three owners, started with --jobid on an allocation the test holds (and which
    alpha leaves to it), resume the capture of round 20 to the same bits."""
    from test_partitioned import plan_text

    four, three = tmp_path / "four.alpha", tmp_path / "three.alpha"
    four.write_text(plan_text(4, "params"))
    three.write_text(plan_text(3, "params"))
    shared = cluster.folder / "shared"
    code, body = deploy(
        cluster, four, "--plan", "p", "--ntasks-per-node", "2", "--checkpoint-dir", str(shared)
    )
    assert code == 0, json.dumps(body)[:3000]
    [sha] = {r["params_sha256"] for r in roles_of(body).values() if r["params_sha256"]}
    assert sha == reference
    capture = shared / "round-00000020"
    assert capture.is_dir()

    held = subprocess.run(
        ["salloc", "--no-shell", "--ntasks", "3", "--job-name", "held-by-the-test"],
        capture_output=True, text=True, env=cluster.env, timeout=120,
    )  # fmt: skip
    jobid = held.stderr.split("Granted job allocation ")[1].split()[0]
    try:
        code, body = deploy(
            cluster, three, "--plan", "p", "--jobid", jobid, "--resume", str(capture),
            "--checkpoint-dir", str(cluster.folder / "shared-3"),
        )  # fmt: skip
        assert code == 0, json.dumps(body)[:3000]
        roles = roles_of(body)
        [sha] = {r["params_sha256"] for r in roles.values() if r["params_sha256"]}
        assert sha == reference and len(roles) == 3
        assert {r["resumed_at"] for r in roles.values()} == {20}
        assert cluster.jobs() == [jobid]  # the allocation given with --jobid is left to us
    finally:
        subprocess.run(["scancel", jobid], env=cluster.env, timeout=60)


def test_without_slurm_commands_the_deploy_is_refused_by_name(tmp_path: Path) -> None:
    """A submitting machine without Slurm's client commands (none on PATH): `slurm-failed`,
    saying which command is missing, before anything is built."""
    import os
    import sys

    from slurm_cluster import ROOT

    env = {**os.environ, "PATH": str(tmp_path)}  # an empty folder: no salloc, no zig needed
    proc = subprocess.run(
        [sys.executable, "-m", "alpha_cli.main", "deploy", "slurm", "examples/digits.alpha",
         "--plan", "star", "--json"],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    [refusal] = json.loads(proc.stdout)["refusals"]
    assert refusal["name"] == "slurm-failed"
    assert "`salloc` is not installed here" in refusal["message"]
