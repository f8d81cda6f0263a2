"""Deployment inputs checked at build time against what the runtime can hold.

Each input is compiled into the executable as a fixed-width field of ALPHA_ROLE (ports and
counts as uint32, paths as C strings), and a value outside the field's range would wrap
silently: `--checkpoint-every 2**40` became 0 (no captures), `--timeout-ms -5` nearly fifty
days, `--port-base 70000` an executable that builds and then cannot listen. So every input is
range-checked here, before anything is compiled, and refused as `bad-argument` with its range.
"""

from __future__ import annotations

from collections.abc import Iterable

from alpha_core.build.hosts_file import is_host
from alpha_core.build.outputs import Deployment
from alpha_core.codegen.target import cpu_problem
from alpha_core.diagnostics import Diagnostic
from alpha_core.support.ports import HIGHEST_PORT, LOWEST_PORT

UINT32_MAX = 2**32 - 1
TIMEOUT_MS = (1, 86_400_000)  # a millisecond to a day: longer is a unit mistake, not a deadline
KEEP_MAX = 999_999_999  # as the executable's own --checkpoint-keep
PATH_BYTES = 4095  # PATH_MAX less its NUL


def _host_problem(host: str) -> str | None:
    return None if is_host(host) else f"--host {host!r} is neither an IP address nor a host name"


def _range(flag: str, value: int, low: int, high: int, unit: str) -> str | None:
    if low <= value <= high:
        return None
    return f"{flag} {value} is out of range: {low:,} to {high:,} {unit}"


def deployment_refusals(
    d: Deployment, targets: Iterable[str], ports: tuple[int, int] | None = None
) -> list[Diagnostic]:
    """`bad-argument` for each deployment input out of range: `targets` are the instruction
    sets built for (the CPU must be one of theirs), `ports` the first and last port the built
    roles listen on or dial (None for a build without links)."""
    problems = [
        _range("--timeout-ms", d.connect_timeout_ms, *TIMEOUT_MS, "milliseconds"),
        _range("--timeout-ms", d.io_timeout_ms, *TIMEOUT_MS, "milliseconds"),
        _range("--checkpoint-every", d.checkpoint_every, 0, UINT32_MAX, "rounds (0: no captures)"),
        _range("--checkpoint-keep", d.checkpoint_keep, 0, KEEP_MAX, "captures (0: every one)"),
        _host_problem(d.host),
    ]
    first, last = ports or (d.port_base, d.port_base)
    if first < LOWEST_PORT or last > HIGHEST_PORT:
        high = HIGHEST_PORT - (last - d.port_base)
        low = LOWEST_PORT + (d.port_base - first)
        why = (
            f"the roles use ports {first}..{last}, so the base must be from {low} to {high} "
            f"(a port is {LOWEST_PORT} to {HIGHEST_PORT})"
            if ports
            else f"{LOWEST_PORT} to {HIGHEST_PORT}"
        )
        problems.append(f"--port-base {d.port_base} is out of range: {why}")
    for flag, path in (
        ("--data", d.data_path or ""),
        ("--checkpoint-dir", d.checkpoint_dir),
        ("--resume", d.resume),
    ):
        size = len(path.encode("utf-8", errors="surrogateescape"))
        if size > PATH_BYTES:
            problems.append(f"{flag} is a path of {size:,} bytes; at most {PATH_BYTES:,} fit")
    if d.cpu:
        problems += [cpu_problem(target, d.cpu) for target in sorted(set(targets))]
    unique = dict.fromkeys(p.strip() for p in problems if p)  # one timeout flag, said once
    return [Diagnostic("bad-argument", p, None) for p in unique]
