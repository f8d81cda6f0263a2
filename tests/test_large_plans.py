"""Plans of any size (issue 28): a 1,024-role plan of digits built whole, each role its own
executable with its own table in its kind's template (and refused at start-up when that table
is not whole), and its 256-role variant run over loopback to the single-process bits with
`alpha run` (one summary line, not 256 bars) and in alpha-tui (a summary above a table that
scrolls). Figures (build time and size, memory, start-up) are in docs/performance.md, "Plans of
any size (issue 28)"; bench/large_plans.py measures them."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import EXAMPLES, cli, run_exe
from slurm_cluster import NODES, slurm_cluster
from test_deploy_k8s import IMAGE
from test_deploy_k8s import errors as k8s_errors
from test_deploy_k8s import load as k8s_load
from test_multihost import Network, hosts_text
from test_partitioned import written_sha
from textual.pilot import Pilot

from alpha_core.build import role_table
from alpha_core.build.executables import build_plan
from alpha_core.build.hosts_file import parse_hosts
from alpha_core.build.outputs import Deployment
from alpha_core.plan.projection import project
from alpha_core.run.launch import Launch, free_port_base
from alpha_core.run.role_summary import MANY_ROLES, summarize
from alpha_core.run.run_state import RunState
from alpha_core.run.runs import Choice, overridden
from alpha_core.workspace.analysis import Workspace
from alpha_tui.app import AlphaTui

STEPS = "6"  # a short run: the bits of every round are compared, not its length


def big_source(folder: Path) -> Path:
    """digits with a batch of 1,024 in 1,024 leaves, and hierarchy plans (fan-out 4) of 1,024,
    256, 128 and 4 workers."""
    text = (EXAMPLES / "digits.alpha").read_text()
    text = text[: text.index("# Distribution")]
    text = text.replace("batch 64 leaves 8", "batch 1024 leaves 1024")
    text = text.replace('table("data/digits.csv"', f'table("{EXAMPLES}/data/digits.csv"')
    for n in (1024, 256, 128, 4):
        text += (
            f"\nplan p{n} for digits {{\n  roles worker[{n}]\n  topology hierarchy(fanout: 4)\n}}\n"
        )
    path = folder / "big.alpha"
    path.write_text(text)
    return path


def sha_of(output: str) -> str:
    found = re.search(r"parameters sha256 ([0-9a-f]{64})", output)
    assert found is not None, output
    return found.group(1)


def test_a_1024_role_plan_builds_whole_each_role_with_its_own_schedule(tmp_path: Path) -> None:
    source = big_source(tmp_path)
    out = tmp_path / "p1024"
    proc = cli("build", str(source), "--plan", "p1024", "-o", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    built = json.loads(proc.stdout)["executables"]
    assert len(built) == 1024
    assert len({e["sha256"] for e in built}) == 1024  # each its own table
    assert sum(e["size"] for e in built) < 300 * 10**6
    plan, _, _ = Workspace().analyze_file(str(source)).plan("p1024")
    assert plan is not None
    for index in (0, 5, 341, 1023):  # the root, an inner role, a deep one, the last leaf
        code, events, err = run_exe(built[index]["path"], "--describe")
        assert code == 0, err
        [role] = events
        assert (role["role"], role["index"]) == (built[index]["role"], index)
        mine = project(plan, index)
        assert [k["peer"] for k in role["links"]] == [k.peer_name for k in mine.links]
        assert [k["accept"] for k in role["links"]] == [k.accept for k in mine.links]
    # the human form says it in a line, not a line per role
    again = cli("build", str(source), "--plan", "p1024", "-o", str(out))
    assert again.returncode == 0, again.stderr
    assert len(again.stdout.splitlines()) == 2, again.stdout
    assert "built 1,024 executables" in again.stdout


def test_a_role_table_that_is_not_whole_is_refused_at_start_up(tmp_path: Path) -> None:
    source = big_source(tmp_path)
    plan, _, _ = Workspace().analyze_file(str(source)).plan("p4")
    assert plan is not None
    result = build_plan(plan, None, tmp_path / "out", Deployment(port_base=free_port_base(4)))
    exe = Path(result.executables[1].path)
    image = exe.read_bytes()
    offset, room = role_table.table_place(image)
    assert room >= role_table.MIN_ROOM and image[offset : offset + 8] == role_table.MAGIC

    def refused(content: bytes, name: str) -> str:
        path = tmp_path / name
        path.write_bytes(content)
        path.chmod(0o755)
        code, events, _ = run_exe(str(path))
        assert code != 0 and events[-1]["event"] == "refused", events
        assert events[-1]["name"] == "program-invalid", events
        return str(events[-1]["message"])

    # a byte of its payload changed: its digest no longer matches
    flipped = bytearray(image)
    flipped[offset + role_table.HEADER_BYTES + 2] ^= 0x01
    assert "SHA-256" in refused(bytes(flipped), "flipped")
    # the kind's template, never written: no role at all
    blank = bytearray(image)
    blank[offset + 8 : offset + room] = bytes(room - 8)
    assert "template" in refused(bytes(blank), "template")
    # a length past its room
    long = bytearray(image)
    long[offset + 12 : offset + 16] = (room * 2).to_bytes(4, "little")
    assert "length" in refused(bytes(long), "long")


def test_the_summary_names_the_slowest_and_every_refused_role() -> None:
    roles = [f"worker[{i}]" for i in range(MANY_ROLES + 4)]
    state = RunState(roles, 10)
    for i, role in enumerate(roles):
        state.apply(role, {"event": "start", "leaves": 4})
        state.apply(role, {"event": "step", "step": 3 + i % 5, "loss": 0.5})
    state.apply("worker[7]", {"event": "refused", "name": "peer-lost", "message": "gone"})
    s = summarize(state)
    assert s.counts["refused"] == 1 and s.counts["running"] == len(roles) - 1
    assert s.slowest == "worker[0]" and s.slowest_round == 3 and s.fastest_round == 7
    assert [(r.role, r.name) for r in s.refused] == [("worker[7]", "peer-lost")]
    n = len(roles)
    assert s.line() == f"{n} roles: {n - 1} running, 1 refused · rounds 3-7 of 10 · loss 0.500000"
    assert s.slowest_line() == "slowest worker[0] at round 3"


def test_256_roles_run_over_loopback_to_the_single_process_bits(tmp_path: Path) -> None:
    source = big_source(tmp_path)
    single = cli("run", str(source), "--steps", STEPS, "-o", str(tmp_path / "single"))
    assert single.returncode == 0, single.stderr
    started = time.monotonic()
    proc = cli("run", str(source), "--plan", "p256", "--steps", STEPS, "-o", str(tmp_path / "run"))
    took = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sha_of(proc.stdout) == sha_of(single.stdout)
    # one summary line, a bar and the slowest role: no bar per role
    assert f"256 roles: 256 done · round {STEPS} of {STEPS}" in proc.stderr, proc.stderr
    assert "slowest worker[" in proc.stderr
    assert sum("worker[" in line for line in proc.stderr.splitlines()) <= 2, proc.stderr
    assert "256 finished: worker[0] … worker[255]" in proc.stdout
    print(f"256 roles, {STEPS} steps, built and run in {took:.1f} s")


async def until(pilot: Pilot[None], done: object, what: str, seconds: float = 300) -> None:
    assert callable(done)
    start = time.monotonic()
    while not done():
        assert time.monotonic() - start < seconds, f"timed out waiting for {what}"
        await pilot.pause(0.1)


@pytest.mark.asyncio
async def test_256_roles_run_in_alpha_tui_with_a_summary_above_a_scrolling_table(
    tmp_path: Path,
) -> None:
    source = big_source(tmp_path)
    single = cli("run", str(source), "--steps", STEPS, "-o", str(tmp_path / "single"))
    assert single.returncode == 0, single.stderr
    app = AlphaTui(str(source), plan="p256", steps=int(STEPS))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("r")
        await until(pilot, lambda: app.result is not None, "the run to end")
        assert app.result is not None and app.result.ok, app.result
        assert app.result.params_sha256 == sha_of(single.stdout)
        await pilot.pause(0.3)
        summary = app.query_one("#summary")
        assert not summary.has_class("hidden")
        shown = str(summary.render())
        assert f"256 roles: 256 done · round {STEPS} of {STEPS}" in shown, shown
        table = app.query_one("DataTable")
        assert table.row_count == 256  # type: ignore[attr-defined]
        assert table.virtual_size.height > table.size.height  # it scrolls
        assert str(table.get_cell("worker[255]", "state")) == "done"  # type: ignore[attr-defined]


def test_a_build_of_every_role_matches_a_role_built_alone(tmp_path: Path) -> None:
    source = big_source(tmp_path)
    plan, _, _ = Workspace().analyze_file(str(source)).plan("p256")
    assert plan is not None
    d = Deployment(port_base=free_port_base(256))
    whole = build_plan(plan, None, tmp_path / "all", d)
    for index in (0, 1, 85, 255):
        alone = build_plan(plan, None, tmp_path / f"alone-{index}", d, roles=[index])
        assert alone.executables[0].sha256 == whole.executables[index].sha256


@pytest.fixture(scope="module")
def four_hosts() -> Iterator[Network]:
    """Four network namespaces joined by a bridge (test_multihost.py's Network), in a subnet
    of their own so that test_multihost's hosts may exist beside them."""
    net = Network(secrets.token_hex(3), hosts=4, subnet="10.78.0")
    try:
        net.up()
        yield net
    finally:
        net.down()


def test_128_roles_over_four_hosts_end_with_the_single_process_bits(
    four_hosts: Network, tmp_path: Path
) -> None:
    """Role i on host i mod 4 + 1, so that nearly every link of the tree crosses hosts; each
    role listens on its own host's address and dials only its own links."""
    source = big_source(tmp_path)
    single = cli("run", str(source), "--steps", STEPS, "-o", str(tmp_path / "single"))
    assert single.returncode == 0, single.stderr
    plan, _, _ = Workspace().analyze_file(str(source)).plan("p128")
    assert plan is not None
    plan = overridden(plan, Choice(plan="p128", steps=int(STEPS)))
    roles = [plan.membership.name_of(i) for i in range(plan.membership.total)]
    spread = [i % 4 + 1 for i in range(len(roles))]
    hosts = parse_hosts(hosts_text(roles, spread, four_hosts), str(tmp_path / "hosts"))
    d = Deployment(free_port_base(len(roles)), "127.0.0.1", None, 30_000, 30_000, hosts=hosts)
    result = build_plan(plan, None, tmp_path / "build", d)
    out = tmp_path / "out.params"
    commands = [
        (e.role, ["ip", "netns", "exec", four_hosts.ns(h), e.path, "--params-out", str(out)])
        for e, h in zip(result.executables, spread, strict=True)
    ]
    commands = [(role, [*c, "--quiet"]) for role, c in commands]
    outcomes = Launch(commands).wait()
    assert written_sha(outcomes) == sha_of(single.stdout)


def short_source(folder: Path) -> Path:
    """big_source with the system's own `steps` short (deploy has no --steps)."""
    path = big_source(folder)
    path.write_text(path.read_text().replace("steps 300", f"steps {STEPS}"))
    return path


def test_256_roles_deployed_on_slurm_end_with_the_single_process_bits(tmp_path: Path) -> None:
    """The local two-node cluster (tests/slurm_cluster.py) with 128 task slots a node: 256
    roles placed 128 a node, copied with sbcast, started by one srun --multi-prog."""
    source = short_source(tmp_path)
    single = cli("run", str(source), "-o", str(tmp_path / "single"))
    assert single.returncode == 0, single.stderr
    with slurm_cluster(tmp_path / "slurm", cpus=128) as cluster:
        proc = cluster.cli(
            "deploy", "slurm", str(source), "--plan", "p256",
            "--node-dir", str(cluster.folder / "local"),
            "--port-base", str(free_port_base(256, NODES["n1"])), "--timeout-ms", "60000",
            "--ntasks-per-node", "128", "--json",
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        body = json.loads(proc.stdout)
        assert body["ok"]
        roles = body["roles"]
        assert len(roles) == 256
        assert {r["node"] for r in roles} == set(NODES)
        [sha] = {r["params_sha256"] for r in roles if r["params_sha256"]}
        assert sha == sha_of(single.stdout)
        assert cluster.jobs() == []
        timings = body["timings"]
        print(f"slurm, 256 roles: {json.dumps(timings)}")


def test_a_1024_role_jobset_is_valid_against_the_schemas(tmp_path: Path) -> None:
    source = short_source(tmp_path)
    into = tmp_path / "k8s"
    proc = cli(
        "deploy", "k8s", str(source), "--plan", "p1024", "--image", IMAGE, "-o", str(into)
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "1,022 more pods" in proc.stdout and len(proc.stdout.splitlines()) == 4
    for name in ("jobset.yaml", "service.yaml", "secret.yaml"):
        assert k8s_errors(k8s_load(into, name)) == [], name
    jobset = k8s_load(into, "jobset.yaml")
    assert len(jobset["spec"]["replicatedJobs"]) == 1024
    # under the 1.5 MiB a Kubernetes API server stores in one object by default (etcd)
    assert (into / "jobset.yaml").stat().st_size < 1_500_000
    assert len((into / "hosts").read_text().splitlines()) >= 1024


def test_roles_of_a_launch_map_one_copy_of_the_parsed_rows(tmp_path: Path) -> None:
    """Four roles on this machine: one parses digits.csv and writes its rows to the launch's
    folder in /dev/shm, and every role maps that one file read-only instead of holding rows of
    its own; the folder goes with the launch. The bits are those of roles parsing their own."""
    source = big_source(tmp_path)
    text = source.read_text().replace("steps 300", "steps 100000")  # still running when looked at
    source.write_text(text)
    plan, _, _ = Workspace().analyze_file(str(source)).plan("p4")
    assert plan is not None
    result = build_plan(plan, None, tmp_path / "out", Deployment(port_base=free_port_base(4)))
    stepped: set[str] = set()

    def on_event(role: str, event: dict[str, object]) -> None:
        if event.get("event") == "step":
            stepped.add(role)

    launch = Launch(
        [(e.role, [e.path, "--step-every", "100"]) for e in result.executables], on_event
    )
    try:
        deadline = time.monotonic() + 120
        while len(stepped) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(stepped) == 4
        rows = launch._rows
        assert rows is not None and rows.startswith("/dev/shm/")
        [shared] = [p for p in Path(rows).iterdir() if not p.name.endswith(".staged")]
        assert oct(shared.stat().st_mode & 0o777) == "0o600"
        for e in result.executables:
            pid = launch.pid(e.role)
            assert pid is not None
            maps = Path(f"/proc/{pid}/maps").read_text()
            [line] = [m for m in maps.splitlines() if m.endswith(str(shared))]
            assert line.split()[1].startswith("r--s"), line  # read-only, shared
    finally:
        launch.stop()
    assert not Path(rows).exists()


def test_refused_roles_of_a_large_run_are_named_once_and_counted(tmp_path: Path) -> None:
    """Every one of 64 roles refuses at start-up (a CPU level no executable carries): the
    live view names the first few as they are refused, the summary counts them, and the
    report gives each refusal name once with the number of roles it stopped."""
    source = big_source(tmp_path)
    source.write_text(
        source.read_text()
        + "\nplan p64 for digits {\n  roles worker[64]\n  topology hierarchy(fanout: 4)\n}\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "alpha_cli.main", "run", str(source), "--plan", "p64"]
        + ["--steps", STEPS, "-o", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "COLUMNS": "200", "ALPHA_CPU_LEVEL": "x86-64-v9"},
    )
    assert proc.returncode != 0
    named = [line for line in proc.stderr.splitlines() if line.startswith("refused worker[")]
    assert 1 <= len(named) <= 8, proc.stderr
    assert f"64 roles: 64 refused · round 0 of {STEPS}" in proc.stderr
    [report] = [line for line in proc.stderr.splitlines() if line.startswith("error[")]
    assert report.startswith("error[cpu-level-unsupported]") and "(and 63 more roles)" in report


def test_roles_without_shared_rows_parse_only_the_rows_their_leaves_read(tmp_path: Path) -> None:
    """Roles started without the launch's folder (as Slurm or Kubernetes start them) parse the
    training rows their own leaves read over the run, and the held-out rows, and no others:
    each of 64 roles computes 16 leaves of one example for 6 rounds, at most 96 of 1,500
    training rows. The bits are the single process's."""
    source = big_source(tmp_path)
    source.write_text(
        source.read_text()
        + "\nplan p64 for digits {\n  roles worker[64]\n  topology hierarchy(fanout: 4)\n}\n"
    )
    single = cli("run", str(source), "--steps", STEPS, "-o", str(tmp_path / "single"))
    assert single.returncode == 0, single.stderr
    plan, _, _ = Workspace().analyze_file(str(source)).plan("p64")
    assert plan is not None
    plan = overridden(plan, Choice(plan="p64", steps=int(STEPS)))
    result = build_plan(plan, None, tmp_path / "out", Deployment(port_base=free_port_base(64)))
    out = tmp_path / "out.params"
    commands = [
        (e.role, ["env", "-u", "ALPHA_SHARED_ROWS_DIR", e.path, "--params-out", str(out)])
        for e in result.executables
    ]
    outcomes = Launch(commands, keep_events=True).wait()
    assert written_sha(outcomes) == sha_of(single.stdout)
    holdout = plan.system.data.holdout
    for o in outcomes:
        [data] = [e for e in o.events if e["event"] == "data"]
        assert data["shared"] is False and data["rows"] == plan.system.data.rows
        assert holdout < int(str(data["parsed"])) <= holdout + 16 * int(STEPS), data
