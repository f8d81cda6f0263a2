"""One named tensor of a file, for the `load` initialiser: a NumPy archive (`.npz`), a
safetensors file, or the `.params` of an earlier run (named through the build manifest
`alpha-build.json` beside it, whose `tensors` give each one's offset and shape).

The file's bytes come from the workspace's reader (so an editor's analysis is invalidated when
the file changes); nothing here touches the disk itself. Every way a file can fail to give the
tensor is a `LoadProblem`, which the initialiser check turns into a named refusal.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath

import numpy as np

ReadFile = Callable[[str], bytes | None]
MANIFEST = "alpha-build.json"  # build/outputs.py's name; the check sits below the build
FORMATS = (".npz", ".safetensors", ".params")


@dataclass(frozen=True)
class FileTensor:
    shape: tuple[int, ...]
    dtype: str  # NumPy's name: float32, float64, int64, ...
    values: bytes  # little-endian float32 when dtype is float32


@dataclass(frozen=True)
class LoadProblem(Exception):
    """kind: `unreadable` (the file, its format or its manifest), `missing` (no tensor of that
    name; `names` lists those the file has)."""

    kind: str
    message: str
    names: tuple[str, ...] = ()


def sha256_of(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def read_tensor(path: str, content: bytes, key: str, read_file: ReadFile) -> FileTensor:
    """The tensor `key` of the file at `path` whose bytes are `content`."""
    suffix = PurePosixPath(path).suffix
    if suffix == ".npz":
        return _npz(content, key)
    if suffix == ".safetensors":
        return _safetensors(content, key)
    if suffix == ".params":
        return _params(path, content, key, read_file)
    raise LoadProblem(
        "unreadable",
        f"`{PurePosixPath(path).name}` is not a file `load` reads: it reads "
        + ", ".join(FORMATS)
        + " files",
    )


def _from_array(a: np.ndarray) -> FileTensor:
    shape = tuple(int(d) for d in a.shape)
    if a.dtype != np.float32:
        return FileTensor(shape, str(a.dtype), b"")
    return FileTensor(shape, "float32", np.ascontiguousarray(a, dtype="<f4").tobytes())


def _npz(content: bytes, key: str) -> FileTensor:
    if not content.startswith(b"PK"):
        raise LoadProblem("unreadable", "it is not a NumPy archive (a zip of .npy files)")
    try:
        with np.load(io.BytesIO(content), allow_pickle=False) as archive:
            names = tuple(archive.files)
            if key not in names:
                raise LoadProblem("missing", "", names)
            return _from_array(archive[key])
    except LoadProblem:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError) as e:
        raise LoadProblem("unreadable", f"it is not a NumPy archive this reads ({e})") from None


def _safetensors(content: bytes, key: str) -> FileTensor:
    from safetensors.numpy import load as load_safetensors  # only when a file asks for it

    try:
        arrays = load_safetensors(content)
    except Exception as e:  # the library's SafetensorError, or a dtype NumPy lacks
        raise LoadProblem("unreadable", f"it is not a safetensors file this reads ({e})") from None
    if key not in arrays:
        raise LoadProblem("missing", "", tuple(sorted(arrays)))
    return _from_array(arrays[key])


def _params(path: str, content: bytes, key: str, read_file: ReadFile) -> FileTensor:
    beside = str(PurePosixPath(path).parent / MANIFEST)
    manifest = read_file(beside)
    if manifest is None:
        raise LoadProblem(
            "unreadable",
            f"a `.params` file is flat float32 values; their names and shapes are in the build "
            f"manifest {MANIFEST} beside it, and there is none at {beside}",
        )
    try:
        tensors = json.loads(manifest)["tensors"]
        table = {
            str(t["name"]): (int(t["offset"]), tuple(int(d) for d in t["shape"])) for t in tensors
        }
    except (ValueError, KeyError, TypeError) as e:
        raise LoadProblem(
            "unreadable", f"{beside} is not a build manifest that names tensors ({e})"
        ) from None
    if key not in table:
        raise LoadProblem("missing", "", tuple(table))
    offset, shape = table[key]
    count = int(np.prod(shape, dtype=np.int64))
    end = 4 * (offset + count)
    if offset < 0 or len(content) % 4 or end > len(content):
        raise LoadProblem(
            "unreadable",
            f"it holds {len(content):,} bytes, too few for tensor `{key}` at float {offset:,} "
            f"of {count:,} floats as {beside} places it: is the manifest of another run?",
        )
    return FileTensor(shape, "float32", content[4 * offset : end])
