"""Checkpoint captures written by the runtime: reading, verifying and describing them
(`alpha inspect CKPT`)."""

from alpha_core.checkpoint.folder import Capture, captures_in
from alpha_core.checkpoint.reader import (
    REFUSALS,
    Checkpoint,
    CheckpointError,
    Manifest,
    Shard,
    Tensor,
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
