"""The machine a benchmark ran on, and the environment it runs its peers in."""

from __future__ import annotations

import os
import platform
import subprocess
from typing import Any

LSCPU_KEYS = (
    "CPU(s)",
    "Thread(s) per core",
    "Core(s) per socket",
    "L1d cache",
    "L2 cache",
    "L3 cache",
)


def machine() -> dict[str, Any]:
    """CPU model, cores, caches and the SIMD extensions present (from lscpu when it exists)."""
    info: dict[str, Any] = {
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "os": platform.platform(),
    }
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return info
    fields = {}
    for line in out.splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    info["cpu"] = fields.get("Model name", info["cpu"])
    for key in LSCPU_KEYS:
        if key in fields:
            info[key] = fields[key]
    flags = fields.get("Flags", "").split()
    info["simd"] = " ".join(f for f in ("sse4_2", "avx", "avx2", "fma", "avx512f") if f in flags)
    return info


def single_thread_env(unset_openblas_tuning: bool = False) -> dict[str, str]:
    """The environment for a peer: one thread for every BLAS and OpenMP; loopback for gloo.

    With unset_openblas_tuning, OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (set on these machines
    for older OpenBLAS builds) are removed, so a current NumPy picks its own kernel."""
    env = dict(os.environ)
    env["OPENBLAS_NUM_THREADS"] = "1"
    env["OMP_NUM_THREADS"] = "1"
    env["MKL_NUM_THREADS"] = "1"
    env["GLOO_SOCKET_IFNAME"] = "lo"
    if unset_openblas_tuning:
        env.pop("OPENBLAS_CORETYPE", None)
        env.pop("OPENBLAS_L2_SIZE", None)
    return env
