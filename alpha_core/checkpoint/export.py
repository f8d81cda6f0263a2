"""Parameters by name and shape: the layout of a `.params` file or a capture, from the system
or from the build manifest beside it, and the tensors written as a NumPy archive or a
safetensors file (with the NumPy and safetensors libraries, never by hand)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from alpha_core.check.program import Program

MANIFEST = "alpha-build.json"
FORMATS = ("npz", "safetensors")


class ExportRefused(Exception):
    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name
        self.message = message


@dataclass(frozen=True)
class Slot:
    name: str
    shape: tuple[int, ...]
    offset: int
    count: int


def layout_of_program(program: Program) -> list[Slot]:
    return [Slot(p.name, tuple(p.shape), p.offset, p.count) for p in program.params]


def layout_beside(path: Path) -> tuple[list[Slot], Path] | None:
    """The tensors of the build manifest in path's folder or the folders above it (a capture
    sits two levels below its run folder: run/checkpoints/round-N), or None."""
    for folder in [path.parent, path.parent.parent, path.parent.parent.parent][:3]:
        manifest = folder / MANIFEST
        if not manifest.is_file():
            continue
        try:
            tensors = json.loads(manifest.read_text(encoding="utf-8"))["tensors"]
            slots = [
                Slot(
                    str(t["name"]),
                    tuple(int(d) for d in t["shape"]),
                    int(t["offset"]),
                    int(t["count"]),
                )
                for t in tensors
            ]
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a manifest of an older build, without tensors
        return slots, manifest
    return None


def tensors(values: np.ndarray, layout: list[Slot], what: str) -> dict[str, np.ndarray]:
    """Each tensor of the flat float32 `values`, shaped; refused when they do not fit."""
    total = sum(s.count for s in layout)
    if values.size != total:
        raise ExportRefused(
            "export-layout-unknown",
            f"{what} holds {values.size:,} parameters; the layout names {total:,} "
            f"({', '.join(s.name for s in layout)})",
        )
    return {
        s.name: np.ascontiguousarray(values[s.offset : s.offset + s.count]).reshape(s.shape)
        for s in layout
    }


def write(arrays: dict[str, np.ndarray], fmt: str, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "npz":
        with out.open("wb") as f:  # np.savez would add `.npz` to a name without it
            np.savez(f, **arrays)  # type: ignore[arg-type]
        return
    from safetensors.numpy import save_file

    save_file(arrays, str(out))
