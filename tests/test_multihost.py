"""Roles on separate hosts: every role listens on its own address from a hosts file
(`--hosts`), and every link dials the peer's own address.

The hosts are real network namespaces, each with its own network stack, loopback and address
in 10.77.0.0/24, joined by veth links to a bridge in a namespace of its own (so the machine's
own network is never touched), the third behind a 50 Mbit/s cap (a tbf qdisc; netem, for
delay and loss, is not in this kernel); roles are started with `ip netns exec NS ./role`.
The roles of `tree` (8 workers) and of a partitioned plan spread over three hosts end with the
single-process bits; a role killed with SIGKILL on one host makes every other role refuse by
name; a capture resumes on another owner count with another hosts file to the same bits.

Without namespaces, the hosts file's own refusals (with their lines), `alpha run --hosts` over
127.0.0.x addresses and a peer whose name does not resolve (`peer-unresolvable`)."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import cli
from test_partitioned import (  # noqa: F401  (_kernels_once: the autouse fixture)
    SHORT,
    _kernels_once,
    analysis,
    build_single,
    plan_text,
    written_sha,
)

from alpha_core.build.executables import build_plan
from alpha_core.build.hosts_file import HostsRefused, parse_hosts
from alpha_core.build.outputs import Deployment
from alpha_core.checkpoint import read_checkpoint
from alpha_core.run.launch import Launch, RoleOutcome, free_port_base

SUBNET = "10.77.0"
HOSTS = 3


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


@dataclass
class Network:
    """HOSTS namespaces h1.. at 10.77.0.1.., and the bridge's namespace, all named with this
    run's own tag so that a run that crashed before tearing down never blocks the next."""

    tag: str
    hosts: int = HOSTS
    subnet: str = SUBNET

    def ns(self, host: int) -> str:
        return f"alpha-{self.tag}-h{host}"

    @property
    def bridge(self) -> str:
        return f"alpha-{self.tag}-br"

    def address(self, host: int) -> str:
        return f"{self.subnet}.{host}"

    def name(self, host: int) -> str:
        """A host name that only the namespaces' /etc/hosts knows."""
        return f"alpha-{self.tag}-host{host}"

    def etc(self, ns: str) -> Path:
        return Path("/etc/netns") / ns  # `ip netns exec` binds its files over /etc

    def names(self) -> list[str]:
        return [self.bridge, *(self.ns(h) for h in range(1, self.hosts + 1))]

    def up(self) -> None:
        ip("netns", "add", self.bridge)
        ip("-n", self.bridge, "link", "add", "br0", "type", "bridge")
        ip("-n", self.bridge, "link", "set", "br0", "up")
        for h in range(1, self.hosts + 1):
            ns, outer = self.ns(h), f"a{self.tag}{h}"  # interface names hold 15 bytes
            ip("netns", "add", ns)
            ip("link", "add", outer, "type", "veth", "peer", "name", f"b{self.tag}{h}")
            ip("link", "set", outer, "netns", ns)
            ip("link", "set", f"b{self.tag}{h}", "netns", self.bridge)
            ip("-n", ns, "link", "set", outer, "name", "eth0")
            ip("-n", ns, "addr", "add", f"{self.address(h)}/24", "dev", "eth0")
            ip("-n", ns, "link", "set", "eth0", "up")
            ip("-n", ns, "link", "set", "lo", "up")
            if h == self.hosts:  # the last host behind a slower link: a bandwidth cap (tbf)
                tc = ["tc", "-n", ns, "qdisc", "add", "dev", "eth0", "root", "tbf"]
                tc += ["rate", "50mbit", "burst", "64kb", "latency", "50ms"]
                subprocess.run(tc, check=True, capture_output=True, timeout=30)
            ip("-n", self.bridge, "link", "set", f"b{self.tag}{h}", "master", "br0")
            ip("-n", self.bridge, "link", "set", f"b{self.tag}{h}", "up")
            self.etc(ns).mkdir(parents=True, exist_ok=True)
            names = "".join(f"{self.address(k)} {self.name(k)}\n" for k in range(1, self.hosts + 1))
            (self.etc(ns) / "hosts").write_text("127.0.0.1 localhost\n" + names)

    def down(self) -> None:
        """Every process left in the namespaces killed (all were started by this test), then
        the namespaces deleted, which deletes their veth ends and the bridge."""
        for name in self.names():
            pids = subprocess.run(
                ["ip", "netns", "pids", name], capture_output=True, text=True, timeout=30
            ).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), 9)
                except ProcessLookupError:
                    pass
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)
            shutil.rmtree(self.etc(name), ignore_errors=True)
        try:
            Path("/etc/netns").rmdir()  # when no other namespace keeps files there
        except OSError:
            pass


@pytest.fixture(scope="module")
def network() -> Iterator[Network]:
    net = Network(secrets.token_hex(3))
    try:
        net.up()
        yield net
    finally:
        net.down()


def hosts_text(roles: list[str], spread: list[int], net: Network, names: bool = False) -> str:
    """A hosts file putting role i on host spread[i], by address or by host name."""
    lines = [f"# {len(roles)} roles over {len(set(spread))} hosts"]
    for role, h in zip(roles, spread, strict=True):
        lines.append(f"{role} {net.name(h) if names else net.address(h)}")
    return "\n".join(lines) + "\n"


@dataclass
class Placed:
    roles: list[tuple[str, str, int]]  # (role, executable, host)
    folder: Path

    def launch(
        self,
        net: Network,
        *args: str,
        on_event: Callable[[str, dict[str, object]], None] | None = None,
    ) -> Launch:
        """Every role started in its host's namespace; the launcher gives them the secret."""
        out = self.folder / "out.params"
        commands = [
            (role, ["ip", "netns", "exec", net.ns(h), path, "--params-out", str(out), *args])
            for role, path, h in self.roles
        ]
        return Launch(commands, on_event, keep_events=on_event is None)


def build_placed(
    text: str, plan_name: str, spread: list[int], net: Network, folder: Path, names: bool = False
) -> Placed:
    plan, _, diags = analysis(text, folder).plan(plan_name)
    assert plan is not None, diags
    roles = [plan.membership.name_of(i) for i in range(plan.membership.total)]
    hosts = parse_hosts(hosts_text(roles, spread, net, names), str(folder / "hosts"))
    deployment = Deployment(
        free_port_base(len(roles)),
        "127.0.0.1",
        None,
        3000,
        3000,
        checkpoint_dir=str(folder / "checkpoints"),
        hosts=hosts,
    )
    result = build_plan(plan, None, folder / "build", deployment)
    return Placed([(e.role, e.path, spread[i]) for i, e in enumerate(result.executables)], folder)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> str:
    return written_sha(build_single(SHORT, tmp_path_factory.mktemp("single")).run("--quiet"))


@pytest.mark.parametrize("names", [False, True], ids=["addresses", "names"])
def test_tree_over_three_hosts_ends_with_the_single_process_bits(
    network: Network, reference: str, tmp_path: Path, names: bool
) -> None:
    """By address, and by host names that only each namespace's /etc/hosts holds: the static
    executable's own resolver (musl's) reads them at start-up."""
    spread = [1, 1, 2, 2, 2, 3, 3, 3]
    placed = build_placed(SHORT, "tree", spread, network, tmp_path, names)
    outcomes = placed.launch(network, "--quiet").wait()
    assert written_sha(outcomes) == reference


def test_a_partitioned_plan_over_three_hosts_resumes_on_another_owner_count(
    network: Network, reference: str, tmp_path: Path
) -> None:
    """Four owners of partitioned parameters, gradients and optimizer state on three hosts;
    their capture of round 20 resumed by three owners placed otherwise: the same bits."""
    four = build_placed(plan_text(4, "params"), "p", [1, 2, 3, 1], network, tmp_path / "four")
    assert written_sha(four.launch(network, "--quiet").wait()) == reference
    capture = tmp_path / "four" / "checkpoints" / "round-00000020"
    assert {m.role for m in read_checkpoint(capture).manifests()} == {
        f"worker[{w}]" for w in range(4)
    }
    three = build_placed(plan_text(3, "params"), "p", [3, 1, 2], network, tmp_path / "three")
    resumed = three.launch(network, "--quiet", "--resume", str(capture)).wait()
    assert written_sha(resumed) == reference
    rounds = {int(str(e["round"])) for o in resumed for e in o.events if e["event"] == "resumed"}
    assert rounds == {20}


PEER_NAMES = {"peer-lost", "peer-timeout", "peer-unreachable"}


def test_a_role_killed_on_one_host_makes_the_others_refuse_by_name(
    network: Network, tmp_path: Path
) -> None:
    """worker[5] (on host 3) killed with SIGKILL after its third round: every other role, on
    every host, ends with a named refusal of a lost or silent peer (its deadline is 3 s),
    and no parameters are written."""
    long = SHORT.replace("steps 40", "steps 5000")  # far more rounds than a pipe holds events
    placed = build_placed(long, "tree", [1, 1, 2, 2, 2, 3, 3, 3], network, tmp_path)
    victim = "worker[5]"
    started: list[Launch] = []
    ready = threading.Event()

    def watch(role: str, event: dict[str, object]) -> None:
        if role == victim and event.get("event") == "step" and event.get("step") == 3:
            ready.wait()  # the victim blocks on its full pipe meanwhile, at most
            started[0].kill(victim)

    launch = placed.launch(network, on_event=watch)
    started.append(launch)
    ready.set()
    outcomes: dict[str, RoleOutcome] = {o.role: o for o in launch.wait()}
    assert launch.killed == {victim}
    for role, o in outcomes.items():
        if role == victim:
            continue
        assert o.exit_code != 0 and o.refusal in PEER_NAMES, (role, o.refusal, o.message)
    named = " ".join(str(o.message) for o in outcomes.values())
    assert victim in named  # its neighbours name it
    assert not (tmp_path / "out.params").exists()


# ---- without namespaces: the hosts file's refusals, and 127.0.0.x addresses ----


def _source(tmp_path: Path) -> Path:
    path = tmp_path / "digits.alpha"
    path.write_text(SHORT)
    return path


TREE = [f"worker[{w}]" for w in range(8)]


def test_the_hosts_file_refusals_show_their_lines(tmp_path: Path) -> None:
    source = _source(tmp_path)
    bad = tmp_path / "bad.hosts"
    bad.write_text(
        "worker[0] 127.0.0.2\n"
        "worker[1] 127.0.0.2:99999\n"
        "worker[0] [fd00::1]:29000  # again\n"
        "worker[2] 10.0.0.1 extra\n"
    )
    proc = cli("build", str(source), "--plan", "tree", "--hosts", str(bad), "-o", str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    assert "error[hosts-malformed]: port `99999` is not 1 to 65535" in proc.stderr
    assert f"--> {bad}:2:11" in proc.stderr
    assert "error[hosts-duplicate]: role `worker[0]` is given twice" in proc.stderr
    assert f"--> {bad}:3:1" in proc.stderr and "first given here" in proc.stderr
    assert f"--> {bad}:4:1" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "worker-0").exists()

    short = tmp_path / "short.hosts"
    short.write_text("worker[0] 127.0.0.2\nworker[9] 127.0.0.3\n")
    proc = cli("build", str(source), "--plan", "tree", "--hosts", str(short), "--json")
    body = json.loads(proc.stdout)
    assert proc.returncode == 1 and body["file"] == str(short)
    names = [(r["name"], (r["span"] or {}).get("line")) for r in body["refusals"]]
    assert names == [("hosts-unknown-role", 2), ("hosts-incomplete", None)]
    assert "worker[1], worker[2]" in body["refusals"][1]["message"]


def test_hosts_parse_addresses_of_every_form() -> None:
    text = "a 10.0.0.1\nb 10.0.0.2:81  # x\nc [fd00::1]:82\nd fd00::2\ne node-b.local:83\n"
    got = [(e.role, e.host, e.port) for e in parse_hosts(text, "f").entries]
    assert got == [
        ("a", "10.0.0.1", None),
        ("b", "10.0.0.2", 81),
        ("c", "fd00::1", 82),
        ("d", "fd00::2", None),
        ("e", "node-b.local", 83),
    ]
    for line in ("a [10.0.0.1]:80", "a [fd00::1", "a bad_name", "a 1.2.3.4:0", "worker[x] h"):
        with pytest.raises(HostsRefused) as refused:
            parse_hosts(line + "\n", "f")
        assert [d.name for d in refused.value.diagnostics] == ["hosts-malformed"], line


def test_alpha_run_hosts_over_loopback_addresses(tmp_path: Path, reference: str) -> None:
    """Each role on its own 127.0.0.x address, one by name (localhost, from /etc/hosts, read
    by the static executable's own resolver) and one over IPv6."""
    source = _source(tmp_path)
    hosts = tmp_path / "tree.hosts"
    where = ["127.0.0.2", "127.0.0.2", "127.0.0.3", "localhost", "[::1]", "127.0.0.4"]
    where += ["127.0.0.5", "127.0.0.5"]
    hosts.write_text("".join(f"{r} {h}\n" for r, h in zip(TREE, where, strict=True)))
    proc = cli("run", str(source), "--plan", "tree", "--hosts", str(hosts), "--json")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    body = json.loads(proc.stdout)
    [sha] = {r["params_sha256"] for r in body["roles"] if r["params_sha256"]}
    assert sha == reference


def test_a_peer_whose_name_never_resolves_is_refused_by_name(tmp_path: Path) -> None:
    source = _source(tmp_path)
    hosts = tmp_path / "tree.hosts"
    where = ["127.0.0.2"] * 8
    where[2] = "nowhere.invalid"  # RFC 2606: never a real name; worker[3] dials worker[2]
    hosts.write_text("".join(f"{r} {h}\n" for r, h in zip(TREE, where, strict=True)))
    proc = cli(
        "run", str(source), "--plan", "tree", "--hosts", str(hosts), "--timeout-ms", "1500",
        "--json",
    )  # fmt: skip
    assert proc.returncode == 1
    roles = {r["role"]: r for r in json.loads(proc.stdout)["roles"]}
    assert roles["worker[3]"]["refusal"] == "peer-unresolvable"
    assert "cannot resolve nowhere.invalid, the host of worker[2]" in roles["worker[3]"]["message"]
    assert roles["worker[2]"]["refusal"] == "listen-failed"
    assert all(r["refusal"] for r in roles.values())


@pytest.mark.asyncio
async def test_alpha_tui_runs_with_hosts_and_shows_each_roles_host(
    tmp_path: Path, reference: str
) -> None:
    from test_tui import SIZE, until

    from alpha_tui.app import AlphaTui

    source = _source(tmp_path)
    hosts = tmp_path / "tree.hosts"
    where = ["127.0.0.2"] * 4 + ["127.0.0.3"] * 4
    hosts.write_text("".join(f"{r} {h}\n" for r, h in zip(TREE, where, strict=True)))
    app = AlphaTui(str(source), plan="tree", hosts=str(hosts))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("r")
        await until(pilot, lambda: app.result is not None, "the run to end")
        assert app.result is not None and app.result.ok, app.result
        assert app.result.params_sha256 == reference
        table = app.query_one("DataTable")
        assert table.get_cell("worker[5]", "role") == "worker[5] @ 127.0.0.3"  # type: ignore[attr-defined]
        assert table.get_cell("worker[0]", "role") == "worker[0] @ 127.0.0.2"  # type: ignore[attr-defined]
