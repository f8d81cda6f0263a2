"""`alpha/projection`: one role's projected schedule, the custom view behind "show what this
role runs" (like rust-analyzer's `viewHir`).

Params `{uri, plan, role, pairing?}` (role as `worker[3]` or `hub`; the pairing, if given,
chooses the profile the admission is measured against); result `{plan, role, index, roles,
text, ops, links, admission}`. A plan that does not exist or is refused, or a role the plan
does not have, is answered with RequestFailed, a document that is not open and cannot be read
with DocumentUnreadable (alpha_lsp/errors.py), each with a message that says which.
"""

from __future__ import annotations

from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from alpha_core.plan.projection import project
from alpha_lsp.errors import RequestFailed
from alpha_lsp.kernel import AlphaServer

METHOD = "alpha/projection"
# the ops that talk to a peer: their `link` indexes `links`
LINKED = frozenset({"send", "recv", "send_params", "recv_params", "ack_recv", "ack_send"})


def _param(params: Any, name: str) -> str:
    value = params.get(name) if isinstance(params, dict) else getattr(params, name, None)
    if not isinstance(value, str) or not value:
        raise JsonRpcInvalidParams(
            f"{METHOD} needs `{name}` (a string): params are {{uri, plan, role}}"
        )
    return value


def _optional(params: Any, name: str) -> str | None:
    value = params.get(name) if isinstance(params, dict) else getattr(params, name, None)
    return value if isinstance(value, str) else None


def projection(ls: AlphaServer, params: Any) -> dict[str, Any]:
    uri, plan_name, role = (_param(params, n) for n in ("uri", "plan", "role"))
    snap = ls.snapshot(uri)
    checked = snap.analysis.checked
    plan = checked.plans.get(plan_name)
    if plan is None:
        decl = next(
            (d for d in snap.analysis.module.decls if d.kind == "plan" and d.name == plan_name),
            None,
        )
        if decl is None:
            have = ", ".join(sorted(checked.plans)) or "none"
            raise RequestFailed(f"no plan named `{plan_name}` in {uri} (checked plans: {have})")
        inside = [
            d
            for d in snap.analysis.diagnostics
            if d.span is not None and decl.span.start <= d.span.start <= decl.span.end
        ]
        why = "; ".join(f"{d.name}: {d.message}" for d in inside[:3])
        if not why:
            why = f"system `{decl.target}` is refused or missing"
        raise RequestFailed(f"plan `{plan_name}` is refused ({why})")
    index = plan.membership.index_of(role)
    if index is None:
        fams = ", ".join(
            f.name if f.singleton else f"{f.name}[0..{f.count}]" for f in plan.membership.families
        )
        raise RequestFailed(f"plan `{plan_name}` has no role `{role}` (its roles: {fams})")
    schedule = project(plan, index)
    result: dict[str, Any] = {
        "plan": plan.name,
        "role": schedule.name,
        "index": index,
        "roles": plan.membership.total,
        "text": schedule.show(),
        "ops": [
            {
                "kind": op.kind,
                "lo": op.a,
                "hi": op.b,
                "link": op.link if op.kind in LINKED else None,
                "start": op.start,
                "count": op.count,
                "flags": op.flags,
                "text": op.show(schedule.links),
            }
            for op in schedule.ops
        ],
        "checkpointEvery": schedule.checkpoint_every,
        "links": [
            {"peer": k.peer, "peerName": k.peer_name, "accept": k.accept} for k in schedule.links
        ],
        "admission": None,
    }
    try:
        from alpha_core.plan.admission import admit
    except ImportError:
        return result
    pairing = checked.pairings.get(_optional(params, "pairing") or "")
    if pairing is not None and pairing.plan.name != plan.name:
        pairing = None
    a = admit(plan, pairing, index)
    result["admission"] = {
        "text": a.show(),
        "pairing": pairing.name if pairing is not None else None,
        "profile": a.profile.name,
        "capacity": a.profile.memory,
        "total": a.total,
        "headroom": a.headroom,
        "items": [{"what": w, "bytes": b} for w, b in a.items],
    }
    return result


def register(server: AlphaServer) -> None:
    server.feature(METHOD)(projection)
