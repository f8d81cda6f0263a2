"""A role's schedule as a table of bytes, and the executables of a plan's roles as one linked
template per kind of role with each role's table written into its own copy.

Roles of one kind (the same target, device and whether they hold links) differ only in their
schedule (ALPHA_ROLE). Linking each role was one zig process per role, most of a plan's build
time at hundreds of roles. Instead the kind is linked once with a reserved, fixed-size table in
a section of its own (`.alpha_role`, `alpha_role_table` in runtime/role_table.c), and each
role's executable is that template with its own table written in: still one self-contained
executable per role carrying only its own schedule, checked (and refused program-invalid when
it is not whole) at start-up. The format is runtime/role_table.c's.
"""

from __future__ import annotations

import hashlib
import struct

from alpha_core.plan.schedule import OP_KINDS, RoleSchedule

MAGIC = b"ALPHAROL"
VERSION = 1
HEADER_BYTES = 48  # magic, version, payload length, SHA-256 of the payload
SECTION = ".alpha_role"
MIN_ROOM = 512  # the least room a template reserves for its table


class TableError(Exception):
    """A template in which the role table cannot be found, or a table larger than its room."""


def _string(s: str) -> bytes:
    data = s.encode("utf-8")
    if b"\0" in data:
        raise TableError(f"a role's text holds a NUL byte: {s!r}")
    return struct.pack("<I", len(data)) + data + b"\0"


def payload(role: RoleSchedule) -> bytes:
    """The role's schedule as runtime/role_table.c reads it."""
    parts = [
        struct.pack(
            "<13I2Q",
            role.index,
            role.n_roles,
            role.epoch,
            role.listen_port,
            role.connect_timeout_ms,
            role.io_timeout_ms,
            int(role.writes_params),
            role.checkpoint_every,
            role.checkpoint_keep,
            role.threads,
            role.max_threads,
            len(role.ops),
            len(role.links),
            role.state_start,
            role.state_count,
        )
    ]
    for text in (
        role.name,
        role.plan,
        role.plan_identity,
        role.listen_host,
        role.checkpoint_dir,
        role.resume,
        role.secret_file,
    ):
        parts.append(_string(text))
    for op in role.ops:
        parts.append(
            struct.pack(
                "<5I2Q", OP_KINDS[op.kind], op.link, op.a, op.b, op.flags, op.start, op.count
            )
        )
    for k in role.links:
        parts.append(struct.pack("<3I", k.peer, int(k.accept), k.port))
        parts.append(_string(k.peer_name) + _string(k.host))
    return b"".join(parts)


def table(role: RoleSchedule) -> bytes:
    """The whole table: header (with the payload's SHA-256), then the payload."""
    body = payload(role)
    return MAGIC + struct.pack("<II", VERSION, len(body)) + hashlib.sha256(body).digest() + body


def room(table_bytes: int) -> int:
    """The room a template reserves for a table of `table_bytes`: at least MIN_ROOM, else the
    next power of two. A function of the role's own table alone, so a role built alone (`--role`)
    is byte for byte the role built with all the others; roles whose tables differ in size by
    less than a factor of two share a template."""
    return max(MIN_ROOM, 1 << max(0, table_bytes - 1).bit_length())


def kind_c(room: int, links: bool) -> str:
    """The C of a kind's template: the reserved table (a header saying no role was written,
    then zeros) and, for a kind with links, the code that opens them (runtime/net.h)."""
    parts = [
        '#include "alpha_program.h"\n#include <stdint.h>\n\n',
        f"const uint64_t alpha_role_table_bytes = {room}u;\n",
        f'__attribute__((section("{SECTION}"), used, aligned(64)))\n',
        f"const uint8_t alpha_role_table[{room}] = "
        '{"ALPHAROL"};  /* version 0: a template; alpha build writes each role\'s table */\n',
    ]
    if links:
        parts.append('#include "net.h"\nALPHA_OPEN_LINKS\n')
    return "".join(parts)


def table_place(image: bytes) -> tuple[int, int]:
    """Where the `.alpha_role` section lies in an ELF64 little-endian executable: (file
    offset, size). Stripping keeps section headers, so a template is read by its headers, not
    by searching its bytes."""
    if image[:4] != b"\x7fELF" or image[4] != 2 or image[5] != 1:
        raise TableError("the template is not a little-endian ELF64 executable")
    (shoff,) = struct.unpack_from("<Q", image, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", image, 0x3A)
    if shoff == 0 or shentsize < 64 or shstrndx >= shnum:
        raise TableError("the template has no section headers")

    def header(i: int) -> tuple[int, int, int, int]:
        name, _type, _flags, _addr, offset, size = struct.unpack_from(
            "<IIQQQQ", image, shoff + i * shentsize
        )
        return name, _type, offset, size

    _, _, names_at, names_size = header(shstrndx)
    names = image[names_at : names_at + names_size]
    for i in range(shnum):
        name, kind, offset, size = header(i)
        end = names.find(b"\0", name)
        if names[name:end].decode("ascii", "replace") == SECTION:
            if kind == 8:  # SHT_NOBITS: the table would not be in the file
                raise TableError("the template's role table takes no room in the file")
            return offset, size
    raise TableError(f"the template has no {SECTION} section")


def with_table(image: bytes, place: tuple[int, int], role_table: bytes) -> bytes:
    """The template `image` with `role_table` written at the table's place (the rest of the
    room keeps the template's zeros)."""
    offset, size = place
    if len(role_table) > size:
        raise TableError(f"a role's table of {len(role_table)} bytes exceeds its room of {size}")
    if image[offset : offset + len(MAGIC)] != MAGIC:
        raise TableError("the template's role table does not start where its section says")
    return image[:offset] + role_table + image[offset + len(role_table) :]
