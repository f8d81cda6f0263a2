"""A pairing against its plan: the members no entry names, and where new entries go."""

from __future__ import annotations

from alpha_core.plan.model import Family, Plan
from alpha_core.syntax import ast


def pairing_gaps(module: ast.Module, plan: Plan, decl: ast.Decl) -> list[tuple[Family, int, int]]:
    """The members of each family of `plan` that no entry of pairing `decl` names: (family, lo,
    hi) ranges, in membership order."""
    covered: dict[str, list[tuple[int, int]]] = {}
    for item in decl.items:
        if not isinstance(item, ast.PairingItem):
            continue
        fam = plan.membership.family(item.role.name)
        if fam is None:
            continue
        covered.setdefault(fam.name, []).append(ref_range(item.role, fam))
    gaps: list[tuple[Family, int, int]] = []
    for fam in plan.membership.families:
        at = 0
        for lo, hi in sorted(covered.get(fam.name, [])):
            if lo > at:
                gaps.append((fam, at, min(lo, fam.count)))
            at = max(at, hi)
        if at < fam.count:
            gaps.append((fam, at, fam.count))
    return gaps


def ref_range(ref: ast.RoleRef, fam: Family) -> tuple[int, int]:
    """The members [lo, hi) of `fam` a role reference names."""
    if fam.singleton:
        return 0, 1
    if ref.index is not None:
        return ref.index, ref.index + 1
    if ref.every or ref.lo is None:
        return 0, fam.count
    return ref.lo, ref.hi or 0


def range_text(fam: Family, lo: int, hi: int) -> str:
    if fam.singleton:
        return fam.name
    if lo == 0 and hi == fam.count:
        return f"{fam.name}[*]"
    return fam.member(lo) if hi == lo + 1 else f"{fam.name}[{lo}..{hi}]"


def pairing_insertion(text: str, decl: ast.Decl, lines: list[str]) -> tuple[int, str]:
    """Where and what to insert to add `lines` as items at the end of a pairing's body."""
    body = decl.body_span
    indent = "  "
    for item in decl.items:
        line_start = text.rfind("\n", 0, item.span.start) + 1  # type: ignore[attr-defined]
        indent = text[line_start : item.span.start]  # type: ignore[attr-defined]
        if indent.strip():
            indent = "  "
    block = "".join(f"{indent}{line}\n" for line in lines)
    line_start = text.rfind("\n", body.start, body.end) + 1
    if line_start > 0 and not text[line_start : body.end].strip():
        return line_start, block
    return body.end, "\n" + block
