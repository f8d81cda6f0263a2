"""Joining a role's kernels and program description with the cached runtime into one static,
reproducible executable."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from alpha_core.link.toolchain import (
    C_FLAGS,
    GPU_ZIG_TARGET,
    LinkError,
    check_target,
    os_reason,
    run_zig,
    runtime_dir,
    runtime_objects,
    writable_folder,
)

# Static and stripped; no build id and no section garbage, so the same inputs give the same
# bytes wherever and whenever they are linked.
LINK_FLAGS = (
    "-O2",
    "-s",
    "-static",
    "-ffp-contract=off",
    "-Wl,--build-id=none",
    "-Wl,--gc-sections",
)


def link_executable(target: str, kernels_object: bytes, program_c: str, out: Path) -> Path:
    """Builds the executable for target at out (replaced atomically) and returns out.

    kernels_object is the role's kernels as an object file for target; program_c defines
    ALPHA_PROGRAM and ALPHA_ROLE (runtime/alpha_program.h). Raises LinkError on any toolchain
    failure, and when out's folder cannot be written (`output-unwritable`)."""
    check_target(target)
    with tempfile.TemporaryDirectory(prefix="alpha-kernels-") as temp:
        kernels = Path(temp) / "kernels.o"
        kernels.write_bytes(kernels_object)
        return link_role(target, runtime_objects(target), program_c, kernels, out)


def link_role(
    target: str, objects: Sequence[Path], role_c: str, kernels: Path | Sequence[Path], out: Path
) -> Path:
    """The executable at out (replaced atomically) from objects, the C source role_c and the
    kernels' objects (one, or a copy per CPU level and their dispatcher: codegen/levels.py), in
    that order, in one zig process: role_c is compiled with the runtime's flags (compile_c's)
    as it is linked.

    A build shares the objects between its roles (runtime, program description, kernels:
    object_cache.py), so a role costs only this call; the roles of a plan may run it side by
    side. Raises LinkError on any toolchain failure, and when out's folder cannot be written
    (`output-unwritable`)."""
    check_target(target)
    out = Path(out)
    writable_folder(out.parent, "output-unwritable", "the build's output folder")
    with tempfile.TemporaryDirectory(prefix="alpha-link-") as temp:
        work = Path(temp)
        (work / "role.c").write_text(role_c, encoding="utf-8")
        # the same flags (and prefix maps) as compile_c: no path of this machine in the output
        folder = runtime_dir()
        flags = [*C_FLAGS, f"-ffile-prefix-map={work}=.", f"-I{folder}"]
        flags.append(f"-ffile-prefix-map={folder}=runtime")
        kernel_objects = [kernels] if isinstance(kernels, Path) else list(kernels)
        inputs = [*map(str, objects), "role.c", *map(str, kernel_objects)]
        link_flags = list(LINK_FLAGS)
        if target == GPU_ZIG_TARGET:  # dynamic against glibc, to dlopen libcuda.so.1
            link_flags = [f for f in link_flags if f != "-static"] + ["-ldl"]
        run_zig(["cc", "-target", target, *flags, *link_flags, *inputs, "-o", "executable"], work)
        staged = work / "executable"
        staged.chmod(0o755)
        place_executable(staged.read_bytes(), out)
    return out


def place_executable(content: bytes, out: Path) -> None:
    """An executable's bytes at `out`. Written beside out, then renamed (the staging folder may
    be on another file system), so `out` is whole or absent; a failure (a full disk, `out` a
    folder) removes the copy and raises LinkError `output-unwritable`."""
    beside: str | None = None
    try:
        handle, beside = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
        with os.fdopen(handle, "wb") as f:
            f.write(content)
        os.chmod(beside, 0o755)
        os.replace(beside, out)
        beside = None
    except OSError as error:
        raise LinkError(
            "output-unwritable", f"cannot write the executable {out}: {os_reason(error)}"
        ) from None
    finally:
        if beside is not None:
            Path(beside).unlink(missing_ok=True)
