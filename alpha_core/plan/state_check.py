"""Check a plan's `state { ... }`: one logical owner for every element of every kind."""

from __future__ import annotations

from alpha_core.check.context import CheckContext
from alpha_core.diagnostics import Related
from alpha_core.plan.model import Family, Membership, StateLayout
from alpha_core.syntax import ast

STATE_KINDS = ("params", "grads", "optimizer")


def check_state(
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
