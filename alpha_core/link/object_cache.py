"""Objects shared by every role of a build, made once and kept by the SHA-256 of what they are
made from: the program description (ALPHA_PROGRAM and the embedded data) and the kernels.

A role's executable differs from its neighbours only in its schedule (ALPHA_ROLE); everything
else is compiled once per (inputs, target) and found again by later builds, so a plan of 64
roles compiles its data and kernels once, not 64 times. The key covers every input of the
object (its source text, the tool versions, flags and target); a name never names two
contents, so concurrent builds can share the folder: each writes beside the final name and
renames over it.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from alpha_core.link.toolchain import (
    C_FLAGS,
    CACHE_WHAT,
    cache_root,
    cache_write,
    check_target,
    compile_c,
    runtime_dir,
    writable_folder,
    zig_version,
)

# Bump when the way these objects are made changes in a way their keys cannot see.
_VERSION = b"alpha-shared-object-1"


def content_key(parts: Iterable[bytes]) -> str:
    """SHA-256 over length-prefixed parts: no two sequences of parts share a key."""
    digest = hashlib.sha256()
    for data in (_VERSION, *parts):
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def cached_object(
    kind: str, target: str, key: str, make: Callable[[Path], None], suffix: str = ".o"
) -> Path:
    """The object `kind`-KEY.o (another `suffix`: a linked template) for target in the cache;
    made by `make(path)` when absent.

    `make` writes the object at the path it is given (a temporary name beside the final one).
    Raises LinkError `cache-unusable` when the cache cannot be written, and whatever `make`
    raises (LinkError `link-failed` from the toolchain)."""
    final = cached_path(kind, target, key, suffix)
    if not final.is_file():
        writable_folder(final.parent, "cache-unusable", CACHE_WHAT)
        cache_write(final, make)
    return final


def cached_path(kind: str, target: str, key: str, suffix: str = ".o") -> Path:
    """Where `cached_object` keeps the object `kind`-KEY for target (present or not)."""
    return cache_root() / "shared" / target / f"{kind}-{key[:40]}{suffix}"


def c_object(kind: str, target: str, source: str, blobs: Sequence[tuple[str, bytes]] = ()) -> Path:
    """`source` (C that includes the runtime's headers) compiled for target once, as every
    role's program.c used to be: same flags, same include folder. `blobs` are files (name,
    bytes) written beside it, which its assembly may .incbin; they are part of the key."""
    check_target(target)
    folder = runtime_dir()
    headers = sorted(folder.glob("*.h"))
    key = content_key(
        [
            zig_version().encode(),
            target.encode(),
            "\0".join(C_FLAGS).encode(),
            source.encode(),
            *(part for h in headers for part in (h.name.encode(), h.read_bytes())),
            *(part for name, data in blobs for part in (name.encode(), data)),
        ]
    )

    def make(out: Path) -> None:
        with tempfile.TemporaryDirectory(prefix="alpha-shared-") as temp:
            work = Path(temp)
            (work / f"{kind}.c").write_text(source, encoding="utf-8")
            for name, data in blobs:
                (work / name).write_bytes(data)
            compile_c(target, f"{kind}.c", out, cwd=work, include_dirs=[folder])

    return cached_object(kind, target, key, make)


def bytes_object(kind: str, target: str, key: str, make: Callable[[], bytes]) -> Path:
    """An object made in this process (the kernels, from LLVM), kept under `key`."""

    def write(out: Path) -> None:
        out.write_bytes(make())

    return cached_object(kind, target, key, write)
