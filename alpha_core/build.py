"""From a checked Program to executables on disk and the build manifest that describes them."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from alpha_core.autodiff.reverse import training_step
from alpha_core.check.program import Program
from alpha_core.codegen.kernels import build_kernels
from alpha_core.codegen.program_c import program_c
from alpha_core.codegen.target import TARGETS, object_code
from alpha_core.link.link import link_executable

MANIFEST = "alpha-build.json"


@dataclass(frozen=True)
class BuiltExecutable:
    role: str
    path: str
    target: str
    size: int
    sha256: str


@dataclass(frozen=True)
class BuildResult:
    system: str
    identity: str
    params: int
    state: int
    executables: tuple[BuiltExecutable, ...]
    manifest: str

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def kernels_object(program: Program, target: str) -> bytes:
    host = TARGETS[target]
    return object_code(build_kernels(program, training_step(program), host.triple), host)


def build_program(
    program: Program, out_dir: Path, target: str = "x86_64", data_path: str | None = None
) -> BuildResult:
    """Compile and link one executable for the system; write the manifest beside it.

    Raises alpha_core.link.toolchain.LinkError when the toolchain fails.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    host = TARGETS[target]
    exe = out_dir / program.name
    link_executable(host.zig, kernels_object(program, target), program_c(program, data_path), exe)
    content = exe.read_bytes()
    built = BuiltExecutable(
        "main", str(exe), target, len(content), hashlib.sha256(content).hexdigest()
    )
    manifest = out_dir / MANIFEST
    result = BuildResult(
        program.name, program.identity(), program.n_params, program.n_state, (built,), str(manifest)
    )
    tmp = manifest.with_suffix(".tmp")
    tmp.write_text(json.dumps(result.to_json(), indent=2) + "\n")
    os.replace(tmp, manifest)
    return result
