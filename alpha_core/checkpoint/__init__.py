"""Checkpoint captures written by the runtime: reading, verifying and describing them
(`alpha inspect CKPT`)."""

from alpha_core.checkpoint.reader import (
    REFUSALS,
    Capture,
    Checkpoint,
    CheckpointError,
    Manifest,
    Shard,
    Tensor,
    captures_in,
    kind_names,
    read_checkpoint,
)

__all__ = [
    "REFUSALS",
    "Capture",
    "Checkpoint",
    "CheckpointError",
    "Manifest",
    "Shard",
    "Tensor",
    "captures_in",
    "kind_names",
    "read_checkpoint",
]
