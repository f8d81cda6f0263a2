"""Device and host profiles as data: what a pairing may name, and how much memory each has."""

from __future__ import annotations

from dataclasses import dataclass

GIB = 1024**3


@dataclass(frozen=True)
class Profile:
    name: str
    kind: str  # gpu | host
    memory: int  # bytes
    multiprocessors: int = 0  # a GPU's streaming multiprocessors: a product's tile fills them


DEVICE_PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile("rtx3070", "gpu", 8 * GIB, 46),
        Profile("rtx3090", "gpu", 24 * GIB, 82),
        Profile("a100-40gb", "gpu", 40 * GIB, 108),
        Profile("a100-80gb", "gpu", 80 * GIB, 108),
        Profile("h100-80gb", "gpu", 80 * GIB, 132),
        Profile("h200", "gpu", 141 * 10**9, 132),  # 141 GB as sold
    )
}

# A host role's memory is what its pairing says (`memory 64 gib`), else this default.
DEFAULT_HOST_MEMORY = 8 * GIB
MEMORY_UNITS = {"mib": 1024**2, "gib": GIB, "mb": 10**6, "gb": 10**9}


def host_profile(host: str, memory: int | None) -> Profile:
    return Profile(f"{host} host", "host", DEFAULT_HOST_MEMORY if memory is None else memory)


# Where the build machine's memory is read. Without a pairing, a build is admitted against the
# machine that builds it (it is the machine `alpha run` starts the roles on): its MemTotal, or
# the memory limit of the container the build runs in when that is lower. MemTotal rather than
# MemAvailable: the verdict must not depend on what else happens to be running.
MEMINFO = "/proc/meminfo"
CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


def _mem_total(meminfo: str) -> int | None:
    try:
        with open(meminfo, encoding="ascii", errors="replace") as f:
            for line in f:
                name, _, rest = line.partition(":")
                if name == "MemTotal":
                    value, unit = (rest.split() + ["", ""])[:2]
                    return int(value) * (1024 if unit == "kB" else 1)
    except (OSError, ValueError):
        return None
    return None


def _cgroup_limit(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as f:
            text = f.read().strip()
        return int(text)  # "max" (no limit) is no number
    except (OSError, ValueError):
        return None


def machine_profile(
    meminfo: str = MEMINFO, cgroup_limits: tuple[str, ...] = CGROUP_LIMITS
) -> Profile:
    """The build machine as a host profile: its memory and where that figure comes from, or
    the default host profile (DEFAULT_HOST_MEMORY) when the machine does not say."""
    total = _mem_total(meminfo)
    if total is None:
        return Profile(
            f"this machine (memory unknown: {meminfo} unreadable; the default host profile)",
            "host",
            DEFAULT_HOST_MEMORY,
        )
    name = f"this machine (MemTotal in {meminfo})"
    for path in cgroup_limits:
        limit = _cgroup_limit(path)
        if limit is not None and 0 < limit < total:
            total, name = limit, f"this machine (the container's limit in {path})"
    return Profile(name, "host", total)
