"""`alpha deploy slurm` from the command to the first round, and each role's start-up latency,
on a real Slurm cluster of two slurmd nodes on this host (tests/slurm_cluster.py).

    python bench/deploy.py [--repeats R] [--json OUT]

Alpha: `alpha deploy slurm examples/digits.alpha --plan star --ntasks-per-node 3 --json`
(5 roles over n1 and n2), timed from the moment the command is started. The command reports
its phases from its own start (after Python's start-up and the analysis): the allocation
(`salloc --no-shell`), the build for the nodes' addresses, the `sbcast` copies, the job step
started (`srun`), each role's `start` event (its start-up latency: from srun being started to
the role running its own main) and the first round (the first `step` event of any role).

Peer: the same 5 roles started by hand on an allocation with `srun --multi-prog` (the
executables already built and on the nodes, the allocation already held: what a user who did
everything alpha does by hand would still wait for), timed from srun's start to the first
`step` event; and `srun` of `/bin/true` on 5 tasks, Slurm's own launch time. Best of R.
This is a benchmark, never a test.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from slurm_cluster import ROOT, Cluster, slurm_cluster  # noqa: E402

from alpha_core.run.launch import free_port_base  # noqa: E402

SOURCE = ROOT / "examples" / "digits.alpha"


def alpha_once(cluster: Cluster) -> dict[str, float]:
    argv = [sys.executable, "-m", "alpha_cli.main", "deploy", "slurm", str(SOURCE)]
    argv += ["--plan", "star", "--ntasks-per-node", "3", "--json"]
    argv += ["--node-dir", str(cluster.folder / "local")]
    argv += ["--port-base", str(free_port_base(8, "127.0.0.2"))]
    begun = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=cluster.env, cwd=ROOT)
    total = time.monotonic() - begun
    body = json.loads(proc.stdout)
    assert body["ok"], proc.stdout[-1500:] + proc.stderr[-1500:]
    timings, started = body["timings"], body["role_started"]
    # the command's own clock starts after Python's start-up and the analysis: that part is
    # the whole run's wall time less what the command measured to its end
    before = total - timings["ended"]
    latency = [v - timings["started"] for v in started.values()]
    return {
        "to_first_round_s": before + timings["first_round"],
        "startup_and_analysis_s": before,
        "allocation_s": timings["allocated"],
        "build_s": timings["built"] - timings["allocated"],
        "sbcast_s": timings["copied"] - timings["built"],
        "role_start_min_ms": 1000 * min(latency),
        "role_start_max_ms": 1000 * max(latency),
        "total_s": total,
    }


def peer_once(cluster: Cluster, work: Path) -> dict[str, float]:
    """srun --multi-prog of prebuilt executables on a held allocation, and srun /bin/true."""
    env = cluster.env
    port = free_port_base(8, "127.0.0.2")
    hosts = work / "hosts"
    hosts.write_text(
        f"hub 127.0.0.2:{port}\n"
        + "".join(f"worker[{w}] 127.0.0.{2 if w < 2 else 3}:{port + 1 + w}\n" for w in range(4))
    )
    build = work / "build"
    secret = work / "secret"
    secret.write_bytes(bytes(range(32)))
    secret.chmod(0o600)
    subprocess.run(
        [sys.executable, "-m", "alpha_cli.main", "build", str(SOURCE), "--plan", "star",
         "--hosts", str(hosts), "--secret-file", str(secret), "-o", str(build)],
        check=True, capture_output=True, cwd=ROOT, env=env,
    )  # fmt: skip
    got = subprocess.run(
        ["salloc", "--no-shell", "-n", "5", "--ntasks-per-node", "3"],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    match = re.search(r"allocation (\d+)", got.stderr)
    assert match, got.stderr
    job = match.group(1)
    try:
        names = ["hub", *(f"worker-{w}" for w in range(4))]
        conf = work / "roles.conf"
        conf.write_text("".join(f"{t} {build / n}\n" for t, n in enumerate(names)))
        hostfile = work / "hostfile"
        hostfile.write_text("n1\nn1\nn1\nn2\nn2\n")
        step_env = {**env, "SLURM_HOSTFILE": str(hostfile)}
        begun = time.monotonic()
        srun = subprocess.Popen(
            ["srun", "--jobid", job, "-n", "5", "--distribution=arbitrary", "--label",
             "--multi-prog", str(conf)],
            stdout=subprocess.PIPE, text=True, env=step_env,
        )  # fmt: skip
        first = 0.0
        assert srun.stdout is not None
        for line in srun.stdout:
            if '"event":"step"' in line and not first:
                first = time.monotonic() - begun
        srun.wait()
        begun = time.monotonic()
        subprocess.run(["srun", "--jobid", job, "-n", "5", "/bin/true"], check=True, env=env)
        true_s = time.monotonic() - begun
    finally:
        subprocess.run(["scancel", job], env=env)
    return {"by_hand_to_first_round_s": first, "srun_true_s": true_s}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="alpha-bench-deploy-") as tmp:
        with slurm_cluster(Path(tmp) / "cluster") as cluster:
            runs = [alpha_once(cluster) for _ in range(args.repeats)]
            peers = []
            for r in range(args.repeats):
                work = Path(tmp) / f"peer-{r}"
                work.mkdir()
                peers.append(peer_once(cluster, work))
    best = {k: min(r[k] for r in runs) for k in runs[0]}
    best.update({k: min(r[k] for r in peers) for k in peers[0]})
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"load {' '.join(load)}; best of {args.repeats}")
    for key, value in best.items():
        print(f"  {key:28} {value:9.3f}")
    print(
        f"  alpha deploy to first round / by-hand srun to first round: "
        f"{best['to_first_round_s'] / best['by_hand_to_first_round_s']:.1f}x"
    )
    if args.json:
        Path(args.json).write_text(json.dumps({"best": best, "runs": runs, "peers": peers}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
