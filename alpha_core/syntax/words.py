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


# letters whose names start with a vowel sound: "an h200", "an rtx3070", "an x86_64"
_VOWEL_SOUND_LETTERS = frozenset("aefhilmnorsx")


def article(word: str) -> str:
    """`a` or `an` before `word`, by how it is said: a product name whose letters are spelt
    out (h200, rtx3070) takes the article of its first letter's name."""
    w = word.lower()
    if not w or w.startswith(("uni", "use", "usu", "one")):
        return "a"
    spelt = len(w) > 1 and (w[1].isdigit() or not any(c in "aeiou" for c in w[:3]))
    if spelt:
        return "an" if w[0] in _VOWEL_SOUND_LETTERS else "a"
    return "an" if w[0] in "aeiou" else "a"
