"""Check a `pairing` against its plan: one host per role, memory admission per role."""

from __future__ import annotations

from alpha_core.check.context import CheckContext
from alpha_core.lower.gpu_support import gpu_unsupported
from alpha_core.plan.admission import admit, positions
from alpha_core.plan.model import Family, Pairing, PairingEntry, Plan
from alpha_core.plan.profiles import MEMORY_UNITS
from alpha_core.support.sizes import human_bytes
from alpha_core.support.span import Span
from alpha_core.syntax import ast

HOSTS = ("x86_64", "aarch64")
MAX_CORES = 256  # the runtime's most threads (runtime/pool.c)
GPU_PROFILES = ("rtx3070", "rtx3090", "a100-40gb", "a100-80gb", "h100-80gb", "h200")


def check_pairing(decl: ast.Decl, plan: Plan, ctx: CheckContext) -> Pairing | None:
    before = len(ctx.diagnostics)
    entries: list[tuple[PairingEntry, Span]] = []
    names = [f.name for f in plan.membership.families]
    for item in decl.items:
        if not isinstance(item, ast.PairingItem):
            continue
        ref = item.role
        fam = plan.membership.family(ref.name)
        if fam is None:
            ctx.unknown("role", ref.name, ref.name_span, names)
            continue
        if fam.singleton:
            lo, hi = 0, 1
        elif ref.index is not None:
            lo, hi = ref.index, ref.index + 1
        elif ref.every or ref.lo is None:
            lo, hi = 0, fam.count
        else:
            lo, hi = ref.lo, ref.hi or 0
        if not (0 <= lo < hi <= fam.count):
            ctx.refuse("unknown-name", f"`{fam.name}` has members 0..{fam.count}", ref.span)
            continue
        host = None
        gpu: str | None = None
        memory: int | None = None
        cores: int | None = None
        for prop in item.props:
            if prop.key == "cores" and prop.amount is not None and not prop.value:
                if not 1 <= prop.amount <= MAX_CORES:
                    ctx.refuse(
                        "bad-argument",
                        f"`cores` is {prop.amount:,}; a role runs on 1 to {MAX_CORES} cores",
                        prop.value_span,
                    )
                cores = prop.amount
            elif prop.key == "cores":
                ctx.refuse(
                    "bad-argument",
                    "`cores` takes a count, as in `cores 8`",
                    prop.value_span,
                )
            elif prop.key == "memory" and prop.amount is not None and not prop.value:
                ctx.refuse(
                    "bad-argument",
                    f"`memory {prop.amount}` needs a unit, as in `memory {prop.amount} gib`",
                    prop.value_span,
                    help=f"units: {', '.join(MEMORY_UNITS)}",
                )
            elif prop.key == "memory" and prop.amount is not None:
                scale = MEMORY_UNITS.get(prop.value)
                if scale is None:
                    ctx.unknown("memory unit", prop.value, prop.value_span, MEMORY_UNITS)
                else:
                    memory = prop.amount * scale
            elif prop.amount is not None:
                ctx.refuse(
                    "bad-argument", f"`{prop.key}` takes a name, not an amount", prop.value_span
                )
            elif prop.key == "host":
                if prop.value not in HOSTS:
                    ctx.unknown("host", prop.value, prop.value_span, HOSTS)
                host = prop.value
            elif prop.key == "gpu":
                profile = prop.value.replace("_", "-")
                if profile not in GPU_PROFILES:
                    ctx.unknown(
                        "device profile",
                        prop.value,
                        prop.value_span,
                        [p.replace("-", "_") for p in GPU_PROFILES],
                    )
                else:
                    absent = gpu_unsupported(plan.system)
                    loaded = [p.name for p in plan.system.params if p.init.kind == "load"]
                    if loaded and not absent:  # the GPU's initialiser draws values, never copies
                        ctx.refuse(
                            "unsupported-on-target",
                            f"{fam.member(lo)} is paired with `gpu {profile}`, but "
                            f"{', '.join(f'`{n}`' for n in loaded)} "
                            f"{'starts' if len(loaded) == 1 else 'start'} from `load(...)`, "
                            "which GPU roles do not have yet",
                            prop.value_span,
                            help="pair this role with a host, or start the parameter from an "
                            "initialiser (normal, uniform, zeros, ...)",
                        )
                    if absent:
                        ctx.refuse(
                            "unsupported-on-target",
                            f"{fam.member(lo)} is paired with `gpu {profile}`, "
                            f"but {', '.join(f'`{op}`' for op in absent)} "
                            f"{'has' if len(absent) == 1 else 'have'} no GPU kernel",
                            prop.value_span,
                            help="pair this role with a host, or write the system without it",
                        )
                    gpu = profile
            else:
                ctx.unknown(
                    "pairing property", prop.key, prop.key_span, ["host", "gpu", "memory", "cores"]
                )
        if gpu is not None and host == "aarch64":
            ctx.refuse(
                "unsupported-on-target",
                f"{fam.member(lo)} is paired with `gpu {gpu}` on an aarch64 host, but GPU roles "
                "are built for x86_64 hosts only",
                item.span,
                help="pair the GPU role with `host x86_64`",
            )
            continue
        if host is None:
            ctx.refuse(
                "pairing-incomplete",
                f"{fam.member(lo)} is paired without a host",
                item.span,
                help="add `host x86_64` or `host aarch64`",
            )
            continue
        entries.append((PairingEntry(fam.name, lo, hi, host, memory, cores, gpu), item.span))
    if len(ctx.diagnostics) > before:
        return None
    missing: list[str] = []
    for fam in plan.membership.families:
        spans = sorted((e.lo, e.hi, span) for e, span in entries if e.family == fam.name)
        at = 0
        for lo, hi, span in spans:
            if lo < at:
                ctx.refuse("pairing-overlap", f"{fam.member(lo)} is paired twice", span)
                return None
            if lo > at:
                missing.append(_range_name(fam, at, lo))
            at = hi
        if at < fam.count:
            missing.append(_range_name(fam, at, fam.count))
    if missing:
        ctx.refuse(
            "pairing-incomplete",
            f"pairing `{decl.name}` misses {', '.join(missing)}",
            decl.name_span,
            help="every role of the plan needs a host",
        )
        return None
    pairing = Pairing(decl.name, plan, tuple(e for e, _ in entries))
    for entry, span in entries:
        fam = plan.membership.family(entry.family)
        assert fam is not None
        for index in positions(plan, fam.first + entry.lo, fam.first + entry.hi):
            a = admit(plan, pairing, index)
            if not a.admitted:
                ctx.refuse(
                    "memory-admission",
                    f"{a.role} needs {_size(a.total)} but {a.profile.name} has "
                    f"{_size(a.profile.memory)}",
                    span,
                    notes=tuple(f"{what}: {n:,} bytes" for what, n in a.items),
                    help="pair the role with more memory, or partition its state over more workers",
                )
                return None
    return pairing


def _size(n: int) -> str:
    # readable, and exact: two sizes that round alike (1.00 MiB, 1.00 MiB) still differ here
    return f"{human_bytes(n)} ({n:,} bytes)"


def _range_name(fam: Family, lo: int, hi: int) -> str:
    if fam.singleton:
        return fam.name
    return fam.member(lo) if hi == lo + 1 else f"{fam.name}[{lo}..{hi}]"
