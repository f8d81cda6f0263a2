"""The runtime's JSON reader for checkpoint manifests (runtime/json.c), built alone into a shared
library with undefined-behaviour checks that trap and driven through ctypes: every JSON text
Python writes reads back to the same tree, arbitrary bytes never crash it, and whatever it
accepts Python's strict reading accepts too."""

from __future__ import annotations

import ctypes
import json
import platform
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alpha_core.link.toolchain import run_zig, runtime_dir

MACHINE = platform.machine().lower()
TARGET = {"amd64": "x86_64", "arm64": "aarch64"}.get(MACHINE, MACHINE) + "-linux-gnu"
NULL, FALSE, TRUE, NUMBER, STRING, ARRAY, OBJECT = range(7)


class Node(ctypes.Structure):
    pass


Node._fields_ = [
    ("type", ctypes.c_int),
    ("key", ctypes.c_char_p),
    ("string", ctypes.c_char_p),
    ("integer", ctypes.c_uint64),
    ("is_integer", ctypes.c_int),
    ("child", ctypes.POINTER(Node)),
    ("next", ctypes.POINTER(Node)),
]


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    out = tmp_path_factory.mktemp("json") / "libjson.so"
    flags = ["-std=c11", "-O1", "-fPIC", "-Wall", "-Wextra", "-Werror"]
    flags += ["-fsanitize=undefined", "-fsanitize-trap=undefined"]
    source = str(runtime_dir() / "json.c")
    run_zig(["cc", "-shared", "-target", TARGET, *flags, source, "-o", str(out)], cwd=out.parent)
    library = ctypes.CDLL(str(out))
    library.json_parse.restype = ctypes.POINTER(Node)
    library.json_parse.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    library.json_free.argtypes = [ctypes.POINTER(Node)]
    return library


def parse(lib: ctypes.CDLL, text: bytes) -> tuple[Any, str | None]:
    """(the tree as Python values, None) or (None, the error)."""
    buffer = ctypes.create_string_buffer(text + b"\0")  # decoded in place: keep it alive
    error = ctypes.create_string_buffer(160)
    root = lib.json_parse(buffer, error)
    if not root:
        return None, error.value.decode()
    try:
        return convert(root.contents), None
    finally:
        lib.json_free(root)


def convert(n: Node) -> Any:
    if n.type in (NULL, FALSE, TRUE):
        return (None, False, True)[n.type]
    if n.type == NUMBER:
        return int(n.integer) if n.is_integer else "not-an-integer"
    if n.type == STRING:
        return n.string.decode()
    items = []
    child = n.child
    while child:
        items.append(child.contents)
        child = child.contents.next
    if n.type == ARRAY:
        return [convert(c) for c in items]
    return {c.key.decode(): convert(c) for c in items}


def expected(value: Any) -> Any:
    """What the C reader keeps of a Python value: integers in [0, 2^64), other numbers marked."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and 0 <= value < 1 << 64:
        return value
    if isinstance(value, int | float):
        return "not-an-integer"
    if isinstance(value, list):
        return [expected(v) for v in value]
    return {k: expected(v) for k, v in value.items()}


TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\0"), max_size=10)
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(value=VALUES, indent=st.sampled_from([None, 1]), ascii=st.booleans())
def test_what_python_writes_reads_back(
    lib: ctypes.CDLL, value: Any, indent: int | None, ascii: bool
) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii).encode()
    tree, error = parse(lib, text)
    assert error is None, (text, error)
    assert tree == expected(value)


def _strict(text: bytes) -> bool:
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        if len({k for k, _ in items}) != len(items):
            raise ValueError("duplicate")
        return dict(items)

    def constant(name: str) -> Any:
        raise ValueError(name)

    try:
        json.loads(text.decode("utf-8"), object_pairs_hook=pairs, parse_constant=constant)
    except (ValueError, RecursionError):
        return False
    return True


@settings(max_examples=400, deadline=None)
@given(
    text=st.binary(max_size=120)
    | VALUES.map(lambda v: json.dumps(v).encode()).flatmap(
        lambda t: st.integers(0, max(0, len(t) - 1)).map(lambda i: t[:i] + t[i + 1 :])
    )
)
def test_arbitrary_bytes_never_crash_it(lib: ctypes.CDLL, text: bytes) -> None:
    if b"\0" in text:
        text = text.replace(b"\0", b" ")
    tree, error = parse(lib, text)
    if error is None:
        assert _strict(text), text


def test_limits(lib: ctypes.CDLL) -> None:
    assert parse(lib, b"[" * 33 + b"]" * 33)[0] is not None
    assert parse(lib, b"[" * 34 + b"]" * 34)[1] == "nesting deeper than 32 levels"
    assert parse(lib, b'{"a": 1, "a": 2}')[1] == "a duplicate object key"
    assert parse(lib, b'"\\u0000"')[1] is not None
    assert parse(lib, b'"\\ud800"')[1] is not None
    assert parse(lib, b'"\\ud83d\\ude00"')[0] == "\U0001f600"
    assert parse(lib, b"18446744073709551615")[0] == 2**64 - 1
    assert parse(lib, b"18446744073709551616")[0] == "not-an-integer"
    assert parse(lib, b"-0")[0] == "not-an-integer"
    for bad in (b"", b"01", b"1.", b"[1,]", b"{,}", b'{"a"}', b"nul", b"tru", b'"\\x"', b"1 2"):
        assert parse(lib, bad)[1] is not None, bad
