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
    "block-index-not-constant": ("@ layers[b].w", "@ layers[1].w"),
    "block-index-out-of-range": ("layers[i + 1].w", "layers[i].w"),
    "block-shape-mismatch": ("step(x @ w + b, other[0])", "step(x @ w + b, layers[0])"),
    "seed-collision": (
        "    w: f32[3, 3] = normal(0.0, 0.1, seed: 1)\n",
        "    w: f32[3, 3] = normal(0.0, 0.1, seed: 5)\n",
    ),
    "batch-axis-reduced": (" - mean(x @ w, axis: 0)", ""),
    "system-too-large": ("return f14(x @ w)", "return f8(x @ w)"),
    "data-unreadable": (
        'table("no/such/file.csv", features: 4, label: last, classes: 3, holdout: 8)',
        "synthetic(rows: 64, features: 4, classes: 3, seed: 1)",
    ),
    "load-unreadable": ('load("no/such/run.npz", key: "w")', "normal(0.0, 0.1, seed: 1)"),
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
    "data-malformed": (
        "error[data-malformed]: data/digits.csv line 812: 63 columns, expected 65 (64 "
        "features + 1 label)",
        "The file is not the table the system declares: check its columns (features, then "
        "the label) and rows against the `data` item, or rebuild for the file you mean.",
    ),
    "data-bad-header": (
        "error[data-bad-header]: data/digits.npz array `x`: the array is in Fortran order; "
        "save numpy.ascontiguousarray(a) instead",
        "Save the arrays with `numpy.save` / `numpy.savez` from C-ordered arrays; for a table "
        "with `header: true`, make its first line name every column, the label's among them.",
    ),
    "data-wrong-dtype": (
        "error[data-wrong-dtype]: data/x.npy: features of dtype '<f8'; the features may be "
        "'<f4' (float32), '|u1' (uint8), '<u2' (uint16), '<i4' (int32)",
        "Convert before saving: `numpy.save(path, a.astype(numpy.float32))` for features and "
        "targets, an integer type for class labels.",
    ),
    "data-wrong-shape": (
        "error[data-wrong-shape]: data/y.npy: 1500 rows of labels, but 1797 rows of features",
        "Save features as (rows, features…) and labels as (rows,) from the same rows, or give "
        "the `targets:` the labels array holds.",
    ),
    "data-wrong-size": (
        "error[data-wrong-size]: data/x.npy: shape (1797, 64) of '<f4' holds 460032 bytes, but "
        "460000 bytes follow the header",
        "The file was cut short or appended to: write it again with `numpy.save` (or, for "
        "tokens, `array.astype(numpy.uint16).tofile(path)`).",
    ),
    "data-key-missing": (
        "error[data-key-missing]: data/digits.npz has no array `x` (it holds `images`, `labels`)",
        "Name the archive's arrays in the data item (`npz(PATH, x: images, y: labels, ...)`), "
        "or save them as `numpy.savez(path, x=..., y=...)`.",
    ),
    "data-bad-archive": (
        "error[data-bad-archive]: data/digits.npz: array `x` is compressed "
        "(numpy.savez_compressed); save the arrays with numpy.savez",
        "Save the archive uncompressed with `numpy.savez` (the executable reads it in place), "
        "or save each array with `numpy.save` and use `npy(X, Y, ...)`.",
    ),
    "program-invalid": (
        "error[program-invalid]: role worker[2]'s schedule applies elements [0, 4096) of a "
        "program of 2,410 parameters",
        "The executable contradicts itself: it was edited or built by a different compiler. "
        "Rebuild it with `alpha build`; report it if a fresh build says the same.",
    ),
    "predict-input-malformed": (
        "error[predict-input-malformed]: new.csv line 3: 3 columns, expected 2 (the features "
        "of system first; no label)",
        "Give only the features, one row a line, no header: drop the label column the training "
        "data has, or pass a float32 .npy of shape (rows, features).",
    ),
    "params-write-failed": (
        "error[params-write-failed]: cannot rename parameter file out/digits.params: No space "
        "left on device",
        "The run trained but could not publish: free space or choose another `--params-out`; "
        "with a checkpoint folder, `--resume --evaluate-only` recovers the final parameters.",
    ),
    "events-unwritable": (
        "error[events-unwritable]: events could not be written to standard output (broken "
        "pipe: its reader exited); the run went on and wrote its parameters to out.params",
        "Whatever read the role's output went away. The parameters are written; keep the "
        "reader alive (or redirect stdout to a file) to have the events.",
    ),
    "threads-unavailable": (
        "error[threads-unavailable]: cannot start thread 3 of 8: Resource temporarily unavailable",
        "The process may not start that many threads (ulimit -u, a container's pids limit): "
        "lower `--threads`, or raise the limit.",
    ),
    "peer-unresolvable": (
        "error[peer-unresolvable]: cannot resolve node7, the host of worker[3], within 10000 "
        "ms: Name does not resolve",
        "The hosts file names a host this machine cannot resolve: fix the name or give its "
        "address in `--hosts`, and check /etc/hosts or DNS on the machine the role runs on.",
    ),
    "frame-corrupt": (
        "error[frame-corrupt]: frame from worker[1] (127.0.0.1:40113) in round 9: header "
        "checksum 1c9e04aa, computed 5b21f0d3",
        "Bytes were damaged between the roles, or something other than a role is sending on "
        "the link. Check the network path; resume from the newest capture once it is sound.",
    ),
    "frame-version-mismatch": (
        "error[frame-version-mismatch]: frame from worker[1]: frame version 2, this role speaks 3",
        "The roles were built by different versions of Alpha: rebuild every role of the plan "
        "together with one compiler.",
    ),
    "frame-oversize": (
        "error[frame-oversize]: frame from worker[1]: 67,108,864 payload bytes, at most "
        "9,644 allowed",
        "A peer sent more than this program ever sends: a role of another build, or damage "
        "on the link. Rebuild every role together and start them as one launch.",
    ),
    "frame-unexpected": (
        "error[frame-unexpected]: frame from worker[1] in round 12: round index 11 where 12 "
        "was expected",
        "The roles disagree about where the run is: usually roles of two launches, or one "
        "resumed from another capture than the rest. Start every role together, from one "
        "capture.",
    ),
    "role-identity-mismatch": (
        "error[role-identity-mismatch]: 127.0.0.1:50113 says it is worker[2] talking to role "
        "index 1, but this is worker[0] (role index 0)",
        "A role dialled the wrong address: check `--port-base` and `--hosts` so every role "
        "listens where its peers look for it.",
    ),
    "membership-epoch-mismatch": (
        "error[membership-epoch-mismatch]: 127.0.0.1:50113 says it is worker[1] in membership "
        "epoch 1 of 4 roles, but worker[0] is in epoch 1 of 8 roles",
        "The roles come from builds of different plans or owner counts: build every role of "
        "one plan together and start only those.",
    ),
    "frame-forged": (
        "error[frame-forged]: frame from worker[1] (127.0.0.1:40113) in round 7: its MAC is "
        "not that of frame 31 on this link under the link's key",
        "Someone altered or injected a frame on the link (or replayed an old one). Find what "
        "is between the roles; resume from the newest capture on a link you trust.",
    ),
    "secret-missing": (
        "error[secret-missing]: secret file /run/alpha/launch.key does not exist",
        "A role with links needs the launch secret: `alpha run` and alpha-tui pass it by "
        "descriptor; started by hand, give every role the same `--secret-file` (32 bytes, "
        "mode 0600).",
    ),
    "secret-unreadable": (
        "error[secret-unreadable]: secret file launch.key gave 12 of the 32 bytes of a secret",
        "The secret must be exactly 32 bytes, readable by the role and private (mode 0600): "
        "write a fresh one with `head -c 32 /dev/urandom > launch.key; chmod 600 launch.key` "
        "and hand the same file to every role.",
    ),
    "checkpoint-write-failed": (
        "error[checkpoint-write-failed]: cannot write capture pack ckpt/round-00000200/"
        "worker-1.pack: No space left on device",
        "The checkpoint folder cannot take the capture: free space, fix its permissions or "
        "choose another `--checkpoint-dir`; the captures published before are intact.",
    ),
    "checkpoint-malformed": (
        "error[checkpoint-malformed]: checkpoint pack ckpt/round-00000200/worker-1.pack: it "
        'does not end with a pack trailer (a manifest length, its SHA-256 and "ALPHACK3")',
        "The capture was damaged or written by something else: `alpha inspect` the folder, "
        "and resume from an earlier published capture.",
    ),
    "checkpoint-digest-mismatch": (
        "error[checkpoint-digest-mismatch]: checkpoint pack ckpt/round-00000200/worker-1.pack:"
        " its manifest has sha256 9c1e…, but its bytes hash to 04d2…",
        "A pack changed after it was published (disk damage, a partial copy): resume from "
        "an earlier capture (`alpha inspect` lists them), or copy the folder again.",
    ),
    "gpu-not-found": (
        "error[gpu-not-found]: no device has UUID GPU-5f1c0a9e-0000-0000-0000-000000000000; "
        "the driver sees 1: 0 GPU-8d3f2b11-6a4c-4e7f-9a1d-2c5b7e9f0a13",
        "Give a UUID `nvidia-smi -L` lists on this machine (`--gpu-uuid`), or an index "
        "(`--gpu-index`); in a container, check which devices it was given.",
    ),
    "gpu-jit-failed": (
        "error[gpu-jit-failed]: the driver's JIT could not compile the role's PTX "
        "(CUDA_ERROR_UNSUPPORTED_PTX_VERSION): ptxas fatal : Unsupported .version 7.8",
        "The driver is older than the PTX the role carries (ISA 7.8, from CUDA 11.8 on): "
        "update the NVIDIA driver on this machine.",
    ),
    "gpu-launch-failed": (
        "error[gpu-launch-failed]: a copy to the device of 9,640 bytes failed with "
        "CUDA_ERROR_ILLEGAL_ADDRESS after kernel alpha_step_12",
        "The device failed mid-round: another process took its memory, the card reset, or a "
        "kernel faulted (a bug to report with the build). Resume from the newest capture.",
    ),
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
    "arithmetic-mismatch": (
        "error[arithmetic-mismatch]: checkpoint ckpt/round-00000200/top.pack was made by a "
        "system of arithmetic fused, but this executable's system digits is of arithmetic "
        "unfused: the same parameters would go on with other bits",
        "The arithmetic is part of what a system computes. Resume with a build of the system "
        "in the capture's arithmetic (`arithmetic fused` in the source, or no such item for "
        "unfused), or start fresh without --resume.",
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
    "cpu-level-unsupported": (
        "error[cpu-level-unsupported]: ALPHA_CPU_LEVEL=x86-64-v4: this CPU lacks what "
        "x86-64-v4 needs (or the OS does not save its registers)",
        "Unset ALPHA_CPU_LEVEL to run the widest level this CPU supports (the bits are the "
        "same at every level), or name one the executable carries. An executable built with "
        "`--cpu` runs only where that CPU's instructions do: build without `--cpu` to carry "
        "every level.",
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
