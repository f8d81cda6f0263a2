"""The generated C of an executable: ALPHA_PROGRAM (the system, its layout, its embedded data),
the same for every role of a build, and ALPHA_ROLE (the schedule), the only part that differs.

A build compiles the program part once and shares it between its roles (link/object_cache.py);
`program_c` is both parts in one file, as a hand-made link wants them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from alpha_core.check.program import Program
from alpha_core.data import synthetic
from alpha_core.data.spec import DataSpec
from alpha_core.plan.schedule import OP_KINDS, RoleSchedule, single_process


def _c_string(s: str) -> str:
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= ord(ch) < 127:
            out.append(ch)
        else:
            out.extend(f"\\{b:03o}" for b in ch.encode())
    return '"' + "".join(out) + '"'


def _floats(name: str, values: np.ndarray) -> str:
    """A float array spelled with hex literals, so the bits survive the C compiler exactly."""
    flat = np.ascontiguousarray(values, dtype=np.float32).ravel()
    lines = []
    for start in range(0, len(flat), 6):
        chunk = flat[start : start + 6]
        lines.append("    " + ", ".join(float(v).hex() + "f" for v in chunk) + ",")
    body = "\n".join(lines) if lines else "    0"
    return f"static const float {name}[{max(1, len(flat))}] = {{\n{body}\n}};\n"


def _incbin(name: str, file: str, size: int) -> str:
    """The float array `name` whose bytes are the file `file` (little-endian float32, as both
    targets store them), placed by the assembler's .incbin: no text of the values at all, so
    a data set of 2^24 floats costs its bytes, not 400 MB of literals for the C compiler."""
    directives = [
        f'.section .rodata.{name},\\"a\\"',
        ".balign 64",
        f".globl {name}",
        f".hidden {name}",
        f".type {name}, %object",
        f"{name}:",
        f'.incbin \\"{file}\\"',
        f".size {name}, {size}",
        ".previous",
    ]
    body = "\n".join(f'    "{d}\\n"' for d in directives)
    return f"extern const float {name}[];\n__asm__(\n{body}\n);\n"


def _le_bytes(values: np.ndarray) -> bytes:
    return np.ascontiguousarray(values, dtype="<f4").tobytes()


@dataclass(frozen=True)
class ProgramPart:
    """The program part as a build compiles it: C, and the files its .incbin reads (name,
    bytes), to be written beside it."""

    c: str
    blobs: tuple[tuple[str, bytes], ...]


def program_part(program: Program, data_path: str | None) -> ProgramPart:
    """ALPHA_PROGRAM with the embedded data as files the assembler includes (what a build
    shares between its roles); the same values as program_part_c's literals, byte for byte."""
    d = program.data
    if d.kind != "synthetic":
        return ProgramPart(program_part_c(program, data_path), ())
    x, y = (_le_bytes(v) for v in synthetic.generate(d))
    data = _incbin("alpha_embedded_x", "embedded_x.bin", len(x))
    data += _incbin("alpha_embedded_y", "embedded_y.bin", len(y))
    c = _program_part(program, data_path, data, ("alpha_embedded_x", "alpha_embedded_y"))
    return ProgramPart(c, (("embedded_x.bin", x), ("embedded_y.bin", y)))


def role_c(role: RoleSchedule) -> str:
    """ALPHA_ROLE: the role's schedule and links."""
    parts = []
    ops = ",\n".join(
        f"    {{{OP_KINDS[op.kind]}u, {op.link}u, {op.a}u, {op.b}u, {op.start}u, {op.count}u, "
        f"{op.flags}u}}"
        for op in role.ops
    )
    parts.append(f"static const struct alpha_op ops[] = {{\n{ops}\n}};\n")
    links = ",\n".join(
        f"    {{{k.peer}u, {_c_string(k.peer_name)}, {int(k.accept)}u, {_c_string(k.host)}, "
        f"{k.port}u}}"
        for k in role.links
    )
    if role.links:
        parts.append(f"static const struct alpha_link links[] = {{\n{links}\n}};\n")
    fields = {
        "index": f"{role.index}u",
        "name": _c_string(role.name),
        "n_roles": f"{role.n_roles}u",
        "epoch": f"{role.epoch}u",
        "plan": _c_string(role.plan),
        "plan_identity": _c_string(role.plan_identity),
        "listen_host": _c_string(role.listen_host),
        "listen_port": f"{role.listen_port}u",
        "connect_timeout_ms": f"{role.connect_timeout_ms}u",
        "io_timeout_ms": f"{role.io_timeout_ms}u",
        "n_ops": f"{len(role.ops)}u",
        "ops": "ops",
        "n_links": f"{len(role.links)}u",
        "links": "links" if role.links else "NULL",
        "writes_params": f"{int(role.writes_params)}u",
        "checkpoint_every": f"{role.checkpoint_every}u",
        "checkpoint_dir": _c_string(role.checkpoint_dir),
        "resume": _c_string(role.resume),
        "checkpoint_keep": f"{role.checkpoint_keep}u",
        "state_start": f"{role.state_start}u",
        "state_count": f"{role.state_count}u",
        "secret_file": _c_string(role.secret_file),
        "threads": f"{role.threads}u",
        "max_threads": f"{role.max_threads}u",
    }
    parts.append("const struct alpha_role ALPHA_ROLE = {\n")
    parts.extend(f"    .{k} = {v},\n" for k, v in fields.items())
    parts.append("};\n")
    if role.links:  # only a role with links links the code that opens them (runtime/net.h)
        parts.append('#include "net.h"\nALPHA_OPEN_LINKS\n')
    return "".join(parts)


HEADER = '#include "alpha_program.h"\n#include <stddef.h>\n\n'


def role_part_c(role: RoleSchedule) -> str:
    """The C of one role alone: ALPHA_ROLE, to be linked with the program part."""
    return HEADER + role_c(role)


def program_c(program: Program, data_path: str | None, role: RoleSchedule | None = None) -> str:
    """One file with both parts: the program and the role (by default the single process)."""
    chosen = role or single_process(program.leaves, program.identity())
    return program_part_c(program, data_path) + role_c(chosen)


def program_part_c(program: Program, data_path: str | None) -> str:
    """ALPHA_PROGRAM with its tensors and embedded data spelled as C literals, in one text."""
    if program.data.kind != "synthetic":
        return _program_part(program, data_path, "", None)
    x, y = synthetic.generate(program.data)
    data = _floats("embedded_x", x) + _floats("embedded_y", y)
    return _program_part(program, data_path, data, ("embedded_x", "embedded_y"))


_FORMATS = {
    "csv": "ALPHA_FORMAT_CSV",
    "npy": "ALPHA_FORMAT_NPY",
    "npz": "ALPHA_FORMAT_NPZ",
    "tokens": "ALPHA_FORMAT_TOKENS",
}


def _file_layout(d: DataSpec) -> dict[str, str]:
    """How the executable reads a data file (runtime/data.c): its format and what it needs."""
    return {
        "data_format": _FORMATS[d.format],
        "csv_header": "1u" if d.header else "0u",
        "label_column": f"{d.label_column + 1}u",
        "label_name": _c_string(d.label_name) if d.label_name else "NULL",
        "labels_path": _c_string(d.labels_path) if d.labels_path else "NULL",
        "labels_sha256": _c_string(d.labels_sha256) if d.labels_sha256 else "NULL",
        "labels_size": f"{d.labels_size}ull",
        "x_key": _c_string(d.x_key) if d.x_key else "NULL",
        "y_key": _c_string(d.y_key) if d.y_key else "NULL",
        "token_bytes": f"{d.token_bytes}u",
    }


def _program_part(
    program: Program, data_path: str | None, data: str, embedded: tuple[str, str] | None
) -> str:
    """ALPHA_PROGRAM after `data`, the C that defines the arrays `embedded` names (x, y)."""
    d = program.data
    parts = [HEADER, data]
    if embedded is not None:
        (x_ref, y_ref), kind = embedded, "ALPHA_DATA_EMBEDDED"
    else:
        x_ref, y_ref, kind = "NULL", "NULL", "ALPHA_DATA_CSV"
    parts.append("static const struct alpha_tensor tensors[] = {\n")
    for p in program.params:
        parts.append(f"    {{{_c_string(p.name)}, {p.offset}u, {p.count}u}},\n")
    parts.append("};\n\n")
    path = data_path if data_path is not None else (d.path or "")
    fields = {
        "system": _c_string(program.name),
        "identity": _c_string(program.identity()),
        "n_params": f"{program.n_params}u",
        "n_state": f"{program.n_state}u",
        "batch": f"{program.batch}u",
        "leaves": f"{program.leaves}u",
        "leaf_size": f"{program.leaf_size}u",
        "steps": f"{program.steps}u",
        "features": f"{d.features}u",
        "outputs": f"{d.outputs}u",
        "label_kind": "ALPHA_LABEL_CLASS" if d.label_kind == "class" else "ALPHA_LABEL_REGRESSION",
        "shuffle": "1u" if program.shuffle_seed is not None else "0u",
        "shuffle_seed": f"{program.shuffle_seed or 0}u",
        "data_kind": kind,
        "data_path": _c_string(path),
        "data_sha256": _c_string(d.sha256),
        "rows": f"{d.rows}u",
        "holdout": f"{d.holdout}u",
        "embedded_x": x_ref,
        "embedded_y": y_ref,
        "n_tensors": f"{len(program.params)}u",
        "tensors": "tensors",
        "state_slots": f"{program.state_slots}u",
        "state_scalars": f"{program.state_scalars}u",
        "learner": _c_string(program.learner.kind),
        "arithmetic": _c_string(program.arithmetic),
        # the CSV's size: the runtime refuses another size before reading a byte of it
        "data_size": f"{d.size}ull",
        "label_positions": f"{d.positions}u",
        "vocabulary": f"{d.vocabulary}u",
        **_file_layout(d),
    }
    parts.append("const struct alpha_program ALPHA_PROGRAM = {\n")
    parts.extend(f"    .{k} = {v},\n" for k, v in fields.items())
    parts.append("};\n\n")
    return "".join(parts)
