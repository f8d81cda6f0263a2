"""The objects of a GPU role: its kernels (PTX in tables, or the host shadow's code), the
bridge that launches them (runtime/gpu_role.c) and the device behind it (runtime/gpu_cuda.c or
runtime/gpu_shadow.c). build.py links them with the role's schedule as it links a host role.

A GPU role is glibc-dynamic (it must dlopen libcuda.so.1, the one thing it needs from the
machine); its host shadow is a static executable like every host role.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import llvmlite

from alpha_core.autodiff.reverse import training_step
from alpha_core.check.program import Program
from alpha_core.codegen.gpu_kernels import build_gpu_kernels
from alpha_core.codegen.gpu_program_c import gpu_program_c
from alpha_core.codegen.program_c import program_part
from alpha_core.codegen.ptx import emit_ptx
from alpha_core.codegen.target import TARGETS, object_code
from alpha_core.link.object_cache import bytes_object, c_object, content_key
from alpha_core.link.toolchain import GPU_ZIG_TARGET, runtime_dir, runtime_objects
from alpha_core.plan.profiles import DEVICE_PROFILES


@dataclass(frozen=True)
class GpuObjects:
    zig: str  # zig cc -target
    objects: tuple[Path, ...]  # runtime, program part, bridge, device, tables
    kernels: Path  # the shadow's kernels, or the tables (PTX)
    ptx: str  # "" for the shadow
    kernel_count: int
    device_bytes: int


def _source(kind: str, zig: str, name: str) -> Path:
    return c_object(kind, zig, (runtime_dir() / name).read_text(encoding="utf-8"))


def gpu_objects(
    program: Program,
    profile: str,
    shadow: bool,
    data_path: str | None,
    uuid: str = "",
    index: int = 0,
) -> GpuObjects:
    """Everything a GPU role of `program` links but its schedule. Raises UnsupportedOnGpu
    (gpu_nodes) when an operation has no GPU kernel; the pairing check refuses that first."""
    step = training_step(program)
    host = TARGETS["x86_64"]
    zig = host.zig if shadow else GPU_ZIG_TARGET
    device = "host" if shadow else "ptx"
    sms = DEVICE_PROFILES[profile].multiprocessors  # the pairing check named a known one
    triple = host.triple if shadow else ""
    module, layout = build_gpu_kernels(program, step, device, triple, sms)
    ptx = "" if shadow else emit_ptx(module)
    tables = c_object("gpu-program", zig, gpu_program_c(layout, ptx, profile, shadow, uuid, index))
    part = program_part(program, data_path)
    objects = [
        *runtime_objects(zig),
        c_object("program", zig, part.c, part.blobs),
        _source("gpu-role", zig, "gpu_role.c"),
        _source("gpu-device", zig, "gpu_shadow.c" if shadow else "gpu_cuda.c"),
    ]
    if shadow:
        key = content_key(
            [b"gpu-shadow", llvmlite.__version__.encode(), host.cpu.encode(), str(module).encode()]
        )
        kernels = bytes_object("gpu-shadow", zig, key, lambda: object_code(module, host))
        objects.append(tables)
    else:
        kernels = tables
    return GpuObjects(zig, tuple(objects), kernels, ptx, len(layout.kernels), layout.device_bytes)
