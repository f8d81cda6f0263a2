"""A Python mirror of the runtime's frame format (runtime/frame.h, docs/runtime.md): encoding
for tests and tools that talk to a role, and a reference decoder that follows the same checks in
the same order as `frame_decode_header`.

Every frame is a 64-byte little-endian header followed by `payload_bytes` bytes:

    magic "ALPH" u32 | version u16 | kind u16 | sender u32 | round u32 | tensor u32 | lo u32 |
    hi u32 | reserved u32 | start u64 | count u64 | payload_bytes u64 | payload_crc u32 |
    header_crc u32 (CRC-32C of the 60 bytes before it)

Version 3 authenticates (runtime/frame.h): the dialer's HELLO (with its nonce), the acceptor's
HELLO (its nonce and proof), the dialer's AUTH (its proof); then every frame is followed by a
16-byte Carter-Wegman MAC (runtime/frame_mac.h) under the link's key for its direction: a
polynomial hash over GF(2^128) of header || payload, hidden by a pad that HMAC-SHA256 draws from
the frame's sequence number. `proof`, `link_keys` and `seal` compute what a role computes, so a
test can be a peer; the field arithmetic here is plain Python integers (slow, and obviously the
textbook definition, which is the point of a mirror).
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from dataclasses import dataclass, replace

MAGIC = 0x48504C41  # b"ALPH"
VERSION = 3
HEADER_BYTES = 64
HELLO = 1
PIECE = 2
ACK = 3
AUTH = 4
ANY = 0xFFFFFFFF
HELLO_COUNT = 28
HELLO_BYTES = HEADER_BYTES + 4 * HELLO_COUNT
AUTH_COUNT = 8
AUTH_BYTES = HEADER_BYTES + 4 * AUTH_COUNT
MAC_BYTES = 16
TENSOR_GRADIENT = 0
TENSOR_PARAMS = 1
TENSOR_NORM = 2  # clipping: gradient-norm node values (runtime/clip_norm.c)

_LAYOUT = struct.Struct("<IHHIIIIIIQQQI")  # everything up to the header CRC: 60 bytes
assert _LAYOUT.size == 60

REFUSALS = (
    "frame-corrupt",
    "frame-version-mismatch",
    "frame-oversize",
    "frame-unexpected",
    "frame-forged",
)


def _crc32c_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes, crc: int = 0) -> int:
    """CRC-32C (Castagnoli); crc32c(b"123456789") == 0xE3069283."""
    crc ^= 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


@dataclass(frozen=True)
class Header:
    kind: int
    sender: int
    round: int = 0
    tensor: int = 0
    lo: int = 0
    hi: int = 0
    start: int = 0
    count: int = 0
    payload_bytes: int | None = None  # None: count * 4
    payload_crc: int = 0
    magic: int = MAGIC
    version: int = VERSION
    reserved: int = 0
    header_crc: int | None = None  # None: computed

    def encode(self) -> bytes:
        payload_bytes = 4 * self.count if self.payload_bytes is None else self.payload_bytes
        body = _LAYOUT.pack(
            self.magic, self.version, self.kind, self.sender, self.round, self.tensor,
            self.lo, self.hi, self.reserved, self.start, self.count, payload_bytes,
            self.payload_crc,
        )  # fmt: skip
        crc = crc32c(body) if self.header_crc is None else self.header_crc
        return body + struct.pack("<I", crc)


@dataclass(frozen=True)
class Expect:
    kind: int
    sender: int
    round: int
    tensor: int
    lo: int
    hi: int
    count: int


def frame(header: Header, payload: bytes) -> bytes:
    """header (its payload CRC filled in from payload) followed by payload."""
    return replace(header, payload_crc=crc32c(payload)).encode() + payload


def hello_payload(
    plan_identity: bytes,
    receiver: int,
    epoch: int,
    n_roles: int,
    nonce: bytes = bytes(32),
    proof: bytes = bytes(32),
) -> bytes:
    if len(plan_identity) != 32 or len(nonce) != 32 or len(proof) != 32:
        raise ValueError("a plan identity, a nonce and a proof are 32 bytes each")
    return plan_identity + struct.pack("<IIII", receiver, epoch, n_roles, 0) + nonce + proof


def _identity(plan_identity: bytes | str) -> bytes:
    return bytes.fromhex(plan_identity) if isinstance(plan_identity, str) else plan_identity


def hello(
    plan_identity: bytes | str,
    sender: int,
    receiver: int,
    epoch: int,
    n_roles: int,
    nonce: bytes = bytes(32),
    proof: bytes = bytes(32),
) -> bytes:
    """A complete HELLO frame (176 bytes); plan_identity as 32 bytes or 64 hex digits."""
    payload = hello_payload(_identity(plan_identity), receiver, epoch, n_roles, nonce, proof)
    return frame(Header(HELLO, sender, count=HELLO_COUNT), payload)


@dataclass(frozen=True)
class Hello:
    """The fields of a HELLO that a proof covers (the sender's own), and its nonce and proof."""

    plan_identity: bytes
    sender: int
    receiver: int
    epoch: int
    n_roles: int
    nonce: bytes = bytes(32)
    proof: bytes = bytes(32)

    def encode(self) -> bytes:
        return hello(self.plan_identity, self.sender, self.receiver, self.epoch, self.n_roles,
                     self.nonce, self.proof)  # fmt: skip

    @staticmethod
    def parse(data: bytes) -> Hello:
        """The fields of a whole HELLO frame (checked by the caller)."""
        (sender,) = struct.unpack_from("<I", data, 8)
        p = data[HEADER_BYTES:]
        receiver, epoch, n_roles, _ = struct.unpack_from("<IIII", p, 32)
        return Hello(p[:32], sender, receiver, epoch, n_roles, p[48:80], p[80:112])


def _transcript(label: str, dialer_nonce: bytes, acceptor_nonce: bytes, h: Hello) -> bytes:
    fields = struct.pack("<IIII", h.sender, h.receiver, h.epoch, h.n_roles)
    return label.encode() + b"\0" + dialer_nonce + acceptor_nonce + h.plan_identity + fields


def proof(
    secret: bytes, from_dialer: bool, own: Hello, dialer_nonce: bytes, acceptor_nonce: bytes
) -> bytes:
    """A side's proof of the secret over both nonces and its own HELLO fields."""
    label = "alpha-2 dialer proof" if from_dialer else "alpha-2 acceptor proof"
    message = _transcript(label, dialer_nonce, acceptor_nonce, own)
    return hmac.new(secret, message, hashlib.sha256).digest()


def link_keys(secret: bytes, dialer: Hello, acceptor_nonce: bytes) -> tuple[bytes, bytes]:
    """(the key of frames to the acceptor, the key of frames to the dialer)."""
    keys = []
    for label in ("alpha-2 key dialer to acceptor", "alpha-2 key acceptor to dialer"):
        message = _transcript(label, dialer.nonce, acceptor_nonce, dialer)
        keys.append(hmac.new(secret, message, hashlib.sha256).digest())
    return keys[0], keys[1]


def auth(sender: int, proof_bytes: bytes) -> bytes:
    """A complete AUTH frame carrying the dialer's proof."""
    return frame(Header(AUTH, sender, count=AUTH_COUNT), proof_bytes)


# GF(2^128) = GF(2)[x] / (x^128 + x^7 + x^2 + x + 1); bit i of an int is the coefficient of x^i,
# and a 16-byte block is the little-endian int of its bytes.
FIELD_POLYNOMIAL = (1 << 128) | 0x87
_HASH_LABEL = b"alpha-3 frame hash key"
_PAD_KEY_LABEL = b"alpha-3 frame pad key"
_PAD_LABEL = b"alpha-frame-pad"


def clmul(a: int, b: int) -> int:
    """The carry-less (GF(2)[x]) product of two polynomials."""
    product = 0
    while b:
        if b & 1:
            product ^= a
        a <<= 1
        b >>= 1
    return product


def poly_mod(a: int, m: int = FIELD_POLYNOMIAL) -> int:
    """a modulo m in GF(2)[x], by long division."""
    degree = m.bit_length() - 1
    while a.bit_length() - 1 >= degree:
        a ^= m << (a.bit_length() - 1 - degree)
    return a


def gf_mul(a: int, b: int) -> int:
    """The product of two elements of GF(2^128)."""
    return poly_mod(clmul(a, b))


def mac_subkeys(key: bytes) -> tuple[int, bytes]:
    """(H, K_pad) of a link direction's 32-byte key."""
    h = int.from_bytes(hmac.digest(key, _HASH_LABEL, "sha256")[:16], "little")
    return h, hmac.digest(key, _PAD_KEY_LABEL, "sha256")


def poly_hash(h: int, header: bytes, stream: bytes) -> int:
    """Horner's rule over header || stream zero-padded to 16 bytes || [len header, len stream]."""
    message = header + stream + bytes(-(len(header) + len(stream)) % 16)
    message += struct.pack("<QQ", len(header), len(stream))
    y = 0
    for i in range(0, len(message), 16):
        y = gf_mul(y ^ int.from_bytes(message[i : i + 16], "little"), h)
    return y


def mac(key: bytes, seq: int, data: bytes) -> bytes:
    """The MAC of a frame (header and payload in data) sent as the seq-th on its link, under the
    direction key `key` (one of link_keys)."""
    h, pad_key = mac_subkeys(key)
    y = poly_hash(h, data[:HEADER_BYTES], data[HEADER_BYTES:])
    pad = hmac.digest(pad_key, _PAD_LABEL + struct.pack("<Q", seq), "sha256")[:16]
    return bytes(a ^ b for a, b in zip(y.to_bytes(16, "little"), pad, strict=True))


def seal(key: bytes, seq: int, data: bytes) -> bytes:
    """The frame followed by its MAC, as a role sends it (a role also writes 0 as the payload
    CRC of a frame it MACs, and reads neither that field nor a CRC; this keeps what `data`
    says, so a test can send any value there)."""
    return data + mac(key, seq, data)


def piece(
    sender: int, round_: int, lo: int, hi: int, values: bytes, tensor: int = TENSOR_GRADIENT
) -> bytes:
    """A PIECE frame carrying values (little-endian float32 bytes: gradients, then the loss)."""
    if len(values) % 4:
        raise ValueError("a piece is whole float32 values")
    header = Header(PIECE, sender, round_, tensor, lo, hi, count=len(values) // 4)
    return frame(header, values)


@dataclass(frozen=True)
class Decoded:
    magic: int
    version: int
    kind: int
    sender: int
    round: int
    tensor: int
    lo: int
    hi: int
    reserved: int
    start: int
    count: int
    payload_bytes: int
    payload_crc: int
    header_crc: int


def decode_header(data: bytes, expect: Expect) -> tuple[Decoded | None, str | None]:
    """(the header, None) or (the header as far as it was read, the refusal name); the same
    checks in the same order as the C decoder."""
    if len(data) < HEADER_BYTES:
        return None, "frame-corrupt"
    fields = _LAYOUT.unpack_from(data)
    (header_crc,) = struct.unpack_from("<I", data, 60)
    values = [int(v) for v in fields] + [int(header_crc)]
    h = Decoded(**dict(zip(Decoded.__dataclass_fields__, values, strict=True)))
    if h.magic != MAGIC:
        return h, "frame-corrupt"
    if h.version != VERSION:
        return h, "frame-version-mismatch"
    if crc32c(bytes(data[:60])) != h.header_crc or h.reserved != 0:
        return h, "frame-corrupt"
    if h.count > expect.count or h.payload_bytes > 4 * expect.count:
        return h, "frame-oversize"
    if h.payload_bytes != 4 * h.count:
        return h, "frame-oversize"
    if h.kind != expect.kind:
        return h, "frame-unexpected"
    if expect.sender != ANY and h.sender != expect.sender:
        return h, "frame-unexpected"
    if (h.round, h.tensor, h.lo, h.hi) != (expect.round, expect.tensor, expect.lo, expect.hi):
        return h, "frame-unexpected"
    if h.start != 0 or h.count != expect.count:
        return h, "frame-unexpected"
    return h, None


def decode(data: bytes, expect: Expect) -> tuple[Decoded | None, str | None]:
    """A whole frame: the header, then exactly its payload with a matching CRC."""
    h, refused = decode_header(data, expect)
    if refused or h is None:
        return h, refused
    payload = bytes(data[HEADER_BYTES:])
    if len(payload) != h.payload_bytes or crc32c(payload) != h.payload_crc:
        return h, "frame-corrupt"
    return h, None
