"""Which ports roles listen on: the kernel's ephemeral range, kept clear of by default.

The kernel gives every outgoing connection a source port from its ephemeral range
(/proc/sys/net/ipv4/ip_local_port_range, 32768-60999 on Linux by default). A role that listens
on a port inside that range can find it taken by some other connection's source port (a peer
dialling, a package manager, a browser) and fail `listen-failed`, so the compiled-in default and
the ports the launcher draws both lie below it.
"""

from __future__ import annotations

from pathlib import Path

PORT_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
# Linux's default ephemeral range, assumed where the kernel does not say.
LINUX_EPHEMERAL = (32768, 60999)
# The compiled-in port base: below Linux's default ephemeral range, above the privileged ports.
DEFAULT_PORT_BASE = 29000
LOWEST_PORT, HIGHEST_PORT = 1, 65535


def ephemeral_range(source: Path = PORT_RANGE_FILE) -> tuple[int, int]:
    """The kernel's ephemeral port range, first and last port, as this machine's kernel says
    it; Linux's default where that cannot be read."""
    try:
        words = source.read_text(encoding="ascii").split()
        low, high = int(words[0]), int(words[1])
    except (OSError, ValueError, IndexError, UnicodeDecodeError):
        return LINUX_EPHEMERAL
    if not LOWEST_PORT <= low <= high <= HIGHEST_PORT:
        return LINUX_EPHEMERAL
    return low, high


def ephemeral_overlap(first: int, last: int) -> str | None:
    """A warning when ports first..last share a port with the ephemeral range, else None."""
    low, high = ephemeral_range()
    if last < low or first > high:
        return None
    span = f"port {first} overlaps" if first == last else f"ports {first}..{last} overlap"
    return (
        f"{span} the kernel's ephemeral range {low}..{high} ({PORT_RANGE_FILE}): an "
        "outgoing connection may take a role's port before it listens (listen-failed); a port "
        f"base below {low} avoids it"
    )
