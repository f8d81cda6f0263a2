"""The native toolchain: `zig cc` from the ziglang package, and the C runtime compiled once per
target into a content-addressed object cache."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# static musl for every host role; glibc-dynamic for GPU roles (GPU_ZIG_TARGET below)
TARGETS = ("x86_64-linux-musl", "aarch64-linux-musl", "x86_64-linux-gnu.2.28")

# Every C file of an executable is compiled with these: no contraction into FMA (it changes the
# bits), no fast-math, and nothing that depends on where the sources live.
C_FLAGS = (
    "-std=c11",
    "-O2",
    "-ffp-contract=off",
    "-fno-fast-math",
    "-ffunction-sections",
    "-fdata-sections",
    "-Wall",
    "-Wextra",
)

# Runtime sources that run once or a few times a run (start-up, arguments, checkpoints and
# resume, predictions, evaluation, refusals): compiled for size. What runs every round or over
# every byte of the data (the schedule, links and frames, their MACs, hashes, batches, the
# CSV reader, the thread pool) keeps -O2. Every executable carries the whole runtime, so this
# is what keeps a small system's executable small beside three copies of its kernels.
COLD_SOURCES = frozenset(
    {
        "arrays.c",
        "checkpoint.c",
        "cpu_level.c",
        "evaluate.c",
        "events.c",
        "files.c",
        "handshake.c",
        "json.c",
        "lifeline.c",
        "main.c",
        "manifest.c",
        "needed_rows.c",
        "params_file.c",
        "predict.c",
        "refusal.c",
        "resolve.c",
        "resume.c",
        "retention.c",
        "role_table.c",
        "schedule_check.c",
        "secret.c",
        "shared_pages.c",
        "shared_rows.c",
        "sockets.c",
    }
)


def source_flags(name: str) -> tuple[str, ...]:
    """The flags a runtime source gets beyond C_FLAGS (a later -O wins)."""
    return ("-Os",) if name in COLD_SOURCES else ()


# Bump when the way objects are built changes in a way the key below cannot see.
_CACHE_VERSION = b"alpha-runtime-object-1"


class LinkError(Exception):
    """An executable that could not be made, carrying the refusal name the caller reports:
    `link-failed` (the toolchain), `cache-unusable` (the object cache), `output-unwritable`
    (the output folder)."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message


def _failed(message: str) -> LinkError:
    return LinkError("link-failed", message)


def os_reason(error: OSError) -> str:
    """An OS error as a message says it: `no space left on device`, lowercase, no errno."""
    return (error.strerror or type(error).__name__).lower()


def writable_folder(folder: Path, name: str, what: str) -> Path:
    """`folder`, made if need be and proven writable by creating a file in it; anything else
    (a file in its place, a read-only or full file system, no permission) raises LinkError
    `name`, naming `what` the folder is for."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(prefix=".alpha-probe-", dir=folder)
        os.close(handle)
        os.unlink(probe)
    except OSError as error:
        blocked = folder.exists() and not folder.is_dir()
        detail = "it is not a folder" if blocked else os_reason(error)
        culprit = str(error.filename or folder)  # the folder, or the file found in its way
        where = f" ({culprit})" if culprit != str(folder) else ""
        raise LinkError(name, f"cannot use {folder} as {what}: {detail}{where}") from None
    return folder


def zig_command() -> list[str]:
    """The command that runs zig: the ziglang package of this interpreter. Its binary is run
    directly where it is found (`python -m ziglang` only execs it, after starting a Python:
    about 40 ms per call, a third of a role's link)."""
    spec = importlib.util.find_spec("ziglang")
    if spec is None:
        raise _failed(f"the ziglang package is not installed for {sys.executable}")
    binary = Path(spec.origin).parent / "zig" if spec.origin else None
    if binary is not None and binary.is_file() and os.access(binary, os.X_OK):
        return [str(binary)]
    return [sys.executable, "-m", "ziglang"]


def zig_version() -> str:
    try:
        return importlib.metadata.version("ziglang")
    except importlib.metadata.PackageNotFoundError as error:
        raise _failed(f"the ziglang package is not installed for {sys.executable}") from error


CACHE_WHAT = "the object cache (ALPHA_CACHE_DIR, default ~/.cache/alpha)"


def cache_root() -> Path:
    """$ALPHA_CACHE_DIR, or ~/.cache/alpha."""
    configured = os.environ.get("ALPHA_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "alpha"


def zig_environment() -> dict[str, str]:
    # zig builds musl into its cache on first use of a target (about a minute): keep that in a
    # cache the project controls, and keep zig's local cache out of the working folder.
    zig_cache = str(cache_root() / "zig")
    return {**os.environ, "ZIG_GLOBAL_CACHE_DIR": zig_cache, "ZIG_LOCAL_CACHE_DIR": zig_cache}


def runtime_dir() -> Path:
    """The C runtime's sources: `runtime/` beside the `alpha_core` package."""
    folder = Path(__file__).resolve().parents[2] / "runtime"
    if not (folder / "alpha_program.h").is_file():
        raise _failed(f"the C runtime is missing: no {folder / 'alpha_program.h'}")
    return folder


def check_target(target: str) -> None:
    if target not in TARGETS:
        raise _failed(f"unsupported target {target}; supported: {', '.join(TARGETS)}")


def run_zig(arguments: Sequence[str], cwd: Path) -> None:
    """Runs `zig ARGUMENTS` in cwd; a failure becomes a LinkError quoting zig's own words."""
    command = [*zig_command(), *arguments]
    try:
        done = subprocess.run(
            command, cwd=cwd, env=zig_environment(), capture_output=True, text=True, check=False
        )
    except OSError as error:
        raise _failed(f"cannot run zig: {error}") from error
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip()[-4000:]
        raise _failed(f"zig {' '.join(arguments[:3])} ... exited with {done.returncode}: {detail}")


def compile_c(
    target: str,
    source: str,
    out: Path,
    *,
    cwd: Path,
    include_dirs: Sequence[Path] = (),
    extra_flags: Sequence[str] = (),
) -> None:
    """Compiles cwd/source (a name relative to cwd, so no absolute path reaches the object) to
    the object file out."""
    check_target(target)
    flags = [*C_FLAGS, *extra_flags, f"-ffile-prefix-map={cwd}=."]
    if target == "x86_64-linux-gnu.2.28":  # glibc shows O_TMPFILE and friends only so
        flags.append("-D_GNU_SOURCE")
    for folder in include_dirs:
        flags += [f"-I{folder}", f"-ffile-prefix-map={folder}=runtime"]
    run_zig(["cc", "-target", target, *flags, "-c", source, "-o", str(out)], cwd=cwd)


def _object_key(target: str, source: Path, headers: Sequence[Path]) -> str:
    digest = hashlib.sha256()

    def part(data: bytes) -> None:
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)

    part(_CACHE_VERSION)
    part(zig_version().encode())
    part(target.encode())
    part("\0".join((*C_FLAGS, *source_flags(source.name))).encode())
    part(source.name.encode())
    part(source.read_bytes())
    for header in headers:
        part(header.name.encode())
        part(header.read_bytes())
    return digest.hexdigest()


STALE_SECONDS = 3600  # a staged file this old is a killed build's: no build takes an hour


def _sweep_stale(cache: Path) -> None:
    """Removes staged files that a build killed mid-write (SIGKILL skips `finally`) left."""
    now = time.time()
    try:
        for entry in os.scandir(cache):
            if entry.name.startswith(".") and entry.is_file(follow_symlinks=False):
                if now - entry.stat(follow_symlinks=False).st_mtime > STALE_SECONDS:
                    Path(entry.path).unlink(missing_ok=True)
    except OSError:
        pass  # a sweep is tidiness, never a reason to fail a build


def cache_write(final: Path, make: Callable[[Path], None]) -> None:
    """`final` in the object cache, written by `make(path)` at a temporary name beside it and
    renamed into place, so concurrent builds never see half a file; LinkError `cache-unusable`
    when the cache cannot be written (and whatever `make` raises). Staged files older than an
    hour (a killed build's) are removed first."""
    cache = final.parent
    _sweep_stale(cache)
    try:
        handle, staged = tempfile.mkstemp(prefix=f".{final.name}.", dir=cache)
        os.close(handle)
    except OSError as error:
        raise LinkError(
            "cache-unusable", f"cannot write in {cache} ({CACHE_WHAT}): {os_reason(error)}"
        ) from None
    try:
        make(Path(staged))
        os.replace(staged, final)
    except OSError as error:
        raise LinkError(
            "cache-unusable", f"cannot write {final} ({CACHE_WHAT}): {os_reason(error)}"
        ) from None
    finally:
        Path(staged).unlink(missing_ok=True)


def runtime_objects(target: str) -> list[Path]:
    """The runtime's objects for target, compiled on first use and cached by the SHA-256 of
    (source, every header, target, flags, zig version)."""
    check_target(target)
    folder = runtime_dir()
    # gpu_*.c make a GPU role's kernels (gpu_role.c) and device (gpu_cuda.c, gpu_shadow.c):
    # linked only into GPU roles (gpu_runtime_sources), never into every executable
    sources = [s for s in sorted(folder.glob("*.c")) if not s.name.startswith("gpu_")]
    headers = sorted(folder.glob("*.h"))
    # The zig cache is checked here too: zig's own words about a cache it cannot write name
    # neither the cache nor ALPHA_CACHE_DIR.
    writable_folder(cache_root() / "zig", "cache-unusable", CACHE_WHAT)
    cache = writable_folder(cache_root() / "runtime" / target, "cache-unusable", CACHE_WHAT)
    objects = [cache / f"{s.stem}-{_object_key(target, s, headers)[:32]}.o" for s in sources]

    def build(source: Path, obj: Path) -> None:
        cache_write(
            obj,
            lambda staged: compile_c(
                target, source.name, staged, cwd=folder, extra_flags=source_flags(source.name)
            ),
        )

    missing = [(s, o) for s, o in zip(sources, objects, strict=True) if not o.exists()]
    with ThreadPoolExecutor(max_workers=max(1, min(len(missing), os.cpu_count() or 1))) as pool:
        for future in [pool.submit(build, s, o) for s, o in missing]:
            future.result()
    return objects


# GPU roles are glibc-dynamic: they dlopen libcuda.so.1, which a static musl executable cannot.
GPU_ZIG_TARGET = "x86_64-linux-gnu.2.28"


def gpu_runtime_sources(shadow: bool) -> tuple[list[Path], list[str]]:
    """What a GPU role links beside the runtime every executable has: the implementation of
    runtime/gpu.h (the NVIDIA driver through dlopen, or the host shadow) and the link flags it
    needs; not the role's bridge (gpu_role.c). No host role links them (runtime_objects leaves
    out every `gpu_*.c`). Compile them for GPU_ZIG_TARGET."""
    folder = runtime_dir()
    if shadow:
        return [folder / "gpu_shadow.c"], []
    # glibc 2.28 keeps dlopen in libdl (2.34 moved it into libc)
    return [folder / "gpu_cuda.c"], ["-ldl"]


# What a driver of the kernels alone needs of the runtime: the thread pool and what it reports,
# and the start-up CPU choice (cpu_level_start: how the AVX2 product kernel loads B)
DRIVER_SOURCES = ("pool", "refusal", "events", "json", "cpu_level")


def link_kernels_driver(
    zig_target: str,
    kernels: bytes,
    driver: str,
    work: Path,
    name: str,
    extra_flags: Sequence[str] = (),
) -> Path:
    """An executable `work/name` of a C driver (`driver`, its source) and a kernels object,
    with the runtime's thread pool: how bench/gemm.py and tests/test_tree_tiles.py call the
    compiler's products without a role around them."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "kernels.o").write_bytes(kernels)
    (work / "driver.c").write_text(driver)
    compile_c(
        zig_target,
        "driver.c",
        work / "driver.o",
        cwd=work,
        include_dirs=[runtime_dir()],
        extra_flags=extra_flags,
    )
    for source in DRIVER_SOURCES:
        compile_c(zig_target, f"{source}.c", work / f"{source}.o", cwd=runtime_dir())
    objects = [str(work / f"{source}.o") for source in DRIVER_SOURCES]
    command = ["cc", "-target", zig_target, "-O2", "-static", *objects, "driver.o", "kernels.o"]
    run_zig([*command, "-o", name], cwd=work)
    return work / name
