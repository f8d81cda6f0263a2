"""From a checked Program to executables on disk and the build manifest that describes them."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from alpha_core.autodiff.reverse import training_step
from alpha_core.check.program import Program
from alpha_core.codegen.kernels import build_kernels
from alpha_core.codegen.program_c import program_c
from alpha_core.codegen.target import TARGETS, object_code
from alpha_core.link.link import link_executable
from alpha_core.link.toolchain import LinkError, os_reason, writable_folder
from alpha_core.plan.admission import admit, admit_program, refuse_unless_admitted
from alpha_core.plan.model import Pairing, Plan
from alpha_core.plan.profiles import machine_profile
from alpha_core.plan.projection import project
from alpha_core.plan.schedule import single_process
from alpha_core.ports import DEFAULT_PORT_BASE

MANIFEST = "alpha-build.json"


@dataclass(frozen=True)
class BuiltExecutable:
    role: str
    path: str
    target: str
    size: int
    sha256: str
    demand: int = 0  # bytes the role holds at its peak (plan/admission.py)
    headroom: int = 0  # bytes its profile has to spare


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


@dataclass(frozen=True)
class Deployment:
    """Deployment inputs: compile-time arguments, never part of what is computed."""

    port_base: int = DEFAULT_PORT_BASE  # below the kernel's ephemeral range (ports.py)
    host: str = "127.0.0.1"
    data_path: str | None = None
    connect_timeout_ms: int = 10_000
    io_timeout_ms: int = 10_000
    checkpoint_dir: str = ""  # where captures go; "" for none
    checkpoint_every: int = 0  # for a build without a plan (a plan says its own)
    cpu: str | None = None  # the host CPU level to generate for (default: the target's baseline)
    resume: str = ""  # a checkpoint or capture folder every role resumes from; "" for fresh
    checkpoint_keep: int = 0  # published captures the root keeps; 0: every one
    secret_file: str = ""  # where every role reads the launch secret; "" for none compiled in


def kernels_object(program: Program, target: str, cpu: str | None = None) -> bytes:
    """The kernels for a target; `cpu` (e.g. x86-64-v3) widens the vectors, never the bits."""
    host = TARGETS[target]
    if cpu:
        host = replace(host, cpu=cpu)
    return object_code(build_kernels(program, training_step(program), host.triple), host)


def build_program(
    program: Program,
    out_dir: Path,
    target: str = "x86_64",
    data_path: str | None = None,
    deployment: Deployment | None = None,
) -> BuildResult:
    """Compile and link one executable for the system; write the manifest beside it.

    Raises alpha_core.link.toolchain.LinkError when the toolchain fails (`link-failed`), the
    object cache is unusable (`cache-unusable`) or out_dir cannot be written
    (`output-unwritable`).
    """
    writable_folder(out_dir, "output-unwritable", "the build's output folder")
    # admitted before anything is compiled, against this machine: there is no pairing
    admission = admit_program(program, machine_profile())
    refuse_unless_admitted(admission, f"system `{program.name}`")
    host = TARGETS[target]
    exe = out_dir / program.name
    d = deployment or Deployment(data_path=data_path)
    role = replace(
        single_process(
            program.leaves,
            program.identity(),
            program.n_params,
            d.checkpoint_every,
            d.checkpoint_dir,
        ),
        resume=d.resume,
        checkpoint_keep=d.checkpoint_keep,
    )
    source = program_c(program, data_path or d.data_path, role)
    link_executable(host.zig, kernels_object(program, target, d.cpu), source, exe)
    content = exe.read_bytes()
    digest = hashlib.sha256(content).hexdigest()
    built = BuiltExecutable(
        "main", str(exe), target, len(content), digest, admission.total, admission.headroom
    )
    manifest = out_dir / MANIFEST
    result = BuildResult(
        program.name, program.identity(), program.n_params, program.n_state, (built,), str(manifest)
    )
    _write_manifest(manifest, result.to_json())
    return result


def role_file_name(role: str) -> str:
    """`worker[3]` → `worker-3`: executable names without shell metacharacters."""
    return role.replace("[", "-").replace("]", "")


def build_plan(
    plan: Plan,
    pairing: Pairing | None,
    out_dir: Path,
    deployment: Deployment,
    roles: list[int] | None = None,
    on_built: Callable[[BuiltExecutable, int, int], None] | None = None,
) -> BuildResult:
    """One executable per role (or per role asked for), the kernels compiled once per target.
    `on_built(executable, done, total)` is told of each as it is linked (for progress)."""
    writable_folder(out_dir, "output-unwritable", "the build's output folder")
    program = plan.system
    objects: dict[str, bytes] = {}
    built: list[BuiltExecutable] = []
    indices = range(plan.membership.total) if roles is None else roles
    # every role admitted before anything is compiled; without a pairing against this machine
    machine = machine_profile() if pairing is None else None
    admissions = {index: admit(plan, pairing, index, machine) for index in indices}
    for a in admissions.values():
        refuse_unless_admitted(a, f"{a.role} of plan `{plan.name}`")
    for index in indices:
        target = pairing.host_of(index) if pairing is not None else "x86_64"
        if target not in objects:
            objects[target] = kernels_object(program, target, deployment.cpu)
        schedule = replace(
            project(plan, index, deployment.port_base, deployment.host),
            connect_timeout_ms=deployment.connect_timeout_ms,
            io_timeout_ms=deployment.io_timeout_ms,
            checkpoint_dir=deployment.checkpoint_dir,
            resume=deployment.resume,
            checkpoint_keep=deployment.checkpoint_keep,
            secret_file=deployment.secret_file,
        )
        exe = out_dir / role_file_name(schedule.name)
        source = program_c(program, deployment.data_path, schedule)
        link_executable(TARGETS[target].zig, objects[target], source, exe)
        content = exe.read_bytes()
        admission = admissions[index]
        digest = hashlib.sha256(content).hexdigest()
        built.append(
            BuiltExecutable(
                schedule.name,
                str(exe),
                target,
                len(content),
                digest,
                admission.total,
                admission.headroom,
            )
        )
        if on_built is not None:
            on_built(built[-1], len(built), len(indices))
    manifest = out_dir / MANIFEST
    result = BuildResult(
        program.name,
        plan.identity(),
        program.n_params,
        program.n_state,
        tuple(built),
        str(manifest),
    )
    _write_manifest(manifest, {**result.to_json(), "plan": plan.name})
    return result


def _write_manifest(manifest: Path, body: dict[str, object]) -> None:
    """The manifest written beside its name and renamed over it; a failure (a full disk)
    leaves no temporary file and raises LinkError `output-unwritable`."""
    tmp = manifest.with_suffix(".tmp")
    try:
        tmp.write_text(json.dumps(body, indent=2) + "\n")
        os.replace(tmp, manifest)
    except OSError as error:
        tmp.unlink(missing_ok=True)
        raise LinkError(
            "output-unwritable", f"cannot write the manifest {manifest}: {os_reason(error)}"
        ) from None
