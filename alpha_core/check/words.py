"""Words that belong to plans, pairings and deployment, never to a system's semantics."""

from __future__ import annotations

DEVICE_PROFILES = frozenset(
    {
        "rtx3070",
        "rtx3090",
        "a100",
        "a100_40gb",
        "a100_80gb",
        "h100",
        "h100_80gb",
        "h200",
    }
)
HOSTS = frozenset({"x86_64", "aarch64", "arm64", "amd64"})
PLACEMENT = frozenset(
    {
        "device",
        "gpu",
        "cpu",
        "host",
        "rank",
        "address",
        "addr",
        "port",
        "ip",
        "driver",
        "cuda",
        "nccl",
        "mpi",
        "hostname",
        "endpoint",
        "uuid",
        "minor",
    }
)
DEVICE_WORDS = DEVICE_PROFILES | HOSTS | PLACEMENT


def device_word(word: str) -> bool:
    return word.lower() in DEVICE_WORDS
