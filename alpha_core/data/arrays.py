"""NumPy arrays and token files by the runtime's rules (runtime/arrays.c, runtime/data.c), so
that the checker refuses what the executable would refuse at start-up, by the same name and with
the same message.

A `.npy` file is the magic `\\x93NUMPY`, a version (1.0, 2.0 or 3.0), a header length (2 bytes
little-endian for 1.0, 4 for the others) and a header: a Python dictionary literal of exactly
the keys 'descr' (a dtype string), 'fortran_order' (True or False) and 'shape' (a tuple of
integers), then the array's bytes in C order. A `.npz` file is a zip archive of such files,
one per key (`KEY.npy`), stored uncompressed (`numpy.savez`). A token file is a flat array of
little-endian uint16 (or uint32) tokens (nanoGPT's `train.bin`).

Each step's fault is a `Fault`: the refusal name and the runtime's message. The checks come in
the runtime's order: the archive, the header, the dtype, the size, the shape, then the values.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import numpy as np

MAGIC = b"\x93NUMPY"
BYTES_LIMIT = 1 << 40  # a shape holding more is refused before its product is needed exactly
DIGITS_LIMIT = 18  # digits of one shape entry
MAX_AXES = 32
# dtype strings the runtime reads, with their NumPy types (all little-endian or single byte)
DTYPES: dict[str, str] = {
    "<f4": "float32",
    "|u1": "uint8",
    "<u2": "uint16",
    "<i4": "int32",
    "<i8": "int64",
}
FEATURE_DTYPES = ("<f4", "|u1", "<u2", "<i4")
CLASS_DTYPES = ("|u1", "<u2", "<i4", "<i8", "<f4")
TARGET_DTYPES = ("<f4",)
TOKEN_WIDTHS = {"u16": 2, "u32": 4}


@dataclass(frozen=True)
class Fault:
    name: str  # a refusal of the registry: data-bad-header, data-wrong-dtype, ...
    message: str


@dataclass(frozen=True)
class Array:
    """A `.npy` array's header: its dtype string, shape and where its bytes lie."""

    descr: str
    shape: tuple[int, ...]
    offset: int  # of the first element, in the buffer the header was read from
    nbytes: int

    def shape_text(self) -> str:
        return (
            "("
            + ", ".join(str(n) for n in self.shape)
            + ("," if len(self.shape) == 1 else "")
            + ")"
        )


def _u16(b: bytes | memoryview, at: int) -> int:
    return int(struct.unpack_from("<H", b, at)[0])


def _u32(b: bytes | memoryview, at: int) -> int:
    return int(struct.unpack_from("<I", b, at)[0])


class _Text:
    """The header dictionary's tokens, read as runtime/arrays.c reads them."""

    def __init__(self, text: bytes) -> None:
        self.t, self.i = text, 0

    def ws(self) -> None:
        while self.i < len(self.t) and self.t[self.i] in b" \t\n":
            self.i += 1

    def eat(self, c: bytes) -> bool:
        self.ws()
        if self.t[self.i : self.i + 1] == c:
            self.i += 1
            return True
        return False

    def string(self) -> str | None:
        self.ws()
        if self.t[self.i : self.i + 1] != b"'":
            return None
        end = self.t.find(b"'", self.i + 1)
        if end < 0:
            return None
        s = self.t[self.i + 1 : end]
        self.i = end + 1
        return s.decode("latin-1")

    def word(self) -> str:
        self.ws()
        start = self.i
        while self.i < len(self.t) and (chr(self.t[self.i]).isalpha()):
            self.i += 1
        return self.t[start : self.i].decode("latin-1")

    def integer(self) -> int | None:
        self.ws()
        start = self.i
        while self.i < len(self.t) and 48 <= self.t[self.i] <= 57:
            self.i += 1
        if self.i == start or self.i - start > DIGITS_LIMIT:
            return None
        return int(self.t[start : self.i])


_NOT_A_DICT = "the array header is not a dictionary of 'descr', 'fortran_order' and 'shape'"


def _header_dict(text: bytes) -> tuple[object, bool, tuple[int, ...]] | None:
    """(descr: a string, or None when not one; fortran_order; shape), or None when the text
    is not the dictionary."""
    p = _Text(text)
    if not p.eat(b"{"):
        return None
    got: dict[str, object] = {}
    while not p.eat(b"}"):
        key = p.string()
        if key is None or key in got or not p.eat(b":"):
            return None
        value: object
        if key == "descr":
            value = p.string()
            if value is None:
                return None
        elif key == "fortran_order":
            word = p.word()
            if word not in ("True", "False"):
                return None
            value = word == "True"
        elif key == "shape":
            if not p.eat(b"("):
                return None
            dims: list[int] = []
            while not p.eat(b")"):
                n = p.integer()
                if n is None or len(dims) == MAX_AXES:
                    return None
                dims.append(n)
                if not p.eat(b","):
                    if not p.eat(b")"):
                        return None
                    break
            value = tuple(dims)
        else:
            return None
        got[key] = value
        if not p.eat(b","):
            if not p.eat(b"}"):
                return None
            break
    p.ws()
    if p.i != len(p.t) or set(got) != {"descr", "fortran_order", "shape"}:
        return None
    shape = got["shape"]
    assert isinstance(shape, tuple)
    return got["descr"], bool(got["fortran_order"]), shape


def read_npy(
    buf: bytes | memoryview, where: str, accepted: tuple[str, ...], role: str
) -> Array | Fault:
    """The header of the `.npy` bytes `buf` (all of them, up to the array's end), checked for an
    array of one of the `accepted` dtypes whose size is the bytes after its header. `where`
    names the file (and key) in messages, `role` the array's part (features, labels)."""
    size = len(buf)
    if size < 10 or bytes(buf[:6]) != MAGIC:
        return Fault("data-bad-header", f"{where}: not a NumPy .npy array (no \\x93NUMPY magic)")
    major, minor = buf[6], buf[7]
    if major not in (1, 2, 3) or minor != 0:
        return Fault(
            "data-bad-header",
            f"{where}: NumPy format version {major}.{minor} is not 1.0, 2.0 or 3.0",
        )
    if major == 1:
        start, length = 10, _u16(buf, 8)
    else:
        if size < 12:
            return Fault("data-bad-header", f"{where}: the array header is cut short")
        start, length = 12, _u32(buf, 8)
    if start + length > size:
        return Fault("data-bad-header", f"{where}: the array header is cut short")
    parsed = _header_dict(bytes(buf[start : start + length]))
    if parsed is None:
        return Fault("data-bad-header", f"{where}: {_NOT_A_DICT}")
    descr, fortran, shape = parsed
    if fortran:
        return Fault(
            "data-bad-header",
            f"{where}: the array is in Fortran order; save numpy.ascontiguousarray(a) instead",
        )
    if descr not in accepted:
        return Fault(
            "data-wrong-dtype",
            f"{where}: {role} of dtype '{descr}'; the {role} may be "
            + ", ".join(f"'{d}' ({DTYPES[d]})" for d in accepted),
        )
    assert isinstance(descr, str)
    itemsize = np.dtype(descr).itemsize
    count = math.prod(shape)
    after = size - (start + length)
    a = Array(descr, shape, start + length, count * itemsize)
    if count * itemsize > BYTES_LIMIT:
        return Fault(
            "data-wrong-size",
            f"{where}: shape {a.shape_text()} of '{descr}' holds more than 2^40 bytes, but "
            f"{after} bytes follow the header",
        )
    if count * itemsize != after:
        return Fault(
            "data-wrong-size",
            f"{where}: shape {a.shape_text()} of '{descr}' holds {count * itemsize} bytes, but "
            f"{after} bytes follow the header",
        )
    return a


def find_member(buf: bytes | memoryview, key: str, path: str) -> tuple[int, int] | Fault:
    """Where array `key` (`KEY.npy`) of the `.npz` bytes `buf` lies: (offset, size), from the
    zip archive's central directory, as runtime/arrays.c finds it."""
    size = len(buf)
    not_zip = Fault("data-bad-archive", f"{path}: not a .npz (zip) archive")
    cut = Fault("data-bad-archive", f"{path}: its zip directory is cut short or inconsistent")
    eocd = -1
    low = max(0, size - 22 - 65535)
    at = size - 22
    while at >= low:
        if _u32(buf, at) == 0x06054B50:
            eocd = at
            break
        at -= 1
    if eocd < 0:
        return not_zip
    entries, cd_size, cd_offset = _u16(buf, eocd + 10), _u32(buf, eocd + 12), _u32(buf, eocd + 16)
    if entries == 0xFFFF or cd_size == 0xFFFFFFFF or cd_offset == 0xFFFFFFFF:
        return Fault("data-bad-archive", f"{path}: a ZIP64 directory (more than 4 GiB)")
    if cd_offset + cd_size > eocd:
        return cut
    names: list[str] = []
    at = cd_offset
    want = key.encode() + b".npy"
    for _ in range(entries):
        if at + 46 > cd_offset + cd_size or _u32(buf, at) != 0x02014B50:
            return cut
        flags, method = _u16(buf, at + 8), _u16(buf, at + 10)
        csize, usize = _u32(buf, at + 20), _u32(buf, at + 24)
        n, e, c = _u16(buf, at + 28), _u16(buf, at + 30), _u16(buf, at + 32)
        local = _u32(buf, at + 42)
        if at + 46 + n + e + c > cd_offset + cd_size:
            return cut
        name = bytes(buf[at + 46 : at + 46 + n])
        if name == want:
            extra = at + 46 + n
            fields = _zip64(buf, extra, extra + e, usize, csize, local)
            if fields is None:
                return cut
            usize, csize, local = fields
            if flags & 1:
                return Fault("data-bad-archive", f"{path}: array `{key}` is encrypted")
            if method != 0 or csize != usize:
                return Fault(
                    "data-bad-archive",
                    f"{path}: array `{key}` is compressed (numpy.savez_compressed); "
                    "save the arrays with numpy.savez",
                )
            if local + 30 > cd_offset or _u32(buf, local) != 0x04034B50:
                return cut
            data = local + 30 + _u16(buf, local + 26) + _u16(buf, local + 28)
            if data + usize > cd_offset:
                return cut
            return data, usize
        if name.endswith(b".npy") and len(names) < 8:
            names.append(name[:-4].decode("utf-8", errors="replace"))
        at += 46 + n + e + c
    held = ", ".join(f"`{n}`" for n in names) if names else "no arrays"
    return Fault("data-key-missing", f"{path} has no array `{key}` (it holds {held})")


def _zip64(
    buf: bytes | memoryview, at: int, end: int, usize: int, csize: int, local: int
) -> tuple[int, int, int] | None:
    """The sizes and local header offset, from the ZIP64 extra field where they are 0xFFFFFFFF."""
    while at + 4 <= end:
        tag, n = _u16(buf, at), _u16(buf, at + 2)
        if at + 4 + n > end:
            return None
        if tag == 0x0001:
            q = at + 4
            values = []
            for v in (usize, csize, local):
                if v == 0xFFFFFFFF:
                    if q + 8 > at + 4 + n:
                        return None
                    v = int(struct.unpack_from("<Q", buf, q)[0])
                    q += 8
                values.append(v)
            return values[0], values[1], values[2]
        at += 4 + n
    if 0xFFFFFFFF in (usize, csize, local):
        return None
    return usize, csize, local


def values(buf: bytes | memoryview, a: Array) -> np.ndarray:
    """The array's elements, flat, in their own dtype (a view where it can be)."""
    return np.frombuffer(buf, dtype=np.dtype(a.descr), count=math.prod(a.shape), offset=a.offset)


def _value_text(v: np.generic) -> str:
    if isinstance(v, np.floating):
        return f"{float(v):.9g}"
    return str(int(v))


def features_fault(
    x: np.ndarray, rows: int, features: int, vocabulary: int, where: str
) -> str | None:
    """The first feature (in row order) the runtime refuses: not finite, or with a vocabulary
    not a token in 0 .. vocabulary-1."""
    m = x.reshape(rows, features)
    if m.dtype.kind == "f":
        bad = ~np.isfinite(m)
        if bad.any():
            r, k = np.argwhere(bad)[0]
            return f"{where}: row {r} feature {k} is not a finite number"
    if vocabulary:
        f = m.astype(np.float32) if m.dtype.kind != "f" else m
        bad = (f < 0) | (f >= np.float32(vocabulary)) | (f != np.floor(f))
        if bad.any():
            r, k = np.argwhere(bad)[0]
            return f"{where}: row {r} feature {k} is not a token in 0..{vocabulary - 1}"
    return None


def labels_fault(y: np.ndarray, rows: int, per_row: int, classes: int, where: str) -> str | None:
    """The first label (in row order) that is not a class index (class kind, `classes` > 0), or
    the first target that is not finite (regression, `classes` 0)."""
    m = y.reshape(rows, per_row)
    if classes == 0:
        bad = ~np.isfinite(m)
        if bad.any():
            r, j = np.argwhere(bad)[0]
            return f"{where}: row {r} target {j} is not a finite number"
        return None
    if m.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            bad = ~((m >= 0) & (m < np.float32(classes)) & (m == np.floor(m)))
    else:
        bad = (m < 0) | (m >= classes)
    if bad.any():
        r, j = np.argwhere(bad)[0]
        return (
            f"{where}: row {r} label {_value_text(m[r, j])} is not a class index in "
            f"0..{classes - 1}"
        )
    return None


def tokens_fault(
    buf: bytes | memoryview, width: int, used: int, vocabulary: int, path: str
) -> str | None:
    """The first of the `used` tokens that is not below the vocabulary."""
    t = np.frombuffer(buf, dtype="<u2" if width == 2 else "<u4", count=used)
    bad = t >= vocabulary
    if bad.any():
        p = int(np.argmax(bad))
        return f"{path}: token {p} is {int(t[p])}, not a token in 0..{vocabulary - 1}"
    return None


def shape_fault(
    x: Array, y: Array, xwhere: str, ywhere: str, class_kind: bool, outputs: int
) -> tuple[int, int, int] | tuple[Fault, bool]:
    """(rows, features, labels or targets per row) of two arrays that fit together, or the
    first fault and whether it is the labels'."""
    if len(x.shape) < 2:
        return Fault(
            "data-wrong-shape",
            f"{xwhere}: features of shape {x.shape_text()}; they need at least 2 axes "
            "(rows, features…)",
        ), False
    rows, features = x.shape[0], math.prod(x.shape[1:])
    if rows == 0 or features == 0:
        return Fault(
            "data-wrong-shape",
            f"{xwhere}: features of shape {x.shape_text()} hold no "
            + ("rows" if rows == 0 else "features"),
        ), False
    role = "labels" if class_kind else "targets"
    if len(y.shape) not in (1, 2):
        return Fault(
            "data-wrong-shape",
            f"{ywhere}: {role} of shape {y.shape_text()}; they are (rows,) or (rows, n)",
        ), True
    if y.shape[0] != rows:
        return Fault(
            "data-wrong-shape",
            f"{ywhere}: {y.shape[0]} rows of {role}, but {rows} rows of features",
        ), True
    per_row = 1 if len(y.shape) == 1 else y.shape[1]
    if per_row == 0 or (class_kind and per_row > 65_536):
        return Fault(
            "data-wrong-shape", f"{ywhere}: {per_row} {role} per row; 1 to 65,536 fit"
        ), True
    if not class_kind and per_row != outputs:
        return Fault(
            "data-wrong-shape",
            f"{ywhere}: {per_row} targets per row, but the data item declares `targets: {outputs}`",
        ), True
    return rows, features, per_row


def token_file_fault(
    buf: bytes | memoryview, width: int, length: int, vocabulary: int, path: str
) -> Fault | None:
    """A token file's fault, in the runtime's order: its size, its length, its tokens."""
    size = len(buf)
    if size % width:
        return Fault(
            "data-wrong-size",
            f"{path}: {size} bytes is not a whole number of uint{8 * width} tokens "
            f"({width} bytes each)",
        )
    n = size // width
    if n < length + 1:
        return Fault(
            "data-wrong-shape",
            f"{path}: {n} tokens; a window of length {length} needs {length + 1}",
        )
    used = (n - 1) // length * length + 1
    fault = tokens_fault(buf, width, used, vocabulary, path)
    return Fault("data-malformed", fault) if fault else None
