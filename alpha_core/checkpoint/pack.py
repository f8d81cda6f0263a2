"""A role's pack file (runtime/checkpoint.c): its shards, then its manifest, then a trailer.

The trailer is the last 48 bytes: the manifest's length (u64, little-endian), the manifest's
SHA-256 and the magic `ALPHACK3`. The manifest therefore starts at `size - 48 - length`, which
is also where the shards end.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

MAGIC = b"ALPHACK3"
TRAILER = 48
TOP = "top.pack"


@dataclass(frozen=True)
class Sections:
    """Where a pack's parts are: shards in [0, manifest_start), then the manifest."""

    manifest_start: int
    manifest: bytes
    said: str  # the manifest's SHA-256 as the trailer gives it


class PackError(Exception):
    """No trailer, or a trailer whose length does not fit the file (the reader's malformed)."""


def trailer(manifest: bytes) -> bytes:
    return struct.pack("<Q", len(manifest)) + hashlib.sha256(manifest).digest() + MAGIC


def join(shards: bytes, manifest: bytes) -> bytes:
    """A pack: the shard bytes, the manifest, its trailer."""
    return shards + manifest + trailer(manifest)


def split(data: bytes, limit: int) -> Sections:
    """The sections of a pack's bytes; PackError when the trailer is missing or does not fit
    (its manifest longer than `limit` or than the pack)."""
    if len(data) < TRAILER or data[-8:] != MAGIC:
        raise PackError(
            f"it does not end with a pack trailer (a manifest length, its SHA-256 and "
            f'"{MAGIC.decode()}")'
        )
    (length,) = struct.unpack("<Q", data[-TRAILER : -TRAILER + 8])
    if length > limit or length > len(data) - TRAILER:
        raise PackError(
            f"its trailer gives a manifest of {length} bytes, more than the pack holds or {limit}"
        )
    start = len(data) - TRAILER - length
    return Sections(start, data[start : start + length], data[-40:-8].hex())


def with_manifest(data: bytes, manifest: bytes, limit: int = 1 << 62) -> bytes:
    """The pack `data` with its manifest replaced (shards kept), its trailer remade."""
    return join(data[: split(data, limit).manifest_start], manifest)
