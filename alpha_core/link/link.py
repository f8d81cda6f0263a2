"""Joining a role's kernels and program description with the cached runtime into one static,
reproducible executable."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from alpha_core.link.toolchain import (
    LinkError,
    check_target,
    compile_c,
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
    ALPHA_PROGRAM (runtime/alpha_program.h). Raises LinkError on any toolchain failure, and
    when out's folder cannot be written (`output-unwritable`)."""
    check_target(target)
    objects = runtime_objects(target)
    out = Path(out)
    writable_folder(out.parent, "output-unwritable", "the build's output folder")
    with tempfile.TemporaryDirectory(prefix="alpha-link-") as temp:
        work = Path(temp)
        (work / "kernels.o").write_bytes(kernels_object)
        (work / "program.c").write_text(program_c, encoding="utf-8")
        compile_c(target, "program.c", work / "program.o", cwd=work, include_dirs=[runtime_dir()])
        inputs = [str(o) for o in objects] + ["program.o", "kernels.o"]
        run_zig(["cc", "-target", target, *LINK_FLAGS, *inputs, "-o", "executable"], cwd=work)
        staged = work / "executable"
        staged.chmod(0o755)
        _place(staged, out)
    return out


def _place(staged: Path, out: Path) -> None:
    """The staged executable at `out`. The temporary folder may be on another file system: copy
    beside out, then rename, so `out` is whole or absent; a failure (a full disk, `out` a
    folder) removes the copy and raises LinkError `output-unwritable`."""
    beside: str | None = None
    try:
        handle, beside = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
        with os.fdopen(handle, "wb") as f:
            f.write(staged.read_bytes())
        os.chmod(beside, 0o755)
        os.replace(beside, out)
    except OSError as error:
        raise LinkError(
            "output-unwritable", f"cannot write the executable {out}: {os_reason(error)}"
        ) from None
    finally:
        if beside is not None:
            Path(beside).unlink(missing_ok=True)
