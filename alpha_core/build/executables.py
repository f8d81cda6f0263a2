"""From a checked Program to executables on disk and the build manifest that describes them."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

import alpha_core.codegen.target as codegen_target
from alpha_core.autodiff.reverse import training_step
from alpha_core.build import role_table
from alpha_core.build.gpu_objects import gpu_objects
from alpha_core.build.hosts_file import check_hosts, placed, role_addresses
from alpha_core.build.outputs import (
    MANIFEST,
    BuildResult,
    BuiltExecutable,
    Deployment,
    role_file_name,
)
from alpha_core.build.role_kinds import Kind, template, write_role
from alpha_core.check.program import Program
from alpha_core.codegen import levels
from alpha_core.codegen.kernels import build_kernels
from alpha_core.codegen.level_jobs import LevelJob, compile_levels
from alpha_core.codegen.program_c import program_part, role_part_c
from alpha_core.codegen.target import TARGETS, HostTarget, fuses, object_code
from alpha_core.codegen.tiles import vector_width
from alpha_core.link.link import link_role
from alpha_core.link.object_cache import bytes_object, c_object, cached_path, content_key
from alpha_core.link.toolchain import LinkError, os_reason, runtime_objects, writable_folder
from alpha_core.plan.admission import Admission, admit, admit_program, refuse_unless_admitted
from alpha_core.plan.model import Pairing, Plan
from alpha_core.plan.profiles import machine_profile
from alpha_core.plan.projection import project
from alpha_core.plan.schedule import RoleSchedule, single_process


def kernels_object(program: Program, target: str, cpu: str | None = None) -> bytes:
    """The kernels for a target and one CPU (e.g. x86-64-v3): it widens the vectors, never the
    bits."""
    return kernels_file(program, target, cpu).read_bytes()


def _host(target: str, cpu: str | None) -> HostTarget:
    host = TARGETS[target]
    return replace(host, cpu=cpu) if cpu else host


def _object_key(host: HostTarget, text: str, *more: bytes) -> str:
    """An object's key: the module's text, the machine, the LLVM and llvmlite versions and the
    source of the pipeline that turns it into code (and of the renaming, for a level's copy)."""
    return content_key(
        [
            b"kernels",
            llvmlite.__version__.encode(),
            ".".join(map(str, llvm.llvm_version_info)).encode(),
            Path(codegen_target.__file__).read_bytes(),
            host.triple.encode(),
            host.cpu.encode(),
            host.features.encode(),
            *more,
            text.encode(),
        ]
    )


def _kernels_text(program: Program, host: HostTarget, small: bool = False) -> str:
    """The kernels module's text; `small`: every function optimised for size (the fallback
    copy of a dispatched build, levels.SMALL)."""
    module = build_kernels(program, training_step(program), host.triple, host.cpu, host.features)
    if small:
        for f in module.functions:
            if not f.is_declaration:
                f.attributes.add("optsize")
    return str(module)


def kernels_file(program: Program, target: str, cpu: str | None = None) -> Path:
    """The kernels object for one CPU in the object cache, optimised by LLVM only when no
    earlier build made the same module for the same machine."""
    host = _host(target, cpu)
    text = _kernels_text(program, host)  # made once: the key, and what LLVM reads
    key = _object_key(host, text)
    return bytes_object("kernels", host.zig, key, lambda: object_code(text, host))


def kernels_objects(program: Program, target: str, cpu: str | None = None) -> tuple[Path, ...]:
    """What a role links for its kernels. A default x86-64 build: a copy of the kernels per
    level (v2, v3, and v4 when a product takes the packed GEMM: levels.TASKS_ONLY) and the
    dispatcher that picks one at start-up (codegen/levels.py); a
    build for one CPU (`--cpu`, or AArch64): its kernels and a dispatcher naming that CPU."""
    host = TARGETS[target]
    zig = host.zig
    if cpu or target != "x86_64":
        name = cpu or (host.cpu if not host.features else f"{host.cpu} {host.features}")
        needs = 0
        if target == "x86_64":  # what the CPU at start-up must run, checked before anything
            h = _host(target, cpu)
            needs = levels.needed_level(
                vector_width(h.triple, h.cpu, h.features), fuses(target, h.cpu)
            )
        pinned = c_object("kernels-level", zig, levels.pinned_c(name, needs))
        return kernels_file(program, target, cpu), pinned
    copies: list[levels.LevelCopy] = []
    jobs: list[tuple[str, LevelJob]] = []
    renaming = Path(levels.__file__).read_bytes()
    carried = levels.carried(program.fused)
    first = carried[0]
    for level in carried:
        if level in levels.TASKS_ONLY and copies and not copies[0].scratch:
            break  # no product takes the packed GEMM: the v4 copy would be the slower one
        h = _host(target, level)
        text = _kernels_text(program, h, small=level in levels.SMALL)
        copies.append(levels.copy_of(text, level))
        key = _object_key(h, text, renaming, level.encode(), first.encode())
        jobs.append((key, LevelJob(text, level, first, h)))
    # the copies no earlier build made, compiled side by side (codegen/level_jobs.py)
    missing = [(key, job) for key, job in jobs if not cached_path("kernels", zig, key).is_file()]
    objects_made = compile_levels([job for _, job in missing])
    made = dict(zip((key for key, _ in missing), objects_made, strict=True))
    objects = [bytes_object("kernels", zig, key, _made(made, key, job)) for key, job in jobs]
    objects.append(c_object("kernels-levels", zig, levels.dispatcher_c(copies)))
    return tuple(objects)


def _made(made: dict[str, bytes], key: str, job: LevelJob) -> Callable[[], bytes]:
    """A copy's object: as compiled beside the others, or here (another build's copy of the
    same key was removed from the cache in between)."""
    return lambda: made[key] if key in made else job.compile()


@dataclass(frozen=True)
class _Shared:
    """What every role of a build for one target links: runtime, program part, kernels."""

    target: str  # as a pairing names it (a GPU role: "gpu h200", "gpu h200 (shadow)")
    objects: tuple[Path, ...]  # the runtime's objects, then the program part
    kernels: tuple[Path, ...]
    zig: str = ""  # zig's target when it is not the host target's (GPU roles)


def _gpu_shared(program: Program, profile: str, d: Deployment) -> _Shared:
    g = gpu_objects(program, profile, d.gpu_shadow, d.data_path, d.gpu_uuid, d.gpu_index)
    label = f"gpu {profile}" + (" (shadow)" if d.gpu_shadow else "")
    return _Shared(label, g.objects, (g.kernels,), g.zig)


def _shared(program: Program, target: str, data_path: str | None, cpu: str | None) -> _Shared:
    zig = TARGETS[target].zig
    part = program_part(program, data_path)
    obj = c_object("program", zig, part.c, part.blobs)
    return _Shared(target, (*runtime_objects(zig), obj), kernels_objects(program, target, cpu))


def _link(shared: _Shared, role: RoleSchedule, exe: Path, admission: Admission) -> BuiltExecutable:
    """One role's executable: its schedule compiled and linked with the shared objects."""
    zig = shared.zig or TARGETS[shared.target].zig
    link_role(zig, shared.objects, role_part_c(role), shared.kernels, exe)
    content = exe.read_bytes()
    return BuiltExecutable(
        role.name,
        str(exe),
        shared.target,
        len(content),
        hashlib.sha256(content).hexdigest(),
        admission.total,
        admission.headroom,
    )


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
        threads=d.threads,
    )
    built = _link(_shared(program, target, data_path or d.data_path, d.cpu), role, exe, admission)
    manifest = out_dir / MANIFEST
    result = BuildResult(
        program.name, program.identity(), program.n_params, program.n_state, (built,), str(manifest)
    )
    body = {**result.to_json(), "arithmetic": program.arithmetic, "tensors": tensor_table(program)}
    _write_manifest(manifest, body)
    return result


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
    indices = list(range(plan.membership.total) if roles is None else roles)
    addresses = None
    if deployment.hosts is not None:  # HostsRefused, with the lines, before anything is built
        names = [plan.membership.name_of(i) for i in range(plan.membership.total)]
        check_hosts(deployment.hosts, names, plan.name, deployment.port_base)
        addresses = role_addresses(deployment.hosts, names, deployment.port_base)
    # every role admitted before anything is compiled; without a pairing against this machine
    machine = machine_profile() if pairing is None else None
    admissions = {index: admit(plan, pairing, index, machine) for index in indices}
    for a in admissions.values():
        refuse_unless_admitted(a, f"{a.role} of plan `{plan.name}`")
    targets = {i: pairing.host_of(i) if pairing is not None else "x86_64" for i in indices}
    gpus = {i: pairing.gpu_of(i) if pairing is not None else None for i in indices}
    cores = {i: pairing.cores_of(i) if pairing is not None else None for i in indices}
    for i in indices:
        if deployment.threads and cores[i] and deployment.threads > (cores[i] or 0):
            raise LinkError(
                "threads-over-cores",
                f"--threads {deployment.threads} is more than the {cores[i]} cores pairing "
                f"`{pairing.name if pairing else ''}` gives {plan.membership.name_of(i)}",
            )
    # the program part and the kernels once per target; per role only its schedule
    shared = {
        t: _shared(program, t, deployment.data_path, deployment.cpu)
        for t in sorted({targets[i] for i in indices if gpus[i] is None})
    }
    for profile in sorted({g for g in gpus.values() if g is not None}):
        shared[f"gpu:{profile}"] = _gpu_shared(program, profile, deployment)
    kind = {i: targets[i] if gpus[i] is None else f"gpu:{gpus[i]}" for i in indices}
    schedules = {
        i: replace(
            _schedule(plan, i, deployment, addresses),
            threads=deployment.threads or cores[i] or 0,
            max_threads=cores[i] or 0,
        )
        for i in indices
    }
    built = _write_roles(indices, kind, shared, schedules, admissions, out_dir, on_built)
    manifest = out_dir / MANIFEST
    result = BuildResult(
        program.name,
        plan.identity(),
        program.n_params,
        program.n_state,
        tuple(built),
        str(manifest),
    )
    _write_manifest(
        manifest,
        {
            **result.to_json(),
            "plan": plan.name,
            "arithmetic": program.arithmetic,
            "tensors": tensor_table(plan.system),
        },
    )
    return result


def _write_roles(
    indices: list[int],
    kind: dict[int, str],
    shared: dict[str, _Shared],
    schedules: dict[int, RoleSchedule],
    admissions: dict[int, Admission],
    out_dir: Path,
    on_built: Callable[[BuiltExecutable, int, int], None] | None,
) -> list[BuiltExecutable]:
    """Each role's executable: one template linked per kind of role (its shared objects, with
    or without links; build/role_kinds.py), then each role's table written into its copy."""
    tables = {i: role_table.table(schedules[i]) for i in indices}
    kinds: dict[str, tuple[Kind, int]] = {}
    of: dict[int, str] = {}
    for i in indices:
        links = bool(schedules[i].links)
        room = role_table.room(len(tables[i]))
        name = f"{kind[i]}{' with links' if links else ''}, table of {room} bytes"
        s = shared[kind[i]]
        kinds[name] = (Kind(s.zig or TARGETS[s.target].zig, s.objects, s.kernels, links), room)
        of[i] = name
    names = sorted(kinds)
    workers = max(1, min(len(names), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="alpha-link") as pool:
        made = dict(zip(names, pool.map(lambda n: template(*kinds[n]), names), strict=True))
    built: list[BuiltExecutable] = []
    for done, i in enumerate(indices, 1):
        exe = out_dir / role_file_name(schedules[i].name)
        size, digest = write_role(made[of[i]], schedules[i].name, tables[i], exe)
        target = shared[kind[i]].target
        a = admissions[i]
        built.append(
            BuiltExecutable(schedules[i].name, str(exe), target, size, digest, a.total, a.headroom)
        )
        if on_built is not None:
            on_built(built[-1], done, len(indices))
    return built


def _schedule(
    plan: Plan,
    index: int,
    deployment: Deployment,
    addresses: tuple[tuple[str, int], ...] | None = None,
) -> RoleSchedule:
    schedule = replace(
        project(plan, index, deployment.port_base, deployment.host),
        connect_timeout_ms=deployment.connect_timeout_ms,
        io_timeout_ms=deployment.io_timeout_ms,
        checkpoint_dir=deployment.checkpoint_dir,
        resume=deployment.resume,
        checkpoint_keep=deployment.checkpoint_keep,
        secret_file=deployment.secret_file,
    )
    if addresses is None:
        return schedule
    return placed(schedule, addresses, deployment.listen_any)


def tensor_table(program: Program) -> list[dict[str, object]]:
    """Each parameter tensor's name, shape and place in the flat parameters: what names the
    values of a `.params` file beside the manifest (`load`, `alpha export`)."""
    return [
        {"name": p.name, "shape": list(p.shape), "offset": p.offset, "count": p.count}
        for p in program.params
    ]


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
