"""Check `plan` and `pairing` declarations against the systems they name."""

from __future__ import annotations

from typing import TypeVar

from alpha_core.check.context import CheckContext
from alpha_core.check.program import Program
from alpha_core.diagnostics import Related
from alpha_core.plan.admission import admit, positions
from alpha_core.plan.model import (
    MAX_FANOUT,
    Family,
    LeafAssignment,
    Membership,
    Pairing,
    PairingEntry,
    Plan,
    StateLayout,
)
from alpha_core.plan.profiles import MEMORY_UNITS
from alpha_core.syntax import ast
from alpha_core.syntax.span import Span

T = TypeVar("T")
HOSTS = ("x86_64", "aarch64")
GPU_PROFILES = ("rtx3070", "rtx3090", "a100-40gb", "a100-80gb", "h100-80gb", "h200")
ORDERS = {"canonical tree": True, "sequence": False, "arrival": False, "ring": False}


def _single(items: tuple[object, ...], kind: type[T], ctx: CheckContext, what: str) -> T | None:
    found = [i for i in items if isinstance(i, kind)]
    for extra in found[1:]:
        ctx.refuse(
            "duplicate-name",
            f"a second `{what}` item",
            getattr(extra, "span", None),
            related=(Related(getattr(found[0], "span"), "first here"),),  # noqa: B009
        )
    return found[0] if found else None


def _missing(ctx: CheckContext, decl: ast.Decl, what: str, example: str) -> None:
    if any(isinstance(i, ast.ErrorItem) for i in decl.items):
        return
    ctx.refuse(
        "missing-item",
        f"plan `{decl.name}` has no `{what}` item",
        decl.name_span,
        help=f"add, for example, `{example}`",
    )


def check_plan(decl: ast.Decl, system: Program, ctx: CheckContext) -> Plan | None:
    before = len(ctx.diagnostics)
    roles = _single(decl.items, ast.RolesItem, ctx, "roles")
    topology = _single(decl.items, ast.TopologyItem, ctx, "topology")
    rounds = _single(decl.items, ast.RoundItem, ctx, "round")
    contract = _single(decl.items, ast.ContractItem, ctx, "contract")
    leaves_item = _single(decl.items, ast.LeavesItem, ctx, "leaves")
    state_item = _single(decl.items, ast.StateItem, ctx, "state")
    checkpoint = _single(decl.items, ast.CheckpointItem, ctx, "checkpoint")
    if roles is None:
        _missing(ctx, decl, "roles", "roles worker[2]")
        return None
    assert isinstance(roles, ast.RolesItem)
    membership = _membership(roles, ctx)
    if membership is None:
        return None
    families = [f for f in membership.families if not f.singleton]
    if len(families) != 1:
        ctx.refuse(
            "topology-mismatch",
            f"a plan needs exactly one family of workers (`worker[n]`); "
            f"this one has {len(families)}",
            roles.span,
        )
        return None
    workers = families[0]
    shape, fanout, hub = _topology(topology, membership, workers, ctx, decl)
    if shape is None:
        return None
    approximate = _contract(contract, ctx)
    if rounds is not None:
        assert isinstance(rounds, ast.RoundItem)
        _round(rounds, membership, workers, approximate, ctx)
    assignment = _assignment(leaves_item, workers, system.leaves, ctx, roles.span)
    if assignment is None or len(ctx.diagnostics) > before:
        return None
    if approximate:
        assert contract is not None
        ctx.refuse(
            "not-built-yet", "approximate contracts are checked but not yet compiled", contract.span
        )
        return None
    state = _state(state_item, membership, workers, system.n_params, ctx)
    every = None
    if checkpoint is not None:
        if checkpoint.every < 1:
            ctx.refuse(
                "bad-argument", "checkpoints come every 1 round or more", checkpoint.every_span
            )
            return None
        every = checkpoint.every
    if state is None:
        return None
    return Plan(
        decl.name,
        system,
        membership,
        workers,
        hub,
        shape,
        fanout,
        assignment,
        "exact",
        state,
        every,
    )


STATE_KINDS = ("params", "grads", "optimizer")


def _state(
    item: ast.StateItem | None,
    membership: Membership,
    workers: Family,
    n_params: int,
    ctx: CheckContext,
) -> StateLayout | None:
    """Who owns each kind of state; refused when an element would have no owner or two."""
    if item is None:
        return StateLayout()
    modes: dict[str, tuple[str, ast.StateStmt]] = {}
    for stmt in item.stmts:
        if stmt.what not in STATE_KINDS:
            ctx.unknown("kind of state", stmt.what, stmt.what_span, STATE_KINDS)
            return None
        if stmt.what in modes:
            ctx.refuse(
                "second-authority",
                f"`{stmt.what}` is given two owners",
                stmt.span,
                related=(Related(modes[stmt.what][1].span, "first here"),),
            )
            return None
        if stmt.mode not in ("replicated", "partitioned"):
            ctx.unknown("state layout", stmt.mode, stmt.mode_span, ["replicated", "partitioned"])
            return None
        if stmt.mode == "partitioned":
            if stmt.over is None or stmt.over_span is None:
                ctx.refuse(
                    "unowned-state",
                    f"`{stmt.what}` is partitioned over no role",
                    stmt.span,
                    help=f"say `partitioned over {workers.name}`",
                )
                return None
            fam = membership.family(stmt.over)
            if fam is None:
                ctx.unknown(
                    "role", stmt.over, stmt.over_span, [f.name for f in membership.families]
                )
                return None
            if fam is not workers:
                ctx.refuse(
                    "unowned-state",
                    f"`{stmt.over}` does not apply the learner, so the slices of "
                    f"`{stmt.what}` partitioned over it would have no owner",
                    stmt.over_span,
                    help=f"partition over `{workers.name}`",
                )
                return None
            if workers.count > n_params:
                ctx.refuse(
                    "partition-coverage",
                    f"{n_params} elements cannot be cut into {workers.count} non-empty slices",
                    stmt.span,
                )
                return None
        elif stmt.over is not None and stmt.over_span is not None:
            ctx.refuse("bad-argument", "replicated state is not `over` a role", stmt.over_span)
            return None
        modes[stmt.what] = (stmt.mode, stmt)
    layout = StateLayout(*(modes.get(k, ("replicated", None))[0] for k in STATE_KINDS))
    optimizer = modes.get("optimizer")
    for kind in ("params", "grads"):
        if getattr(layout, kind) == "partitioned" and layout.optimizer == "replicated":
            stmt = modes[kind][1]
            ctx.refuse(
                "second-authority",
                f"with `{kind}` partitioned, every replica of the optimizer state would be "
                "updated by a worker that does not own its slice",
                stmt.span,
                related=(Related(optimizer[1].span, "optimizer replicated here"),)
                if optimizer
                else (),
                help="partition the optimizer over the same workers",
            )
            return None
    return layout


def _membership(item: ast.RolesItem, ctx: CheckContext) -> Membership | None:
    families: list[Family] = []
    seen: dict[str, Span] = {}
    first = 0
    for r in item.roles:
        if r.name in seen:
            ctx.refuse(
                "duplicate-name",
                f"role `{r.name}` is declared twice",
                r.name_span,
                related=(Related(seen[r.name], "first declared here"),),
            )
            return None
        seen[r.name] = r.name_span
        if r.count is not None and r.count < 1:
            ctx.refuse("bad-argument", f"role family `{r.name}` needs at least one member", r.span)
            return None
        count = 1 if r.count is None else r.count
        families.append(Family(r.name, first, count, r.count is None))
        first += count
    return Membership(tuple(families))


def _topology(
    item: object, membership: Membership, workers: Family, ctx: CheckContext, decl: ast.Decl
) -> tuple[str | None, int, Family | None]:
    if item is None:
        _missing(ctx, decl, "topology", "topology pair")
        return None, 0, None
    assert isinstance(item, ast.TopologyItem)
    shape = item.shape
    name = shape.id if isinstance(shape, ast.Name) else shape.func
    span = shape.span if isinstance(shape, ast.Name) else shape.func_span
    singletons = [f for f in membership.families if f.singleton]
    if name == "pair":
        if workers.count != 2 or singletons or not isinstance(shape, ast.Name):
            ctx.refuse(
                "topology-mismatch",
                f"`pair` joins exactly two workers and nothing else; the plan has "
                f"{workers.count} `{workers.name}` and {len(singletons)} other role(s)",
                span,
            )
            return None, 0, None
        return "pair", 1, None
    if name == "star":
        if (
            not isinstance(shape, ast.Call)
            or len(shape.args) != 1
            or not isinstance(shape.args[0], ast.Name)
        ):
            ctx.refuse("bad-argument", "`star` names its hub: `star(hub)`", item.span)
            return None, 0, None
        hub_name = shape.args[0]
        hub = membership.family(hub_name.id)
        if hub is None or not hub.singleton:
            ctx.unknown(
                "role",
                hub_name.id,
                hub_name.span,
                [f.name for f in membership.families if f.singleton],
            )
            return None, 0, None
        if len(singletons) != 1:
            ctx.refuse("topology-mismatch", "a star has one hub and the workers", item.span)
            return None, 0, None
        if workers.count > MAX_FANOUT:
            ctx.refuse(
                "fanout-exceeded",
                f"a star's hub would combine {workers.count} workers; the bound is {MAX_FANOUT}",
                item.span,
                help=f"use `topology hierarchy(fanout: {MAX_FANOUT})` or less",
            )
            return None, 0, None
        return "star", workers.count, hub
    if name == "hierarchy":
        fan = shape.kwarg("fanout") if isinstance(shape, ast.Call) else None
        if (
            fan is None
            or not isinstance(fan.value, ast.Number)
            or not fan.value.is_int
            or isinstance(shape, ast.Name)
            or shape.args
            or len(shape.kwargs) != 1
        ):
            ctx.refuse("bad-argument", "`hierarchy` takes `fanout:`, an integer", item.span)
            return None, 0, None
        k = int(fan.value.value)
        if k < 2:
            ctx.refuse("bad-argument", f"`fanout` is {k}; it must be at least 2", fan.value.span)
            return None, 0, None
        if k > MAX_FANOUT:
            ctx.refuse(
                "fanout-exceeded", f"`fanout` is {k}; the bound is {MAX_FANOUT}", fan.value.span
            )
            return None, 0, None
        if singletons:
            ctx.refuse(
                "topology-mismatch",
                f"a hierarchy is made of workers only; `{singletons[0].name}` has no place in it",
                item.span,
            )
            return None, 0, None
        return "hierarchy", k, None
    ctx.unknown("topology", name, span, ["pair", "star", "hierarchy"])
    return None, 0, None


def _contract(item: object, ctx: CheckContext) -> bool:
    """True for an approximate contract; exact when absent."""
    if item is None:
        return False
    assert isinstance(item, ast.ContractItem)
    kind = item.kind
    name = kind.id if isinstance(kind, ast.Name) else kind.func
    if name == "exact" and isinstance(kind, ast.Name):
        return False
    if name == "approximate" and isinstance(kind, ast.Call):
        return True
    ctx.unknown("contract", name, item.kind.span, ["exact", "approximate"])
    return False


def _round(
    item: ast.RoundItem,
    membership: Membership,
    workers: Family,
    approximate: bool,
    ctx: CheckContext,
) -> None:
    names = [f.name for f in membership.families]
    for stmt in item.stmts:
        if isinstance(stmt, ast.ComputeStmt | ast.ApplyStmt):
            if membership.family(stmt.family) is None:
                ctx.unknown("role", stmt.family, stmt.family_span, names)
            elif stmt.family != workers.name:
                ctx.refuse(
                    "topology-mismatch",
                    f"only the workers `{workers.name}` compute and apply in this topology",
                    stmt.family_span,
                )
        if isinstance(stmt, ast.ComputeStmt | ast.CombineStmt) and stmt.what != "grad":
            ctx.unknown("value", stmt.what, stmt.what_span, ["grad"])
        if isinstance(stmt, ast.CombineStmt):
            exact = ORDERS.get(stmt.order)
            if exact is None:
                ctx.unknown("combine order", stmt.order, stmt.order_span, list(ORDERS))
            elif not exact and not approximate:
                ctx.refuse(
                    "combine-order-changed",
                    f"combining by {stmt.order} adds the leaves in another order than "
                    "the system's canonical tree",
                    stmt.order_span,
                    help="combine by canonical tree, or declare `contract approximate(...)`",
                )
            if stmt.deliver not in ("all",):
                ctx.refuse(
                    "not-built-yet",
                    f"delivering to `{stmt.deliver}` (one owner per slice) is not built "
                    "yet; deliver to all",
                    stmt.deliver_span,
                )


def _assignment(
    item: object, workers: Family, leaves: int, ctx: CheckContext, roles_span: Span
) -> LeafAssignment | None:
    if item is None:
        if workers.count > leaves:
            ctx.refuse(
                "role-without-leaves",
                f"{workers.count} workers share {leaves} leaves; "
                f"{workers.member(leaves)} onwards would compute nothing",
                roles_span,
                help="give the system more leaves (`batch N leaves L`) or the plan fewer workers",
            )
            return None
        return LeafAssignment.even(workers.count, leaves)
    assert isinstance(item, ast.LeavesItem)
    blocks: list[tuple[int, int, int, int, Span]] = []
    for r in item.ranges:
        ref = r.role
        if ref.name != workers.name:
            ctx.unknown("worker family", ref.name, ref.name_span, [workers.name])
            return None
        lo, hi = (
            (ref.index, ref.index + 1)
            if ref.index is not None
            else ((0, workers.count) if ref.every or ref.lo is None else (ref.lo, ref.hi or 0))
        )
        if not (0 <= lo < hi <= workers.count):
            ctx.refuse(
                "unknown-name",
                f"`{workers.name}` has members 0..{workers.count}; "
                f"`{ref.name}[{lo}..{hi}]` is outside",
                ref.span,
            )
            return None
        if not (0 <= r.lo < r.hi <= leaves):
            ctx.refuse(
                "leaves-uncovered",
                f"leaves {r.lo}..{r.hi} are not within the system's {leaves} leaves",
                r.span,
            )
            return None
        if r.hi - r.lo < hi - lo:
            ctx.refuse(
                "role-without-leaves", f"{hi - lo} workers share only {r.hi - r.lo} leaves", r.span
            )
            return None
        blocks.append((lo, hi, r.lo, r.hi, r.span))
    blocks.sort()
    worker_next, leaf_next = 0, 0
    for lo, hi, llo, lhi, span in blocks:
        if lo < worker_next:
            ctx.refuse("duplicate-name", f"{workers.member(lo)} is given leaves twice", span)
            return None
        if lo > worker_next:
            ctx.refuse(
                "role-without-leaves",
                f"{workers.member(worker_next)} is given no leaves",
                item.span,
            )
            return None
        if llo > leaf_next:
            ctx.refuse("leaves-uncovered", f"no worker computes leaves {leaf_next}..{llo}", span)
            return None
        if llo < leaf_next:
            ctx.refuse(
                "leaves-overlap",
                f"leaves {llo}..{min(lhi, leaf_next)} are computed twice",
                span,
                help="give each leaf to one worker, in worker order",
            )
            return None
        worker_next, leaf_next = hi, lhi
    if worker_next < workers.count:
        ctx.refuse(
            "role-without-leaves", f"{workers.member(worker_next)} is given no leaves", item.span
        )
        return None
    if leaf_next < leaves:
        ctx.refuse(
            "leaves-uncovered", f"no worker computes leaves {leaf_next}..{leaves}", item.span
        )
        return None
    return LeafAssignment(workers.count, leaves, tuple(b[:4] for b in blocks))


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
        memory: int | None = None
        for prop in item.props:
            if prop.key == "memory" and prop.amount is not None:
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
                if prop.value.replace("_", "-") not in GPU_PROFILES:
                    ctx.unknown(
                        "device profile",
                        prop.value,
                        prop.value_span,
                        [p.replace("-", "_") for p in GPU_PROFILES],
                    )
                else:
                    ctx.refuse(
                        "unsupported-on-target",
                        f"{fam.member(lo)} asks for a {prop.value}; GPU roles are not built yet",
                        prop.value_span,
                        help="pair it with a host only for now",
                    )
            else:
                ctx.unknown("pairing property", prop.key, prop.key_span, ["host", "gpu", "memory"])
        if host is None:
            ctx.refuse(
                "pairing-incomplete",
                f"{fam.member(lo)} is paired without a host",
                item.span,
                help="add `host x86_64` or `host aarch64`",
            )
            continue
        entries.append((PairingEntry(fam.name, lo, hi, host, memory), item.span))
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
    return f"{n:,} bytes"


def _range_name(fam: Family, lo: int, hi: int) -> str:
    if fam.singleton:
        return fam.name
    return fam.member(lo) if hi == lo + 1 else f"{fam.name}[{lo}..{hi}]"
