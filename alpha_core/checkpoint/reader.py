"""Reading a checkpoint capture written by the runtime (runtime/checkpoint.c, docs/runtime.md).

A capture is a folder `round-<R>` holding one pack file per writing role: the root's `top.pack`,
every other role's `parts/<role>.pack`. A pack holds the role's shards (little-endian float32
values, one after another; each named in the manifest by kind, tensor and element range, with
its byte offset, length and SHA-256), then the role's manifest (JSON: its shards, and its
children's packs with the SHA-256 of their manifests), then a trailer (alpha_core.checkpoint.pack).
A checkpoint folder holds captures; the published ones are named `round-<R>`, and the one with
the highest R is the newest. This reader makes the runtime's checks, in the same order, with
the same refusal names, and raises nothing but CheckpointError, whatever the bytes on disk.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from alpha_core.checkpoint.folder import Capture, locate
from alpha_core.checkpoint.pack import TOP, PackError, split
from alpha_core.checkpoint.strict import (
    CheckpointError,
    as_count,
    as_string,
    incomplete,
    malformed,
    read_sized,
    safe_name,
)
from alpha_core.checkpoint.strict import json_object as strict_json

FORMAT = "alpha-checkpoint/3"
PART_FORMAT = "alpha-checkpoint-part/3"
MANIFEST_LIMIT = 64 << 20
PACK_LIMIT = 1 << 62
TREE_DEPTH = 64
REFUSALS = (
    "checkpoint-incomplete",
    "checkpoint-malformed",
    "checkpoint-identity-mismatch",
    "checkpoint-digest-mismatch",
)
_HEX64 = re.compile(r"[0-9a-f]{64}")
_HEX8 = re.compile(r"[0-9a-f]{8}")


@dataclass(frozen=True)
class Tensor:
    name: str
    offset: int
    count: int


@dataclass(frozen=True)
class Shard:
    kind: str  # "params", "adam.m", "adam.scalars", ...
    tensor: str  # "" for the learner's scalars
    start: int  # elements within the tensor
    count: int
    file: str  # the pack holding it, relative to the capture
    sha256: str
    role: str  # the role whose manifest lists it
    at: int = 0  # first flat element (the scalars: 0)
    offset: int = 0  # bytes into the pack file

    @property
    def bytes(self) -> int:
        return 4 * self.count

    @property
    def name(self) -> str:
        """The shard in messages: kind, tensor and element range ("adam.m/w1.0-603")."""
        if not self.tensor:
            return self.kind
        return f"{self.kind}/{self.tensor}.{self.start}-{self.start + self.count}"


@dataclass(frozen=True)
class Manifest:
    role: str
    file: str  # its pack, relative to the capture
    sha256: str  # of the manifest's bytes
    shards: tuple[Shard, ...]
    children: tuple[Manifest, ...] = ()

    def walk(self) -> Iterator[tuple[int, Manifest]]:
        yield 0, self
        for child in self.children:
            for depth, m in child.walk():
                yield depth + 1, m


@dataclass(frozen=True)
class Checkpoint:
    path: Path  # the capture folder
    latest: bool  # reached through its checkpoint folder (the newest published capture)
    system: str
    identity: str
    round: int
    n_params: int
    learner: str
    state_slots: int
    state_scalars: int
    loss_bits: str
    tensors: tuple[Tensor, ...]
    root: Manifest
    kinds: tuple[str, ...] = field(default=())
    folder: tuple[Capture, ...] = ()  # reached through its folder: every capture there

    @property
    def loss(self) -> float:
        return float(np.frombuffer(bytes.fromhex(self.loss_bits)[::-1], "<f4")[0])

    def manifests(self) -> list[Manifest]:
        return [m for _, m in self.root.walk()]

    def shards(self) -> list[Shard]:
        return [s for m in self.manifests() for s in m.shards]

    def values(self, kind: str = "params") -> np.ndarray:
        """The flat float32 values of one kind (n_params of them; the scalars: state_scalars)."""
        if kind not in self.kinds:
            raise CheckpointError("checkpoint-malformed", f"this checkpoint has no kind {kind!r}")
        size = self.state_scalars if kind.endswith(".scalars") else self.n_params
        out = np.zeros(size, dtype="<f4")
        packs: dict[str, bytes] = {}
        for s in self.shards():
            if s.kind == kind:
                if s.file not in packs:
                    packs[s.file] = _read_pack(self.path / s.file)
                out[s.at : s.at + s.count] = np.frombuffer(_read(self.path, s, packs), "<f4")
        return out

    def summary(self) -> str:
        shards = self.shards()
        total = sum(s.bytes for s in shards)
        lines = [
            f"checkpoint {self.path}" + (" (the newest published capture)" if self.latest else ""),
            f"  system {self.system}, identity {self.identity}",
            f"  round {self.round}, loss {self.loss:.9g} (bits {self.loss_bits})",
            f"  {self.n_params:,} parameters in {len(self.tensors)} tensors: "
            + ", ".join(f"{t.name} {t.count:,}" for t in self.tensors),
            f"  learner {self.learner}: {self.state_slots} state slots, "
            f"{self.state_scalars} scalars",
            f"  {len(shards)} shards, {total:,} bytes, every SHA-256 verified; "
            f"{len(self.manifests())} manifests:",
        ]
        for depth, m in self.root.walk():
            lines.append(
                f"    {'  ' * depth}{m.role}: {m.file}, {len(m.shards)} shards, "
                f"sha256 {m.sha256[:16]}"
            )
        lines.append("  coverage by kind:")
        for kind in self.kinds:
            parts = sorted((s for s in shards if s.kind == kind), key=lambda s: s.at)
            owners = ", ".join(f"{s.role} [{s.at}, {s.at + s.count})" for s in _merged(parts))
            lines.append(
                f"    {kind}: {len(parts)} shard{'' if len(parts) == 1 else 's'}; {owners}"
            )
        if self.folder:
            lines.append(f"  captures in {self.path.parent}:")
            for c in self.folder:
                mark = " (this one)" if c.name == self.path.name else ""
                lines.append(f"    {c.name}: {c.state}{mark}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "latest": self.latest,
            "format": FORMAT,
            "system": self.system,
            "identity": self.identity,
            "round": self.round,
            "n_params": self.n_params,
            "learner": self.learner,
            "state_slots": self.state_slots,
            "state_scalars": self.state_scalars,
            "loss_bits": self.loss_bits,
            "kinds": list(self.kinds),
            "tensors": [vars(t) for t in self.tensors],
            "manifests": [
                {
                    "role": m.role,
                    "file": m.file,
                    "sha256": m.sha256,
                    "depth": depth,
                    "children": [c.role for c in m.children],
                    "shards": len(m.shards),
                }
                for depth, m in self.root.walk()
            ],
            "shards": [
                {
                    k: getattr(s, k)
                    for k in ("kind", "tensor", "start", "count", "file", "offset", "sha256")
                }
                | {"length": s.bytes, "role": s.role}
                for s in self.shards()
            ],
            "bytes": sum(s.bytes for s in self.shards()),
            "captures": [vars(c) for c in self.folder],
        }


def _merged(parts: list[Shard]) -> list[Shard]:
    """Consecutive shards of one role shown as one range."""
    out: list[Shard] = []
    for s in parts:
        if out and out[-1].role == s.role and out[-1].at + out[-1].count == s.at:
            last = out[-1]
            out[-1] = Shard(last.kind, "", 0, last.count + s.count, "", "", last.role, last.at, 0)
        else:
            out.append(s)
    return out


def kind_names(learner: str, slots: int, scalars: int) -> tuple[str, ...]:
    """The kinds a capture of this learner holds, in the runtime's order (checkpoint_kind)."""

    def slot(k: int) -> str:
        if learner == "adam" and k < 2:
            return f"adam.{'mv'[k]}"
        if learner == "momentum" and k == 0:
            return "momentum.v"
        return f"{learner[:32]}.s{k}"

    return ("params", *(slot(k) for k in range(slots))) + (
        (f"{learner[:32]}.scalars",) if scalars else ()
    )


# ---- reading ----------------------------------------------------------------------------------


class _Reader:
    def __init__(self, capture: Path, identity: str | None) -> None:
        self.capture = capture
        self.identity = identity
        self.top: dict[str, Any] = {}
        self.tensors: dict[str, Tensor] = {}
        self.kinds: tuple[str, ...] = ()
        self.packs: dict[str, bytes] = {}  # each pack's bytes, by file

    def manifest(self, file: str, sha: str | None, role: str, depth: int) -> Manifest:
        """The manifest at the end of pack `file` (the top when sha is None), then its
        children's."""
        path = self.capture / file
        data = _read_pack(path)
        self.packs[file] = data
        try:
            sections = split(data, MANIFEST_LIMIT)
        except PackError as error:
            raise CheckpointError(
                "checkpoint-malformed", f"checkpoint pack {path}: {error}"
            ) from None
        digest = hashlib.sha256(sections.manifest).hexdigest()
        for says, expected in (("its trailer", sections.said), ("its parent manifest", sha)):
            if expected is not None and digest != expected:
                raise CheckpointError(
                    "checkpoint-digest-mismatch",
                    f"checkpoint pack {path}: its manifest has sha256 {digest}, but {says} "
                    f"says {expected}",
                )
        top = sha is None
        data = sections.manifest
        m = strict_json(path, data)
        if m.get("format") != (FORMAT if top else PART_FORMAT):
            raise malformed(path, "not an Alpha checkpoint manifest of a format this reads")
        identity = as_string(m.get("identity"))
        if top:
            self.check_top(path, m, identity)
        elif identity != self.top["identity"]:
            raise CheckpointError(
                "checkpoint-identity-mismatch",
                f"checkpoint {path} is of system identity {identity}, but its capture is of "
                f"{self.top['identity']}",
            )
        elif m.get("round") != self.top["round"] or type(m.get("round")) is not int:
            raise malformed(path, "a sub-manifest of another round")
        shards, children = m.get("shards"), m.get("children")
        if not isinstance(shards, list) or not isinstance(children, list):
            raise malformed(path, "shards and children must be lists")
        who = as_string(m.get("role")) or role
        parsed = tuple(self.shard(path, file, e, who) for e in shards)
        end = max((s.offset + s.bytes for s in parsed), default=0)
        if end != sections.manifest_start:
            raise CheckpointError(
                "checkpoint-digest-mismatch",
                f"checkpoint pack {path} holds {sections.manifest_start} bytes of shards, but "
                f"its manifest's shards end at byte {end}",
            )
        kids = []
        for e in children:
            name = as_string(e.get("file")) if isinstance(e, dict) else None
            digest_ = as_string(e.get("sha256")) if isinstance(e, dict) else None
            if name is None or digest_ is None or not safe_name(name) or len(digest_) != 64:
                raise malformed(path, "a child needs a file inside the capture and a sha256")
            if depth >= TREE_DEPTH:
                raise malformed(path, "the manifest tree is deeper than 64 levels")
            kids.append(self.manifest(name, digest_, as_string(e.get("role")) or "?", depth + 1))
        return Manifest(who, file, digest, parsed, tuple(kids))

    def check_top(self, path: Path, m: dict[str, Any], identity: str | None) -> None:
        if self.identity is not None and identity != self.identity:
            raise CheckpointError(
                "checkpoint-identity-mismatch",
                f"checkpoint {path} is of system identity {identity}, but the system has "
                f"identity {self.identity}",
            )
        fields = {k: as_count(m.get(k)) for k in ("round", "n_params", "state_slots")}
        fields["state_scalars"] = as_count(m.get("state_scalars"))
        learner, bits = as_string(m.get("learner")), as_string(m.get("loss_bits"))
        system = as_string(m.get("system"))
        tensors = m.get("tensors")
        if (
            None in fields.values()
            or learner is None
            or bits is None
            or not _HEX8.fullmatch(bits)
            or identity is None
            or system is None
            or not isinstance(tensors, list)
        ):
            raise malformed(
                path,
                "it needs system, identity, round, n_params, learner, state_slots, "
                "state_scalars, loss_bits and tensors",
            )
        if fields["round"] == 0 or fields["state_slots"] > 64:  # type: ignore[operator]
            raise malformed(path, "its round or learner state contradict each other")
        at = 0
        for t in tensors:
            name = as_string(t.get("name")) if isinstance(t, dict) else None
            offset = as_count(t.get("offset")) if isinstance(t, dict) else None
            count = as_count(t.get("count")) if isinstance(t, dict) else None
            if name is None or offset != at or count is None or name in self.tensors:
                raise malformed(path, "tensors must follow each other in the flat parameters")
            self.tensors[name] = Tensor(name, offset, count)
            at += count
        if at != fields["n_params"]:
            raise malformed(path, "its tensors do not add up to n_params")
        self.top = {**fields, "learner": learner, "loss_bits": bits, "identity": identity}
        self.top["system"] = system
        self.kinds = kind_names(learner, fields["state_slots"], fields["state_scalars"])  # type: ignore[arg-type]

    def shard(self, path: Path, name: str, e: object, role: str) -> Shard:
        """A shard entry of the manifest of pack `name`."""
        if not isinstance(e, dict):
            raise malformed(path, "a shard entry is not an object")
        kind, tensor = as_string(e.get("kind")), as_string(e.get("tensor"))
        sha = as_string(e.get("sha256"))
        start, count = as_count(e.get("start")), as_count(e.get("count"))
        offset, length = as_count(e.get("offset")), as_count(e.get("length"))
        if None in (kind, tensor, sha, start, count, offset, length):
            raise malformed(
                path, "a shard needs kind, tensor, start, count, offset, length, sha256"
            )
        assert kind is not None and tensor is not None and sha is not None
        assert start is not None and count is not None
        assert offset is not None and length is not None
        if not _HEX64.fullmatch(sha) or length != 4 * count or offset > 1 << 62:
            raise malformed(path, "a shard's sha256, offset or length is not valid")
        if kind not in self.kinds:
            raise malformed(path, "a shard of a kind this learner does not have")
        if kind.endswith(".scalars"):
            if tensor or start != 0 or count != self.top["state_scalars"]:
                raise malformed(path, "the scalars shard must hold all of the learner's scalars")
            return Shard(kind, tensor, start, count, name, sha, role, 0, offset)
        t = self.tensors.get(tensor)
        if t is None or count == 0 or start > t.count or count > t.count - start:
            raise malformed(path, "a shard of an unknown tensor, or outside its tensor")
        return Shard(kind, tensor, start, count, name, sha, role, t.offset + start, offset)

    def coverage(self, shards: list[Shard]) -> None:
        for kind in self.kinds:
            end = self.top["state_scalars"] if kind.endswith(".scalars") else self.top["n_params"]
            at = 0
            for s in sorted((s for s in shards if s.kind == kind), key=lambda s: s.at):
                if s.at < at:
                    raise malformed(
                        self.capture, f"two shards of {kind} hold element {s.at}"
                    ) from None
                if s.at != at:
                    break
                at += s.count
            else:
                if at == end:
                    continue
            raise incomplete(
                f"checkpoint {self.capture}: no shard of {kind} holds elements from {at} (of {end})"
            )


def _read_pack(path: Path) -> bytes:
    try:
        return read_sized(path, PACK_LIMIT)
    except OSError as error:
        raise incomplete(f"checkpoint pack {path} cannot be read: {error}") from None


def _read(capture: Path, s: Shard, packs: dict[str, bytes]) -> bytes:
    """One shard's bytes from its pack, its SHA-256 checked."""
    data = packs[s.file][s.offset : s.offset + s.bytes]
    digest = hashlib.sha256(data).hexdigest()
    if digest != s.sha256:
        raise CheckpointError(
            "checkpoint-digest-mismatch",
            f"checkpoint shard {s.name} (bytes {s.offset}-{s.offset + s.bytes} of "
            f"{capture / s.file}) has sha256 {digest}, but its manifest says {s.sha256}",
        )
    return data


def read_checkpoint(path: str | Path, identity: str | None = None) -> Checkpoint:
    """Reads and verifies a capture: every manifest and shard digest, the coverage of every
    kind. `identity`: the system identity it must have (None: any). Raises CheckpointError."""
    try:
        capture, listing = locate(Path(path))
        r = _Reader(capture, identity)
        root = r.manifest(TOP, None, "?", 0)
        shards = [s for _, m in root.walk() for s in m.shards]
        r.coverage(shards)
        for s in shards:
            _read(capture, s, r.packs)
    except CheckpointError:
        raise
    except (OSError, ValueError, RecursionError) as error:  # anything the checks above missed
        raise CheckpointError("checkpoint-malformed", f"{path}: {error}") from None
    t = r.top
    return Checkpoint(
        capture,
        bool(listing),
        t["system"],
        t["identity"],
        t["round"],
        t["n_params"],
        t["learner"],
        t["state_slots"],
        t["state_scalars"],
        t["loss_bits"],
        tuple(r.tensors.values()),
        root,
        r.kinds,
        listing,
    )
