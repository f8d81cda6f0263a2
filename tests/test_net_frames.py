"""Fuzzing the frame decoder: runtime/frame.c (with crc32c.c, frame_mac.c, hmac.c and sha256.c)
built alone into a shared library (with undefined-behaviour checks that trap), driven through
ctypes with
random and mutated frames. The decoder must never crash, must refuse every malformed frame by a
registered-looking name, must agree with the Python mirror (alpha_core/link/frames.py), and
valid frames must round-trip."""

from __future__ import annotations

import ctypes
import platform
import re
import struct
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alpha_core.link import frames
from alpha_core.link.toolchain import run_zig, runtime_dir

RUNTIME_NAMES = set(
    re.findall(r'#define REFUSAL_\w+ "([a-z-]+)"', (runtime_dir() / "refusal.h").read_text())
)
FRAME_NAMES = {"frame-corrupt", "frame-version-mismatch", "frame-oversize", "frame-unexpected"}
KEBAB = re.compile(r"^[a-z]+(-[a-z]+)*$")


class CHeader(ctypes.Structure):
    _fields_ = [
        ("magic", ctypes.c_uint32),
        ("version", ctypes.c_uint16),
        ("kind", ctypes.c_uint16),
        ("sender", ctypes.c_uint32),
        ("round", ctypes.c_uint32),
        ("tensor", ctypes.c_uint32),
        ("lo", ctypes.c_uint32),
        ("hi", ctypes.c_uint32),
        ("reserved", ctypes.c_uint32),
        ("start", ctypes.c_uint64),
        ("count", ctypes.c_uint64),
        ("payload_bytes", ctypes.c_uint64),
        ("payload_crc", ctypes.c_uint32),
        ("header_crc", ctypes.c_uint32),
    ]


class CExpect(ctypes.Structure):
    _fields_ = [
        ("kind", ctypes.c_uint32),
        ("sender", ctypes.c_uint32),
        ("round", ctypes.c_uint32),
        ("tensor", ctypes.c_uint32),
        ("lo", ctypes.c_uint32),
        ("hi", ctypes.c_uint32),
        ("count", ctypes.c_uint64),
    ]


class Decoder:
    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        for name in ("frame_decode_header", "frame_decode"):
            fn = getattr(lib, name)
            fn.restype = ctypes.c_char_p
            fn.argtypes = [
                ctypes.c_char_p,
                ctypes.c_size_t,
                ctypes.POINTER(CHeader),
                ctypes.POINTER(CExpect),
            ]
        lib.frame_reason.restype = ctypes.c_char_p
        lib.crc32c_update.restype = ctypes.c_uint32
        lib.crc32c_update.argtypes = [ctypes.c_uint32, ctypes.c_char_p, ctypes.c_size_t]
        lib.frame_encode_header.argtypes = [ctypes.POINTER(CHeader), ctypes.c_char_p]

    def decode(
        self, data: bytes, expect: frames.Expect, whole: bool = True
    ) -> tuple[CHeader, str | None]:
        out = CHeader()
        e = CExpect(*(getattr(expect, field[0]) for field in CExpect._fields_))
        fn = self.lib.frame_decode if whole else self.lib.frame_decode_header
        name = fn(data, len(data), ctypes.byref(out), ctypes.byref(e))
        return out, None if name is None else name.decode()


def _zig_target() -> str:
    machine = platform.machine().lower()
    return f"{ {'amd64': 'x86_64', 'arm64': 'aarch64'}.get(machine, machine) }-linux-gnu"


@pytest.fixture(scope="module")
def decoder(tmp_path_factory: pytest.TempPathFactory) -> Decoder:
    out = tmp_path_factory.mktemp("frames") / "libframe.so"
    sources = [str(runtime_dir() / f) for f in FRAME_SOURCES]
    flags = ["-std=c11", "-O1", "-fPIC", "-Wall", "-Wextra", "-Werror", "-ffp-contract=off"]
    traps = ["-fsanitize=undefined", "-fsanitize-trap=undefined"]
    run_zig(["cc", "-shared", "-target", _zig_target(), *flags, *traps, *sources, "-o", str(out)],
            cwd=out.parent)  # fmt: skip
    return Decoder(ctypes.CDLL(str(out)))


# frame.c and what it needs: nothing that refuses, allocates or touches a socket.
FRAME_SOURCES = ("frame.c", "crc32c.c", "frame_mac.c", "hmac.c", "sha256.c")
N_PARAMS = 15
PIECE_EXPECT = frames.Expect(frames.PIECE, 1, 7, 0, 2, 4, N_PARAMS + 1)
HELLO_EXPECT = frames.Expect(frames.HELLO, frames.ANY, 0, 0, 0, 0, frames.HELLO_COUNT)
IDENTITY = bytes(range(32))


def valid_piece(values: bytes | None = None) -> bytes:
    values = bytes(range(4 * (N_PARAMS + 1))) if values is None else values
    return frames.piece(1, 7, 2, 4, values)


def check_refusal(name: str | None) -> None:
    assert name is not None
    assert KEBAB.match(name), name
    assert name in FRAME_NAMES and name in RUNTIME_NAMES


# ---- fixed facts --------------------------------------------------------------------------------


def test_crc32c_matches_the_check_value(decoder: Decoder) -> None:
    assert frames.crc32c(b"123456789") == 0xE3069283
    assert decoder.lib.crc32c_update(0, b"123456789", 9) == 0xE3069283
    assert decoder.lib.crc32c_update(0, b"", 0) == 0


def test_c_and_python_encode_the_same_header(decoder: Decoder) -> None:
    h = CHeader(kind=2, sender=3, round=9, tensor=0, lo=4, hi=8, start=0, count=16,
                payload_bytes=64, payload_crc=0xDEADBEEF)  # fmt: skip
    out = ctypes.create_string_buffer(64)
    decoder.lib.frame_encode_header(ctypes.byref(h), out)
    mirror = frames.Header(2, 3, 9, 0, 4, 8, count=16, payload_crc=0xDEADBEEF).encode()
    assert out.raw == mirror
    assert mirror[:4] == b"ALPH" and struct.unpack_from("<I", mirror, 60)[0] == h.header_crc


def test_a_valid_piece_and_hello_decode(decoder: Decoder) -> None:
    h, name = decoder.decode(valid_piece(), PIECE_EXPECT)
    assert name is None, decoder.lib.frame_reason()
    assert (h.sender, h.round, h.lo, h.hi, h.count) == (1, 7, 2, 4, N_PARAMS + 1)
    h, name = decoder.decode(frames.hello(IDENTITY, 2, 0, 1, 3), HELLO_EXPECT)
    assert name is None and h.sender == 2 and h.payload_bytes == 112


@pytest.mark.parametrize(
    ("change", "name"),
    [
        (dict(magic=0x12345678), "frame-corrupt"),
        (dict(version=1), "frame-version-mismatch"),
        (dict(version=2), "frame-version-mismatch"),  # HMAC-SHA256 frames, 32-byte MACs
        (dict(header_crc=0), "frame-corrupt"),
        (dict(reserved=1), "frame-corrupt"),
        (dict(kind=frames.HELLO), "frame-unexpected"),
        (dict(count=N_PARAMS + 2), "frame-oversize"),
        (dict(count=2**62, payload_bytes=2**64 - 8), "frame-oversize"),
        (dict(payload_bytes=4 * N_PARAMS + 3), "frame-oversize"),
        (dict(sender=2), "frame-unexpected"),
        (dict(round=8), "frame-unexpected"),
        (dict(tensor=1), "frame-unexpected"),
        (dict(lo=0), "frame-unexpected"),
        (dict(start=1), "frame-unexpected"),
        (dict(count=N_PARAMS, payload_bytes=4 * N_PARAMS), "frame-unexpected"),
    ],
)
def test_each_check_names_its_refusal(decoder: Decoder, change: dict[str, int], name: str) -> None:
    base = frames.Header(frames.PIECE, 1, 7, 0, 2, 4, count=N_PARAMS + 1)
    header = replace(base, **change).encode()  # type: ignore[arg-type]
    _, got = decoder.decode(header, PIECE_EXPECT, whole=False)
    assert got == name, decoder.lib.frame_reason()
    assert frames.decode_header(header, PIECE_EXPECT)[1] == name
    assert decoder.lib.frame_reason()


def test_bad_payload_checksum_and_truncation_are_corrupt(decoder: Decoder) -> None:
    good = bytearray(valid_piece())
    good[-1] ^= 0x40
    assert decoder.decode(bytes(good), PIECE_EXPECT)[1] == "frame-corrupt"
    assert b"checksum" in decoder.lib.frame_reason()
    for cut in (0, 1, 63, 64, 65, len(good) - 1):
        assert decoder.decode(valid_piece()[:cut], PIECE_EXPECT)[1] == "frame-corrupt"
    assert decoder.decode(valid_piece() + b"\0", PIECE_EXPECT)[1] == "frame-corrupt"


# ---- fuzzing ----------------------------------------------------------------------------------

FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes_are_refused_like_the_mirror(decoder: Decoder, data: bytes) -> None:
    for expect in (PIECE_EXPECT, HELLO_EXPECT):
        _, name = decoder.decode(data, expect)
        check_refusal(name)
        assert frames.decode(data, expect)[1] == name


@FUZZ
@given(st.data())
def test_every_bit_flip_is_refused(decoder: Decoder, data: st.DataObject) -> None:
    frame = bytearray(valid_piece())
    bit = data.draw(st.integers(0, 8 * len(frame) - 1))
    frame[bit // 8] ^= 1 << (bit % 8)
    _, name = decoder.decode(bytes(frame), PIECE_EXPECT)
    check_refusal(name)
    assert frames.decode(bytes(frame), PIECE_EXPECT)[1] == name


@FUZZ
@given(st.data())
def test_mutated_frames_never_crash_and_agree_with_the_mirror(
    decoder: Decoder, data: st.DataObject
) -> None:
    start = data.draw(st.sampled_from([valid_piece(), frames.hello(IDENTITY, 1, 0, 1, 2)]))
    frame = bytearray(start)
    for _ in range(data.draw(st.integers(1, 6))):
        how = data.draw(st.sampled_from(["flip", "byte", "cut", "grow", "field"]))
        if how == "flip" and frame:
            i = data.draw(st.integers(0, len(frame) - 1))
            frame[i] ^= 1 << data.draw(st.integers(0, 7))
        elif how == "byte" and frame:
            frame[data.draw(st.integers(0, len(frame) - 1))] = data.draw(st.integers(0, 255))
        elif how == "cut":
            del frame[data.draw(st.integers(0, len(frame))) :]
        elif how == "grow":
            frame += data.draw(st.binary(max_size=16))
        elif how == "field" and len(frame) >= 64:
            # Rewrite a field and fix the header CRC, so the later checks are reached.
            offset, size = data.draw(st.sampled_from([(8, 4), (12, 4), (20, 4), (24, 4), (32, 8),
                                                      (40, 8), (48, 8), (6, 2)]))  # fmt: skip
            value = data.draw(st.integers(0, 2 ** (8 * size) - 1))
            frame[offset : offset + size] = value.to_bytes(size, "little")
            frame[60:64] = frames.crc32c(bytes(frame[:60])).to_bytes(4, "little")
    for expect in (PIECE_EXPECT, HELLO_EXPECT):
        h, name = decoder.decode(bytes(frame), expect)
        mirror = frames.decode(bytes(frame), expect)[1]
        assert name == mirror
        if name is not None:
            check_refusal(name)
        else:
            assert h.payload_bytes == len(frame) - 64


@FUZZ
@given(
    sender=st.integers(0, 2**32 - 3),  # 2**32 - 1 is FRAME_ANY
    round_=st.integers(0, 2**32 - 1),
    lo=st.integers(0, 2**32 - 1),
    hi=st.integers(0, 2**32 - 1),
    values=st.binary(min_size=0, max_size=64).map(lambda b: b[: len(b) // 4 * 4]),
)
def test_valid_frames_round_trip(
    decoder: Decoder, sender: int, round_: int, lo: int, hi: int, values: bytes
) -> None:
    frame = frames.piece(sender, round_, lo, hi, values)
    expect = frames.Expect(frames.PIECE, sender, round_, 0, lo, hi, len(values) // 4)
    h, name = decoder.decode(frame, expect)
    assert name is None, decoder.lib.frame_reason()
    assert (h.sender, h.round, h.lo, h.hi, h.count) == (sender, round_, lo, hi, len(values) // 4)
    assert h.payload_crc == frames.crc32c(values)
    assert frames.decode(frame, expect) == (frames.decode_header(frame, expect)[0], None)
    # A receiver expecting another sender refuses it as unexpected.
    other = replace(expect, sender=sender + 1)
    assert decoder.decode(frame, other)[1] == "frame-unexpected"


# ---- gradient-norm frames (clipping by global norm) --------------------------------------------

NORM_NODES = 3
NORM_EXPECT = frames.Expect(frames.PIECE, 1, 7, frames.TENSOR_NORM, 0, 0, NORM_NODES)


def valid_norm(start: int = 0) -> bytes:
    header = frames.Header(frames.PIECE, 1, 7, frames.TENSOR_NORM, start=start, count=NORM_NODES)
    return frames.frame(header, bytes(range(4 * NORM_NODES)))


def test_norm_frames_decode_and_no_other_tensor_passes_for_one(decoder: Decoder) -> None:
    h, name = decoder.decode(valid_norm(), NORM_EXPECT)
    assert name is None, decoder.lib.frame_reason()
    assert (h.tensor, h.count, h.payload_bytes) == (frames.TENSOR_NORM, NORM_NODES, 12)
    # a gradient piece of the same size where norm nodes are expected, and the reverse
    gradient = frames.piece(1, 7, 0, 0, bytes(4 * NORM_NODES))
    assert decoder.decode(gradient, NORM_EXPECT)[1] == "frame-unexpected"
    assert b"tensor" in decoder.lib.frame_reason()
    assert (
        decoder.decode(valid_norm(), replace(PIECE_EXPECT, count=NORM_NODES, lo=0, hi=0))[1]
        == "frame-unexpected"
    )
    assert decoder.decode(valid_piece(), NORM_EXPECT)[1] == "frame-oversize"
    # the elements they cover start where the schedule says
    at = decoder.lib.frame_decode_header_at
    at.restype = ctypes.c_char_p
    at.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(CHeader),
                   ctypes.POINTER(CExpect), ctypes.c_uint64]  # fmt: skip
    e = CExpect(*(getattr(NORM_EXPECT, field[0]) for field in CExpect._fields_))
    frame = valid_norm(start=1205)
    assert at(frame, len(frame), ctypes.byref(CHeader()), ctypes.byref(e), 1205) is None
    assert at(frame, len(frame), ctypes.byref(CHeader()), ctypes.byref(e), 0) == (
        b"frame-unexpected"
    )


@FUZZ
@given(st.data())
def test_mutated_norm_frames_are_refused_like_the_mirror(
    decoder: Decoder, data: st.DataObject
) -> None:
    frame = bytearray(valid_norm())
    for _ in range(data.draw(st.integers(1, 4))):
        how = data.draw(st.sampled_from(["flip", "cut", "field"]))
        if how == "flip":
            i = data.draw(st.integers(0, len(frame) - 1)) if frame else 0
            if frame:
                frame[i] ^= 1 << data.draw(st.integers(0, 7))
        elif how == "cut":
            del frame[data.draw(st.integers(0, len(frame))) :]
        elif len(frame) >= 64:
            offset = data.draw(st.sampled_from([8, 12, 16, 20, 24]))  # sender .. node hi
            frame[offset : offset + 4] = data.draw(st.integers(0, 2**32 - 1)).to_bytes(4, "little")
            frame[60:64] = frames.crc32c(bytes(frame[:60])).to_bytes(4, "little")
    _, name = decoder.decode(bytes(frame), NORM_EXPECT)
    assert name == frames.decode(bytes(frame), NORM_EXPECT)[1]
    if bytes(frame) != valid_norm():
        check_refusal(name)
