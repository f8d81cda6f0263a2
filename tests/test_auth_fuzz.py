"""The authentication of frame version 3, through runtime/frame.c, frame_mac.c, hmac.c and
sha256.c built alone into a shared library with undefined-behaviour traps (as
tests/test_net_frames.py builds it): HMAC-SHA256 against Python's hmac module and RFC 4231, the
handshake's proofs and link keys and the frame MAC (GF(2^128) with PCLMULQDQ, and the portable
multiply forced) against the Python mirror (alpha_core/link/frames.py), and `frame_open`, the
receiving order of an authenticated frame, fuzzed with random bytes, truncations, bit flips,
replays, reorderings and frames spliced from another link: every input is refused by a
registered name, and only the right frame at the right place on the right link is accepted."""

from __future__ import annotations

import ctypes
import hashlib
import hmac
import random
import struct
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_net_frames import FRAME_SOURCES, RUNTIME_NAMES, CExpect, CHeader, _zig_target

from alpha_core.link import frames
from alpha_core.link.toolchain import run_zig, runtime_dir

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAMES = {"frame-corrupt", "frame-version-mismatch", "frame-oversize", "frame-unexpected",
         "frame-forged"}  # fmt: skip


class CHmac(ctypes.Structure):
    """struct hmac: two struct sha256 (8 words, a length, a 64-byte block, a size_t)."""

    _fields_ = [("bytes", ctypes.c_uint8 * (2 * (32 + 8 + 64 + 8)))]


class CFrameKey(ctypes.Structure):
    """struct frame_key: H^1..H^32 (32 pairs of u64), then a struct hmac."""

    _fields_ = [("powers", ctypes.c_uint64 * 64), ("pad", CHmac)]


class CHello(ctypes.Structure):
    _fields_ = [
        ("plan_identity", ctypes.c_uint8 * 32),
        ("sender", ctypes.c_uint32),
        ("receiver", ctypes.c_uint32),
        ("epoch", ctypes.c_uint32),
        ("n_roles", ctypes.c_uint32),
        ("nonce", ctypes.c_uint8 * 32),
        ("proof", ctypes.c_uint8 * 32),
    ]


class Lib:
    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        lib.hmac_sha256.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                    ctypes.c_size_t, ctypes.c_char_p]  # fmt: skip
        lib.hmac_init.argtypes = [ctypes.POINTER(CHmac), ctypes.c_char_p, ctypes.c_size_t]
        lib.hmac_update.argtypes = [ctypes.POINTER(CHmac), ctypes.c_char_p, ctypes.c_size_t]
        lib.hmac_final.argtypes = [ctypes.POINTER(CHmac), ctypes.c_char_p]
        lib.frame_proof.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(CHello),
                                    ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]  # fmt: skip
        text = ctypes.c_char_p
        lib.frame_link_keys.argtypes = [text, ctypes.POINTER(CHello), text, text, text]
        lib.frame_open.restype = ctypes.c_char_p
        lib.frame_key_init.argtypes = [ctypes.POINTER(CFrameKey), ctypes.c_char_p]
        lib.frame_mac.argtypes = [ctypes.POINTER(CFrameKey), ctypes.c_uint64, ctypes.c_char_p,
                                  ctypes.c_char_p, ctypes.c_uint64, ctypes.c_char_p,
                                  ctypes.c_uint64, ctypes.c_char_p]  # fmt: skip
        lib.frame_mac_portable.argtypes = [ctypes.c_int]
        lib.frame_open.argtypes = [ctypes.POINTER(CFrameKey), ctypes.c_uint64, ctypes.c_char_p,
                                   ctypes.c_size_t, ctypes.POINTER(CHeader),
                                   ctypes.POINTER(CExpect), ctypes.c_uint64]  # fmt: skip
        lib.frame_reason.restype = ctypes.c_char_p
        assert ctypes.sizeof(CHmac) == 2 * 112  # the C struct's size on LP64
        assert ctypes.sizeof(CFrameKey) == 512 + 2 * 112

    def hmac(self, key: bytes, data: bytes) -> bytes:
        out = ctypes.create_string_buffer(32)
        self.lib.hmac_sha256(key, len(key), data, len(data), out)
        return out.raw

    def keyed(self, key: bytes) -> CHmac:
        state = CHmac()
        self.lib.hmac_init(ctypes.byref(state), key, len(key))
        return state

    def hmac_in_parts(self, key: bytes, parts: list[bytes]) -> bytes:
        state = self.keyed(key)
        for part in parts:
            self.lib.hmac_update(ctypes.byref(state), part, len(part))
        out = ctypes.create_string_buffer(32)
        self.lib.hmac_final(ctypes.byref(state), out)
        return out.raw

    def frame_key(self, key: bytes) -> CFrameKey:
        state = CFrameKey()
        self.lib.frame_key_init(ctypes.byref(state), key)
        return state

    def mac(self, key: bytes, seq: int, data: bytes, cut: int | None = None,
            portable: bool = False, narrow: bool = False) -> bytes:  # fmt: skip
        """The C tag of a frame (header, then the rest given as two parts cut at `cut`);
        portable: the portable multiply; narrow: no wider than the 128-bit carry-less one."""
        state = self.frame_key(key)
        rest = data[frames.HEADER_BYTES :]
        cut = len(rest) if cut is None else cut
        out = ctypes.create_string_buffer(frames.MAC_BYTES)
        self.lib.frame_mac_portable(2 if narrow else int(portable))
        try:
            self.lib.frame_mac(ctypes.byref(state), seq, data[: frames.HEADER_BYTES],
                               rest[:cut] or None, cut, rest[cut:] or None, len(rest) - cut,
                               out)  # fmt: skip
        finally:
            self.lib.frame_mac_portable(0)
        return out.raw

    def proof(self, secret: bytes, from_dialer: bool, own: frames.Hello, nd: bytes,
              na: bytes) -> bytes:  # fmt: skip
        out = ctypes.create_string_buffer(32)
        self.lib.frame_proof(secret, int(from_dialer), ctypes.byref(c_hello(own)), nd, na, out)
        return out.raw

    def link_keys(self, secret: bytes, dialer: frames.Hello, na: bytes) -> tuple[bytes, bytes]:
        a, d = ctypes.create_string_buffer(32), ctypes.create_string_buffer(32)
        self.lib.frame_link_keys(secret, ctypes.byref(c_hello(dialer)), na, a, d)
        return a.raw, d.raw

    def open(self, key: bytes, seq: int, data: bytes, expect: frames.Expect) -> str | None:
        state = self.frame_key(key)
        out = CHeader()
        e = CExpect(*(getattr(expect, f[0]) for f in CExpect._fields_))
        name = self.lib.frame_open(ctypes.byref(state), seq, data, len(data), ctypes.byref(out),
                                   ctypes.byref(e), 0)  # fmt: skip
        return None if name is None else name.decode()


def c_hello(h: frames.Hello) -> CHello:
    def b32(b: bytes) -> ctypes.Array[ctypes.c_uint8]:
        return (ctypes.c_uint8 * 32)(*b)

    return CHello(b32(h.plan_identity), h.sender, h.receiver, h.epoch, h.n_roles, b32(h.nonce),
                  b32(h.proof))  # fmt: skip


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> Lib:
    out = tmp_path_factory.mktemp("auth") / "libauth.so"
    sources = [str(runtime_dir() / f) for f in FRAME_SOURCES]
    flags = ["-std=c11", "-O1", "-fPIC", "-Wall", "-Wextra", "-Werror", "-ffp-contract=off"]
    traps = ["-fsanitize=undefined", "-fsanitize-trap=undefined"]
    run_zig(["cc", "-shared", "-target", _zig_target(), *flags, *traps, *sources, "-o", str(out)],
            cwd=out.parent)  # fmt: skip
    return Lib(ctypes.CDLL(str(out)))


# ---- HMAC-SHA256 ------------------------------------------------------------------------------

# RFC 4231, test cases 1-4, 6 and 7 (case 5 is a truncated MAC): key, data, HMAC-SHA-256.
RFC4231 = [
    (b"\x0b" * 20, b"Hi There",
     "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
    (b"Jefe", b"what do ya want for nothing?",
     "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
    (b"\xaa" * 20, b"\xdd" * 50,
     "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
    (bytes(range(1, 26)), b"\xcd" * 50,
     "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
    (b"\xaa" * 131, b"Test Using Larger Than Block-Size Key - Hash Key First",
     "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
    (b"\xaa" * 131,
     b"This is a test using a larger than block-size key and a larger than block-size data. "
     b"The key needs to be hashed before being used by the HMAC algorithm.",
     "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
]  # fmt: skip


@pytest.mark.parametrize(("key", "data", "mac"), RFC4231)
def test_hmac_gives_the_rfc_4231_values(lib: Lib, key: bytes, data: bytes, mac: str) -> None:
    assert lib.hmac(key, data).hex() == mac
    assert hmac.new(key, data, hashlib.sha256).hexdigest() == mac


@FUZZ
@given(key=st.binary(max_size=200), data=st.binary(max_size=3000), cuts=st.lists(
    st.integers(0, 3000), max_size=4))  # fmt: skip
def test_hmac_agrees_with_python_in_one_part_or_several(
    lib: Lib, key: bytes, data: bytes, cuts: list[int]
) -> None:
    want = hmac.new(key, data, hashlib.sha256).digest()
    assert lib.hmac(key, data) == want
    points = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    parts = [data[a:b] for a, b in zip(points, points[1:], strict=False)]
    assert lib.hmac_in_parts(key, parts) == want


def test_hmac_of_a_4_mib_frame_agrees_with_python(lib: Lib) -> None:
    data = random.Random(4).randbytes(4 << 20)
    key = bytes(range(32))
    assert lib.hmac_in_parts(key, [data[:64], data[64:]]) == hmac.digest(key, data, "sha256")


# ---- the handshake's proofs and keys ------------------------------------------------------------

hellos = st.builds(
    frames.Hello,
    st.binary(min_size=32, max_size=32),
    st.integers(0, 2**32 - 1),
    st.integers(0, 2**32 - 1),
    st.integers(0, 2**32 - 1),
    st.integers(0, 2**32 - 1),
    st.binary(min_size=32, max_size=32),
)
thirty_two = st.binary(min_size=32, max_size=32)


@FUZZ
@given(secret=thirty_two, own=hellos, nd=thirty_two, na=thirty_two)
def test_proofs_and_link_keys_agree_with_the_mirror(
    lib: Lib, secret: bytes, own: frames.Hello, nd: bytes, na: bytes
) -> None:
    for from_dialer in (True, False):
        assert lib.proof(secret, from_dialer, own, nd, na) == frames.proof(
            secret, from_dialer, own, nd, na
        )
    assert lib.link_keys(secret, own, na) == frames.link_keys(secret, own, na)
    # The two labels and the two directions never coincide.
    assert frames.proof(secret, True, own, nd, na) != frames.proof(secret, False, own, nd, na)
    to_acceptor, to_dialer = frames.link_keys(secret, own, na)
    assert to_acceptor != to_dialer


@FUZZ
@given(secret=thirty_two, own=hellos, nd=thirty_two, na=thirty_two, data=st.data())
def test_a_proof_binds_every_field_and_both_nonces(
    lib: Lib, secret: bytes, own: frames.Hello, nd: bytes, na: bytes, data: st.DataObject
) -> None:
    """A proof made for one handshake is worth nothing in another that differs anywhere."""
    good = lib.proof(secret, True, own, nd, na)
    field = data.draw(st.sampled_from(["plan_identity", "sender", "receiver", "epoch",
                                       "n_roles", "nd", "na", "secret"]))  # fmt: skip
    if field in ("nd", "na", "secret"):
        other = bytearray({"nd": nd, "na": na, "secret": secret}[field])
        other[data.draw(st.integers(0, 31))] ^= 1 << data.draw(st.integers(0, 7))
        args = {"nd": nd, "na": na, "secret": secret, field: bytes(other)}
        changed = lib.proof(args["secret"], True, own, args["nd"], args["na"])
    elif field == "plan_identity":
        flipped = bytes([own.plan_identity[0] ^ 1]) + own.plan_identity[1:]
        changed = lib.proof(secret, True, replace(own, plan_identity=flipped), nd, na)
    else:
        value = getattr(own, field) ^ (1 << data.draw(st.integers(0, 31)))
        changed = lib.proof(secret, True, replace(own, **{field: value}), nd, na)
    assert changed != good


# ---- the frame MAC: GF(2^128) ------------------------------------------------------------------


def fold_reduce(a: int, b: int) -> int:
    """The runtime's product, step by step on ints: four 64x64 carry-less products into
    [p3:p2:p1:p0], p3 * 0x87 added at bit 64, then p2 * 0x87 added at bit 0."""
    mask = 2**64 - 1
    a0, a1, b0, b1 = a & mask, a >> 64, b & mask, b >> 64
    wide = (frames.clmul(a0, b0) ^ frames.clmul(a1, b1) << 128
            ^ (frames.clmul(a0, b1) ^ frames.clmul(a1, b0)) << 64)  # fmt: skip
    p = [(wide >> (64 * i)) & mask for i in range(4)]
    t = frames.clmul(p[3], 0x87)
    p[1] ^= t & mask
    p[2] ^= t >> 64
    t = frames.clmul(p[2], 0x87)
    p[0] ^= t & mask
    p[1] ^= t >> 64
    return p[1] << 64 | p[0]


elements = st.one_of(st.integers(0, 2**128 - 1), st.sampled_from([0, 1, 2**127, 2**128 - 1]))


@FUZZ
@given(a=elements, b=elements)
def test_the_two_fold_reduction_is_the_product_modulo_the_field_polynomial(a: int, b: int) -> None:
    """The mirror's textbook product (long division by x^128 + x^7 + x^2 + x + 1) and the
    runtime's two folds agree, so the folds lose nothing at the top."""
    want = frames.poly_mod(frames.clmul(a, b))
    assert fold_reduce(a, b) == want == frames.gf_mul(b, a)
    assert want < 2**128


def test_the_field_is_the_one_named() -> None:
    # x^127 * x = x^128 = x^7 + x^2 + x + 1
    assert frames.gf_mul(2**127, 2) == 0x87
    # multiplicative group of order 2^128 - 1: a^(2^128) = a
    a = 0x0123456789ABCDEF_FEDCBA9876543210
    power = a
    for _ in range(128):
        power = frames.gf_mul(power, power)
    assert power == a


frame_bodies = st.binary(max_size=700)


@FUZZ
@given(key=thirty_two, seq=st.integers(0, 2**64 - 1), header=st.binary(min_size=64, max_size=64),
       body=frame_bodies, data=st.data())  # fmt: skip
def test_the_frame_mac_agrees_with_the_mirror_on_every_path_and_cut(
    lib: Lib, key: bytes, seq: int, header: bytes, body: bytes, data: st.DataObject
) -> None:
    """The carry-less multiply of this CPU and the portable one give the mirror's tag, whatever
    the lengths and wherever the payload is cut into its two parts."""
    frame = header + body
    cut = data.draw(st.integers(0, len(body)))
    want = frames.mac(key, seq, frame)
    assert len(want) == frames.MAC_BYTES == 16
    assert lib.mac(key, seq, frame, cut) == want
    assert lib.mac(key, seq, frame, cut, portable=True) == want


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=thirty_two, seq=st.integers(0, 2**64 - 1), header=st.binary(min_size=64, max_size=64),
       size=st.integers(1100, 4200), data=st.data())  # fmt: skip
def test_the_wide_carry_less_path_gives_the_mirror_tags(
    lib: Lib, key: bytes, seq: int, header: bytes, size: int, data: st.DataObject
) -> None:
    """Frames long enough for 32 blocks a step (AVX-512 VPCLMULQDQ, where this CPU has it; a
    part of 64 blocks or more takes it) agree with the 128-bit carry-less multiply and the
    mirror, wherever the payload is cut: around whole groups and with blocks left over."""
    body = random.Random(size ^ seq).randbytes(size)
    frame = header + body
    cut = data.draw(st.sampled_from([0, 1, 1024, 1040, size - 1024, size - 4, size]))
    want = frames.mac(key, seq, frame)
    assert lib.mac(key, seq, frame, cut) == lib.mac(key, seq, frame, cut, narrow=True) == want


def test_the_frame_mac_of_real_sizes_agrees_on_both_paths(lib: Lib) -> None:
    """A 9.6 KB piece against the mirror; 4 MB (too slow for the mirror) portable against
    accelerated, cut as net.c cuts a piece: the gradient, then the loss float."""
    rng = random.Random(9)
    key = rng.randbytes(32)
    small = rng.randbytes(64 + 4 * 2411)
    want = frames.mac(key, 5, small)
    assert lib.mac(key, 5, small, 4 * 2410) == lib.mac(key, 5, small, 4 * 2410, True) == want
    large = rng.randbytes(64 + 4 * 1_024_001)
    tag = lib.mac(key, 2**40, large, 4 * 1_024_000)
    assert tag == lib.mac(key, 2**40, large, 4 * 1_024_000, portable=True)
    assert tag == lib.mac(key, 2**40, large, 4 * 1_024_000, narrow=True)
    assert tag != lib.mac(key, 2**40 + 1, large, 4 * 1_024_000)


@FUZZ
@given(key=thirty_two, seq=st.integers(0, 2**64 - 2), body=frame_bodies)
def test_the_tag_changes_with_the_sequence_number_the_key_and_trailing_zeros(
    lib: Lib, key: bytes, seq: int, body: bytes
) -> None:
    """The pad is per sequence number; the length block tells a payload from itself padded
    with zeros (which the zero-padding alone would not)."""
    frame = bytes(64) + body
    tag = lib.mac(key, seq, frame)
    assert tag != lib.mac(key, seq + 1, frame)
    assert tag != lib.mac(bytes(a ^ 1 for a in key), seq, frame)
    assert tag != lib.mac(key, seq, frame + bytes(4))


@pytest.fixture(scope="module")
def aarch64_mac(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """frame_mac.c (with hmac.c and sha256.c) in a static AArch64 program, run under qemu-user,
    whose CPU has PMULL, so the Armv8 carry-less multiply is the one taken (and the portable
    one when a record asks)."""
    out = tmp_path_factory.mktemp("mac-a64") / "frame_mac_stdin"
    fixture = Path(__file__).parent / "fixtures" / "runtime" / "frame_mac_stdin.c"
    flags = ["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-ffp-contract=off",
             f"-I{runtime_dir()}"]  # fmt: skip
    sources = [str(fixture), *(str(runtime_dir() / f) for f in ("frame_mac.c", "hmac.c",
                                                                  "sha256.c"))]  # fmt: skip
    run_zig(["cc", "-target", "aarch64-linux-musl", *flags, *sources, "-o", str(out)],
            cwd=out.parent)  # fmt: skip
    return out


def test_the_aarch64_pmull_path_gives_the_mirror_tags(aarch64_mac: Path) -> None:
    """Records of (key, seq, cut, portable, frame) through the AArch64 build: every tag is the
    mirror's, so x86-64 and AArch64 roles accept each other's frames."""
    rng = random.Random(64)
    records, want = [], []
    sizes = [0, 1, 15, 16, 17, 47, 48, 49, 63, 64, 65, 4 * 2411] + [
        rng.randrange(700) for _ in range(20)
    ]
    for i, n in enumerate(sizes):
        key, seq, frame = rng.randbytes(32), rng.getrandbits(64), rng.randbytes(64 + n)
        cut = rng.randrange(n + 1)
        head = struct.pack("<IQQB", len(frame), seq, cut, i % 2)
        records.append(head + key + frame)
        want.append(frames.mac(key, seq, frame).hex())
    run = subprocess.run(["qemu-aarch64", str(aarch64_mac)], input=b"".join(records),
                         capture_output=True, timeout=120, check=False)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.decode().split() == want


# ---- frame_open: an authenticated frame as net.c receives it ----------------------------------

N_PARAMS = 15
KEY = bytes(range(32))
OTHER_LINK_KEY = bytes(range(32, 64))


def round_frame(r: int, sender: int = 1) -> bytes:
    values = struct.pack(f"<{N_PARAMS + 1}f", *(float(r * 100 + i) for i in range(N_PARAMS + 1)))
    return frames.piece(sender, r, 2, 4, values)


def expect(r: int, sender: int = 1) -> frames.Expect:
    return frames.Expect(frames.PIECE, sender, r, 0, 2, 4, N_PARAMS + 1)


def check(name: str | None) -> None:
    assert name in NAMES and name in RUNTIME_NAMES, name


def test_the_right_frame_at_the_right_place_is_accepted(lib: Lib) -> None:
    for seq in range(5):
        assert lib.open(KEY, seq, frames.seal(KEY, seq, round_frame(seq)), expect(seq)) is None, (
            lib.lib.frame_reason()
        )


def test_a_macced_frame_has_no_payload_crc_and_damage_is_forged(lib: Lib) -> None:
    """Frame version 3 writes 0 as the payload CRC of a MACed frame and never checks it (the
    MAC covers the payload; version 2 computed and checked both): such a frame is accepted, and
    a payload byte changed after the MAC is named frame-forged, not frame-corrupt."""
    body = bytearray(round_frame(2))
    body[56:60] = bytes(4)
    body[60:64] = frames.crc32c(bytes(body[:60])).to_bytes(4, "little")
    sealed = frames.seal(KEY, 2, bytes(body))
    assert lib.open(KEY, 2, sealed, expect(2)) is None, lib.lib.frame_reason()
    damaged = bytearray(sealed)
    damaged[frames.HEADER_BYTES + 5] ^= 0x40
    assert lib.open(KEY, 2, bytes(damaged), expect(2)) == "frame-forged"


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes_are_refused_by_name(lib: Lib, data: bytes) -> None:
    check(lib.open(KEY, 0, data, expect(0)))


@FUZZ
@given(st.data())
def test_truncated_grown_and_flipped_frames_are_refused_by_name(
    lib: Lib, data: st.DataObject
) -> None:
    sealed = bytearray(frames.seal(KEY, 3, round_frame(3)))
    how = data.draw(st.sampled_from(["cut", "grow", "flip", "mac-only"]))
    if how == "cut":
        del sealed[data.draw(st.integers(0, len(sealed) - 1)) :]
    elif how == "grow":
        sealed += data.draw(st.binary(min_size=1, max_size=40))
    elif how == "flip":
        bit = data.draw(st.integers(0, 8 * len(sealed) - 1))
        sealed[bit // 8] ^= 1 << (bit % 8)
    else:  # a valid header and payload whose MAC is anything else
        m = frames.MAC_BYTES
        sealed[-m:] = data.draw(st.binary(min_size=m, max_size=m).filter(
            lambda tag: tag != bytes(sealed[-m:])))  # fmt: skip
    name = lib.open(KEY, 3, bytes(sealed), expect(3))
    check(name)
    if how == "flip" and bit >= 8 * 64:  # the header still decodes: the MAC catches it
        assert name == "frame-forged"


@FUZZ
@given(recorded=st.integers(0, 7), at=st.integers(0, 7))
def test_a_replayed_or_reordered_frame_is_forged(lib: Lib, recorded: int, at: int) -> None:
    """The receiver at position `at` gets the frame recorded at `recorded`: accepted only when
    they are the same; its header rewritten to the expected round (CRC fixed), still forged."""
    sealed = frames.seal(KEY, recorded, round_frame(recorded))
    name = lib.open(KEY, at, sealed, expect(at))
    if recorded == at:
        assert name is None
        return
    assert name in {"frame-forged"}, (name, lib.lib.frame_reason())
    body = bytearray(sealed[: -frames.MAC_BYTES])
    body[12:16] = at.to_bytes(4, "little")
    body[60:64] = frames.crc32c(bytes(body[:60])).to_bytes(4, "little")
    tag = sealed[-frames.MAC_BYTES :]
    assert lib.open(KEY, at, bytes(body) + tag, expect(at)) == "frame-forged"


@FUZZ
@given(seq=st.integers(0, 2**40))
def test_a_frame_spliced_from_another_link_is_forged(lib: Lib, seq: int) -> None:
    """The same frame, same position, same header, but sealed with another link's key."""
    sealed = frames.seal(OTHER_LINK_KEY, seq, round_frame(2))
    assert lib.open(KEY, seq, sealed, expect(2)) == "frame-forged"
    assert lib.open(OTHER_LINK_KEY, seq, sealed, expect(2)) is None


@FUZZ
@given(st.data())
def test_a_sequence_of_deliveries_accepts_exactly_the_honest_stream(
    lib: Lib, data: st.DataObject
) -> None:
    """A stream of deliveries (honest, replayed, dropped, swapped, foreign): the receiver takes
    frames in order while they are the honest ones and refuses by name at the first that is
    not, as a role does (the first refusal ends it)."""
    honest = [frames.seal(KEY, s, round_frame(s)) for s in range(8)]
    stream: list[bytes] = []
    for s in range(8):
        how = data.draw(st.sampled_from(["honest"] * 4 + ["replay", "skip", "foreign", "noise"]))
        if how == "honest":
            stream.append(honest[s])
        elif how == "replay":
            stream.append(honest[data.draw(st.integers(0, 7))])
        elif how == "skip":
            stream.append(honest[min(s + 1, 7)])
        elif how == "foreign":
            stream.append(frames.seal(OTHER_LINK_KEY, s, round_frame(s)))
        else:
            stream.append(data.draw(st.binary(max_size=200)))
    for position, delivered in enumerate(stream):
        name = lib.open(KEY, position, delivered, expect(position))
        if delivered == honest[position]:
            assert name is None
        else:
            check(name)
            break
