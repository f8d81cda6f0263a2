"""A plan's executables by kind of role: one template linked per kind (target, device, with or
without links), found again in the object cache by later builds, and each role's executable
written as its kind's template with the role's own table in it (build/role_table.py).

A role used to cost one zig process (its schedule compiled as it was linked): 64 roles about
1.2-4.9 s, 1,024 roles 21 s or more. Now a role costs its projection, its table and one file
written; the kinds of a plan (usually one or two) cost a link each, once per content.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from alpha_core.build import role_table
from alpha_core.link.link import LINK_FLAGS, link_role, place_executable
from alpha_core.link.object_cache import cached_object, content_key
from alpha_core.link.toolchain import LinkError, zig_version


@dataclass(frozen=True)
class Kind:
    """What the roles of one kind link: zig's target, the shared objects and kernels, and
    whether they hold links (a role without links links none of the code that opens them)."""

    zig: str
    objects: tuple[Path, ...]
    kernels: tuple[Path, ...]
    links: bool


@dataclass(frozen=True)
class Template:
    image: bytes
    place: tuple[int, int]  # the role table's file offset and room


def template(kind: Kind, room: int) -> Template:
    """The kind's executable with an empty table of `room` bytes, linked once per content (the
    shared objects' names carry their content keys) and kept in the object cache."""
    source = role_table.kind_c(room, kind.links)
    key = content_key(
        [
            b"role-kind-1",
            zig_version().encode(),
            kind.zig.encode(),
            "\0".join(LINK_FLAGS).encode(),
            source.encode(),
            Path(role_table.__file__).read_bytes(),
            *(p.name.encode() for p in (*kind.objects, *kind.kernels)),
        ]
    )

    def make(out: Path) -> None:
        link_role(kind.zig, kind.objects, source, kind.kernels, out)

    path = cached_object("role-kind", kind.zig, key, make, suffix=".exe")
    image = path.read_bytes()
    try:
        return Template(image, role_table.table_place(image))
    except role_table.TableError as e:
        raise LinkError("link-failed", f"{path}: {e}") from None


def write_role(t: Template, name: str, table: bytes, out: Path) -> tuple[int, str]:
    """Role `name`'s executable at `out` (replaced whole, by a rename): its kind's template
    with its `table` (role_table.table). Returns its size and SHA-256."""
    try:
        content = role_table.with_table(t.image, t.place, table)
    except role_table.TableError as e:
        raise LinkError("link-failed", f"{name}: {e}") from None
    place_executable(content, out)
    return len(content), hashlib.sha256(content).hexdigest()
