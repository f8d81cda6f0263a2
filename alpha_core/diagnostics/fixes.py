"""For each compile-time refusal's example in the registry, the edit that fixes it, and for
each refusal that happens when an executable runs, what its message looks like and what to
do. `alpha explain` shows both; tests check that every example is refused as the registry
says and that every fixed version checks clean with the real checker.

A fix is an edit of the example (its old text and the new), not a second copy of it, so an
example changed in the registry either still takes its fix or the test names it.
"""

from __future__ import annotations

from alpha_core.diagnostics.registry import COMPILE, REGISTRY, Refusal, _tiny

_PAIR = "topology pair"

FIXES: dict[str, tuple[str, str]] = {
    "syntax-error": ("return x @ w +\n", "return x @ w + b\n"),
    "unknown-name": ("x @ w + bias", "x @ w + b"),
    "duplicate-name": (
        "  param b: f32[3] = zeros\n  param b: f32[3] = zeros\n",
        "  param b: f32[3] = zeros\n",
    ),
    "shape-mismatch": ("return x @ b\n", "return x @ w + b\n"),
    "type-mismatch": ("param w: i64[4, 3]", "param w: f32[4, 3]"),
    "device-in-semantics": (", rank: 0)", ")"),
    "missing-item": ("  steps 10\n", "  learner sgd(lr: 0.1)\n  steps 10\n"),
    "bad-argument": ("sgd(rate: 0.1)", "sgd(lr: 0.1)"),
    "batch-not-divisible": ("batch 8 leaves 3", "batch 8 leaves 2"),
    "batch-axis-reduced": (" - mean(x @ w, axis: 0)", ""),
    "data-unreadable": (
        'table("no/such/file.csv", features: 4, label: last, classes: 3, holdout: 8)',
        "synthetic(rows: 64, features: 4, classes: 3, seed: 1)",
    ),
    "topology-mismatch": ("roles worker[3]", "roles worker[2]"),
    "fanout-exceeded": ("hierarchy(fanout: 1000)", "hierarchy(fanout: 2)"),
    "combine-order-changed": ("combine grad by arrival", "combine grad by canonical tree"),
    "leaves-uncovered": ("worker[0]: 0..1,", "worker[0]: 0..2,"),
    "leaves-overlap": ("worker[0]: 0..3,", "worker[0]: 0..2,"),
    "role-without-leaves": ("roles worker[4]", "roles worker[2]"),
    "pairing-incomplete": ("  worker[0]: host x86_64\n", "  worker[*]: host x86_64\n"),
    "pairing-overlap": ("  worker[1]: host aarch64\n", ""),
    "unsupported-on-target": (", gpu h200", ""),
    "not-built-yet": ("contract approximate(tolerance: 0.001)", "contract exact"),
    "second-authority": (
        "state { params partitioned over worker }",
        "state { params partitioned over worker\n    optimizer partitioned over worker }",
    ),
    "unowned-state": ("optimizer partitioned }", "optimizer partitioned over worker }"),
    "partition-coverage": ("roles worker[3]", "roles worker[2]"),
    "memory-admission": ("memory 1 mib", "memory 1 gib"),
    "no-system": ("# an empty file\n", _tiny().replace("x @ w + bias", "x @ w + b")),
}


def fixed_example(r: Refusal) -> str | None:
    """The registry example of `r` with its fix applied; None when it has none, or when the
    example no longer holds the text the fix replaces."""
    fix = FIXES.get(r.name)
    if r.example is None or fix is None or fix[0] not in r.example:
        return None
    return r.example.replace(fix[0], fix[1], 1)


# Refusals an executable gives while it runs: a message as a user meets it, and what to do.
ADVICE: dict[str, tuple[str, str]] = {
    "peer-lost": (
        "error[peer-lost]: worker[1] (127.0.0.1:40113) closed its connection in round 4812",
        "A peer ended mid-run: it was killed, crashed (its own refusal says why) or its host "
        "went away. Restart every role with `--resume` on the checkpoint folder to continue "
        "from the newest published capture; give the plan a `checkpoint every N rounds` item "
        "so that there is one.",
    ),
    "role-crashed": (
        "error[role-crashed]: worker[1] was killed by signal 9 (SIGKILL) and no named refusal",
        "The process ended without saying why: a signal (the OOM killer sends SIGKILL; "
        "`dmesg` says so), or a crash of the runtime, which is a bug to report with the "
        "executable and its input. Its peers then refuse `peer-lost`; resume as for that.",
    ),
    "peer-unreachable": (
        "error[peer-unreachable]: cannot connect to worker[0] at 127.0.0.1:40112 within "
        "10000 ms: Connection refused",
        "Start every role of the launch (alpha run and alpha-tui start them together), check "
        "the addresses (`--host`, `--hosts`) and that no firewall drops the ports; raise "
        "`--timeout-ms` when roles start slowly.",
    ),
    "peer-timeout": (
        "error[peer-timeout]: no piece from worker[1] (127.0.0.1:40113) in round 12 within "
        "10000 ms",
        "A peer is alive but silent: overloaded, stopped (SIGSTOP) or behind a broken "
        "network. Raise `--timeout-ms` for slow machines; otherwise resume once it is fixed.",
    ),
    "listen-failed": (
        "error[listen-failed]: cannot listen on 127.0.0.1:40113: Address already in use",
        "Another process holds the port: choose another `--port-base` (alpha run picks "
        "free ports when none is given) or end the older run.",
    ),
    "checkpoint-incomplete": (
        "error[checkpoint-incomplete]: no published capture at ckpt (no top.pack, "
        "no round-<R> folder)",
        "Only a published capture can be resumed from: run with a `checkpoint every N "
        "rounds` item (or `--checkpoint-every N` without a plan) until one is published, then "
        "resume on that folder.",
    ),
    "data-missing": (
        "error[data-missing]: data file data/digits.csv does not exist",
        "The executable reads the data path compiled in (or `--data PATH`): copy the file "
        "there, or pass where it is now.",
    ),
    "out-of-memory": (
        "error[out-of-memory]: cannot allocate 2147483648 x 4 bytes for the parameters",
        "The machine has less memory than the build admitted against: pair the role with "
        "the host's real `memory`, or partition state over more roles.",
    ),
    "data-digest-mismatch": (
        "error[data-digest-mismatch]: data file data/digits.csv has 233,120 bytes, but the "
        "program was built for a file of 233,009 bytes (sha256 6f2a…)",
        "The executable was built for one data file, digest and all, and refuses any other "
        "before it writes anything. Rebuild with the file you mean (`alpha build` reads it "
        "again), or put the original back.",
    ),
    "plan-identity-mismatch": (
        "error[plan-identity-mismatch]: the connection from 127.0.0.1:50112 says it is "
        "worker[1] and runs plan identity 91c4…, but worker[0] runs 3e07…: both must be built "
        "from the same system and plan",
        "Every role of a launch must come from one build of one file: rebuild every role "
        "together (`alpha build --plan P`) and start them all from that folder.",
    ),
    "checkpoint-identity-mismatch": (
        "error[checkpoint-identity-mismatch]: checkpoint ckpt/round-00000200 is of system "
        "identity 1bd3…, but this executable runs system first, identity 77a0…",
        "A capture resumes only the system it was made by: anything that changes what is "
        "computed (a step count, a plan's state layout, the data) makes another system. "
        "Resume with the build that wrote it, or start fresh without --resume.",
    ),
    "checkpoint-folder-foreign": (
        "error[checkpoint-folder-foreign]: ckpt is not a capture of this system (identity "
        "1bd3e7c897ca2322) and is left as it is: it holds round-00000100 of identity 77a0…; "
        "this run would publish over it (use another --checkpoint-dir)",
        "Give this run a checkpoint folder of its own (`--checkpoint-dir`), or move the old "
        "captures away if they are no longer needed.",
    ),
    "peer-unauthenticated": (
        "error[peer-unauthenticated]: worker[0] (127.0.0.1:29000) answered without proof of "
        "this launch's secret (its HELLO's proof does not verify): it is not a role of this "
        "launch",
        "Another run (or a stranger) holds the port this role dialled: start the roles of one "
        "launch together (alpha run and alpha-tui give them one secret), and give two runs on "
        "one machine different `--port-base`s.",
    ),
    "launch-failed": (
        "error[launch-failed]: cannot start worker[1]: qemu-aarch64 is not installed",
        "Install the emulator (`apt-get install qemu-user`) to run an AArch64 role here, or "
        "pair the role with this machine's instruction set.",
    ),
    "gpu-driver-missing": (
        "error[gpu-driver-missing]: cannot load the NVIDIA driver (libcuda.so.1): "
        "libcuda.so.1: cannot open shared object file: No such file or directory; a GPU role "
        "needs the NVIDIA kernel driver and nothing else from CUDA",
        "Run GPU roles on a machine with the NVIDIA driver, pair the role with a host, or "
        "build with `--gpu-shadow` to run the GPU code path on the host as a control.",
    ),
}


def runtime_names() -> list[str]:
    """Refusals that are not found at compile time."""
    return sorted(n for n, r in REGISTRY.items() if r.moment != COMPILE)
