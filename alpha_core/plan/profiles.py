"""Device and host profiles as data: what a pairing may name, and how much memory each has."""

from __future__ import annotations

from dataclasses import dataclass

GIB = 1024**3


@dataclass(frozen=True)
class Profile:
    name: str
    kind: str  # gpu | host
    memory: int  # bytes


DEVICE_PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile("rtx3070", "gpu", 8 * GIB),
        Profile("rtx3090", "gpu", 24 * GIB),
        Profile("a100-40gb", "gpu", 40 * GIB),
        Profile("a100-80gb", "gpu", 80 * GIB),
        Profile("h100-80gb", "gpu", 80 * GIB),
        Profile("h200", "gpu", 141 * 10**9),  # 141 GB as sold
    )
}

# A host role's memory is what its pairing says (`memory 64 gib`), else this default.
DEFAULT_HOST_MEMORY = 8 * GIB
MEMORY_UNITS = {"mib": 1024**2, "gib": GIB, "mb": 10**6, "gb": 10**9}


def host_profile(host: str, memory: int | None) -> Profile:
    return Profile(f"{host} host", "host", DEFAULT_HOST_MEMORY if memory is None else memory)
