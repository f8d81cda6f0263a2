"""Hover: the shape of the expression under the cursor, what a built-in takes and does, and on a
role of a plan or a pairing entry the memory each role needs against its profile."""

from __future__ import annotations

from lsprotocol import types

from alpha_core import query
from alpha_core.check.context import show_shape
from alpha_core.plan.model import Pairing, Plan
from alpha_core.plan.profiles import DEVICE_PROFILES
from alpha_core.query.blocks import described_at
from alpha_core.query.keywords import keyword_doc
from alpha_core.query.rename import word_at
from alpha_core.support.span import Span
from alpha_core.syntax import ast
from alpha_lsp.kernel import AlphaServer, Snapshot, guarded

MAX_ROLES_SHOWN = 4
MAX_ROLES_ADMITTED = 64  # a hierarchy has one distinct demand a level: far fewer in practice


def _code(text: str) -> str:
    return f"```alpha\n{text}\n```"


def _builtin(node: object) -> tuple[str, Span] | None:
    if isinstance(node, ast.Call):
        return node.func, node.func_span
    if isinstance(node, ast.Name):
        return node.id, node.span
    return None


def _role_at(
    module: ast.Module, chain: list[object], offset: int
) -> tuple[str, Span, ast.RoleRef | None] | None:
    """The role name under the cursor in a plan or pairing, with its reference if it has one."""
    for node in reversed(chain):
        if isinstance(node, ast.RoleDecl | ast.RoleRef) and node.name_span.start <= offset <= (
            node.span.end
        ):
            return node.name, node.span, node if isinstance(node, ast.RoleRef) else None
        if isinstance(node, ast.PairingItem):
            return node.role.name, node.role.span, node.role
        if isinstance(node, ast.Name) and isinstance(chain[0], ast.Decl):
            if chain[0].kind == "plan" and node.id in query.role_decls(module, chain[0].name):
                return node.id, node.span, None
        if isinstance(node, ast.ComputeStmt | ast.ApplyStmt):
            s = node.family_span
            if s.start <= offset <= s.end:
                return node.family, s, None
    return None


def admission_text(plan: Plan, pairing: Pairing | None, name: str, ref: ast.RoleRef | None) -> str:
    try:
        from alpha_core.plan.admission import admit, positions
        from alpha_core.plan.profiles import machine_profile
    except ImportError:  # admission is optional: older cores do not have it
        return ""
    fam = plan.membership.family(name)
    if fam is None:
        return f"plan `{plan.name}` has no role `{name}`"
    lo, hi = query.ref_range(ref, fam) if ref is not None else (0, fam.count)
    lo, hi = max(0, lo), min(fam.count, hi)
    if lo >= hi:
        return f"`{name}` has members 0..{fam.count}"
    first = fam.first
    if fam is plan.workers or fam.name == plan.workers.name:
        picks = positions(plan, first + lo, first + hi)
    else:
        picks = [first + lo]
    # every member whose demand differs is admitted; the least headroom is among them. Without
    # a pairing, against this machine, as `alpha build` admits it (the same figures as the CLI)
    machine = machine_profile() if pairing is None else None
    admitted = [admit(plan, pairing, i, machine) for i in picks[:MAX_ROLES_ADMITTED]]
    worst = min(admitted, key=lambda a: a.headroom)
    admissions = admitted[:MAX_ROLES_SHOWN]
    if worst not in admissions:
        admissions[-1] = worst
    where = f"pairing `{pairing.name}`" if pairing else (machine.name if machine else "")
    count = hi - lo
    head = (
        f"**{query.range_text(fam, lo, hi)}** — {count:,} role{'s' if count != 1 else ''} of plan "
        f"`{plan.name}`, on {where}"
    )
    verdict = (
        f"least headroom: {worst.headroom:,} bytes ({worst.role})"
        if worst.admitted
        else f"**does not fit**: {worst.role} needs {-worst.headroom:,} bytes more"
    )
    shown = (
        ""
        if len(picks) <= 1
        else f"\n\n{len(admissions)} of the {len(picks)} members whose demands differ, the "
        "least headroom among them:"
        if len(picks) > len(admissions)
        else f"\n\nthe {len(picks)} members whose demands differ:"
    )
    return "\n\n".join([head + shown, *(_code(a.show()) for a in admissions), verdict])


def _role_hover(snap: Snapshot, decl: ast.Decl, chain: list[object], offset: int) -> str | None:
    role = _role_at(snap.analysis.module, chain, offset)
    if role is None:
        return None
    name, _, ref = role
    checked = snap.analysis.checked
    plan_name = decl.name if decl.kind == "plan" else decl.target
    plan = checked.plans.get(plan_name or "")
    pairing = checked.pairings.get(decl.name) if decl.kind == "pairing" else None
    device = _device(chain)
    if plan is None:
        return device + f"role `{name}`\n\nplan `{plan_name}` is refused: no admission to show"
    text = admission_text(plan, pairing, name, ref)
    if decl.kind == "pairing" and pairing is None:
        text += f"\n\npairing `{decl.name}` is refused; this machine is shown instead"
    return device + text


def _device(chain: list[object]) -> str:
    """A pairing entry's `gpu PROFILE`: the profile's name and memory, to head its hover."""
    for node in reversed(chain):
        if isinstance(node, ast.PairingItem):
            for prop in node.props:
                if prop.key != "gpu":
                    continue
                profile = DEVICE_PROFILES.get(prop.value.replace("_", "-"))
                if profile is None:
                    return f"`gpu {prop.value}`: no such device profile\n\n"
                return (
                    f"**GPU profile `{profile.name}`**: {profile.memory:,} bytes of device "
                    f"memory ({profile.memory / 2**30:.1f} GiB)\n\n"
                )
    return ""


def _keyword(snap: Snapshot, offset: int) -> str | None:
    """A keyword under the cursor (not a name the file declares, nor in a comment or a
    string): what it means."""
    span = word_at(snap.text, offset)
    if span is None:
        return None
    word = snap.text[span.start : span.end]
    doc = keyword_doc(word)
    if doc is None or span in snap.analysis.checked.definitions:
        return None
    line_start = snap.text.rfind("\n", 0, span.start) + 1
    head = snap.text[line_start : span.start]
    if "#" in head or head.count('"') % 2:
        return None
    return f"**{word}** (keyword)\n\n{doc}"


def _referenced(chain: list[object], offset: int) -> str | None:
    """A name under the cursor that refers to a parameter of the system or an argument of its
    function, as declared: `w2: f32[32, 10]`. Used where the checker gave the expression no
    shape, in a function whose body holds a refusal: its declared names still have their
    types, and a user hovers most exactly when something is broken. A name a `let` before it
    binds is not guessed at."""
    name = next((n for n in reversed(chain) if isinstance(n, ast.Name)), None)
    if name is None or not name.span.start <= offset <= name.span.end:
        return None
    fn = next((n for n in chain if isinstance(n, ast.FnItem)), None)
    if fn is not None:
        if any(
            isinstance(s, ast.Let) and s.name == name.id and s.span.end <= offset for s in fn.body
        ):
            return None
        arg = next((p for p in fn.params if p.name == name.id), None)
        if arg is not None:
            return f"{name.id}: {query.type_text(arg.type)}"
    decl = chain[0]
    if isinstance(decl, ast.Decl):
        param = next(
            (i for i in decl.items if isinstance(i, ast.ParamItem) and i.name == name.id), None
        )
        if param is not None:
            return f"{name.id}: {query.type_text(param.type)}"
    return None


def _in_unparsed(snap: Snapshot, chain: list[object], offset: int) -> str | None:
    """In an item that did not parse (an unclosed bracket swallows the rest of the system), a
    word naming one of the system's parameters: its declared type."""
    if not isinstance(chain[-1], ast.ErrorItem) or not isinstance(chain[0], ast.Decl):
        return None
    span = word_at(snap.text, offset)
    if span is None:
        return None
    word = snap.text[span.start : span.end]
    line_start = snap.text.rfind("\n", 0, span.start) + 1
    if "#" in snap.text[line_start : span.start]:
        return None  # a comment
    param = next(
        (i for i in chain[0].items if isinstance(i, ast.ParamItem) and i.name == word), None
    )
    return f"{word}: {query.type_text(param.type)}" if param is not None else None


def _declared(chain: list[object], offset: int) -> str | None:
    """A declaration's name under the cursor: what it declares; else a name's declaration."""
    referenced = _referenced(chain, offset)
    if referenced is not None:
        return referenced
    for node in reversed(chain):
        if isinstance(node, ast.FnItem) and node.name_span.start <= offset <= node.name_span.end:
            return query.fn_signature(node)
        if isinstance(node, ast.ParamItem | ast.FnParam) and (
            node.name_span.start <= offset <= node.name_span.end
        ):
            kind = "param" if isinstance(node, ast.ParamItem) else "argument"
            return f"{kind} {node.name}: {query.type_text(node.type)}"
    return None


def hover_text(snap: Snapshot, offset: int) -> str | None:
    module = snap.analysis.module
    chain = query.enclosing(module, offset)
    if not chain:
        return _keyword(snap, offset)
    decl = chain[0]
    assert isinstance(decl, ast.Decl)
    parts: list[str] = []
    if decl.kind in ("plan", "pairing"):
        role = _role_hover(snap, decl, chain, offset)
        if role:
            return role
    for node in reversed(chain):
        if isinstance(node, ast.Call) and node.func_span.start <= offset <= node.func_span.end:
            fn = next(
                (i for i in decl.items if isinstance(i, ast.FnItem) and i.name == node.func), None
            )
            if fn is not None:
                parts.append(_code(query.fn_signature(fn)))
                break
        found = _builtin(node)
        if found is not None and found[1].start <= offset <= found[1].end:
            signature = query.builtin_signature(found[0])
            user_name = (
                isinstance(node, ast.Name) and node.span in snap.analysis.checked.definitions
            )
            if signature is not None and not user_name:
                summary = query.SUMMARIES.get(found[0], "")
                parts.append(_code(signature) + (f"\n\n{summary}" if summary else ""))
            break
    shaped = query.shape_at(snap.analysis.checked, offset)
    if shaped is not None:
        span, shape = shaped
        parts.append(_code(f"{snap.text[span.start : span.end]}: {show_shape(shape)}"))
    else:
        declared = _declared(chain, offset) or _in_unparsed(snap, chain, offset)
        if declared is not None:
            parts.append(_code(declared))
    if decl.kind == "system":  # a block array, a member or a loop's index: what it is
        described = described_at(decl, offset, snap.analysis.checked.definitions)
        if described is not None:
            parts.append(_code(described))
    if not parts:
        keyword = _keyword(snap, offset)
        if keyword is not None:
            parts.append(keyword)
    return "\n\n---\n\n".join(parts) if parts else None


def register(server: AlphaServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    @guarded(lambda: None)
    def hover(ls: AlphaServer, params: types.HoverParams) -> types.Hover | None:
        snap = ls.snapshot(params.text_document.uri)
        text = hover_text(snap, snap.lines.offset(params.position))
        if text is None:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))
