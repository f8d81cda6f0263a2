"""Questions an editor asks of one analysed file by position: what is here, what is its shape,
where is it defined and used, what names are in scope, what the outline is, and how each word
reads. Pure functions of an Analysis (or its tree); no IO, no face library.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass

from alpha_core.check.arguments import Arg
from alpha_core.check.expressions import REDUCE, UNARY
from alpha_core.check.module import CheckedModule
from alpha_core.check.system import INITS, LEARNERS, LOSSES, SYNTHETIC, TABLE
from alpha_core.ir.graph import Shape
from alpha_core.plan.model import Family, Plan
from alpha_core.syntax import ast
from alpha_core.syntax.span import Span

# ---- walking the tree ----------------------------------------------------------------------


def children(node: object) -> Iterator[object]:
    """The nodes directly inside a node, in source order (tuples are looked through)."""
    if isinstance(node, tuple):
        for n in node:
            if isinstance(n, tuple):
                yield from children(n)
            elif dataclasses.is_dataclass(n):
                yield n
        return
    if not dataclasses.is_dataclass(node) or isinstance(node, type):
        return
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        if isinstance(value, tuple):
            yield from children(value)
        elif dataclasses.is_dataclass(value) and not isinstance(value, Span):
            yield value


def walk(node: object) -> Iterator[object]:
    """Every node under `node` (itself first), depth first in source order."""
    yield node
    for c in children(node):
        yield from walk(c)


def _contains(span: Span, offset: int) -> bool:
    return span.start <= offset <= span.end


def enclosing(module: ast.Module, offset: int) -> list[object]:
    """The nodes containing `offset`, outermost (a Decl) first."""
    chain: list[object] = []
    nodes: list[object] = list(module.decls)
    while True:
        inside = [n for n in nodes if _contains(getattr(n, "span", Span(-1, -1)), offset)]
        if not inside:
            return chain
        # the narrowest of the candidates: an offset at the boundary of two siblings goes to the
        # one it is strictly inside, or to the later one
        best = min(inside, key=lambda n: (n.span.end - n.span.start, -n.span.start))  # type: ignore[attr-defined]
        chain.append(best)
        nodes = list(children(best))


def decl_at(module: ast.Module, offset: int) -> ast.Decl | None:
    for d in module.decls:
        if d.span.start <= offset <= d.span.end:
            return d
    return None


# ---- shapes --------------------------------------------------------------------------------


def shape_at(checked: CheckedModule, offset: int) -> tuple[Span, Shape] | None:
    """The checked shape of the smallest expression (or `let` name) containing `offset`."""
    best: tuple[Span, Shape] | None = None
    for span, shape in checked.types.items():
        if not _contains(span, offset):
            continue
        if best is None or (span.end - span.start) < (best[0].end - best[0].start):
            best = (span, shape)
    return best


def type_text(t: ast.TensorType) -> str:
    dims = ", ".join(str(d.value) for d in t.dims)
    return f"{t.dtype}[{dims}]"


def fn_signature(fn: ast.FnItem) -> str:
    params = ", ".join(f"{p.name}: {type_text(p.type)}" for p in fn.params)
    return f"fn {fn.name}({params}) -> {type_text(fn.result)}"


# ---- definitions and references ------------------------------------------------------------


def role_decls(module: ast.Module, plan_name: str | None) -> dict[str, ast.RoleDecl]:
    """The roles a plan declares, read from its text (also when the plan itself is refused)."""
    for decl in module.decls:
        if decl.kind == "plan" and decl.name == plan_name:
            return {
                r.name: r
                for item in decl.items
                if isinstance(item, ast.RolesItem)
                for r in item.roles
            }
    return {}


def _role_uses(decl: ast.Decl) -> Iterator[tuple[str, Span]]:
    for item in decl.items:
        if isinstance(item, ast.TopologyItem) and isinstance(item.shape, ast.Call):
            for a in item.shape.args:
                if isinstance(a, ast.Name):
                    yield a.id, a.span
        elif isinstance(item, ast.RoundItem):
            for s in item.stmts:
                if isinstance(s, ast.ComputeStmt | ast.ApplyStmt):
                    yield s.family, s.family_span
        elif isinstance(item, ast.LeavesItem):
            for r in item.ranges:
                yield r.role.name, r.role.name_span
        elif isinstance(item, ast.PairingItem):
            yield item.role.name, item.role.name_span


def links(module: ast.Module, checked: CheckedModule) -> dict[Span, Span]:
    """Use span → definition span: the checker's, plus the roles named in plans and pairings."""
    out = dict(checked.definitions)
    by_name = {(d.kind, d.name): d for d in module.decls}
    for decl in module.decls:
        if decl.kind == "plan":
            roles = role_decls(module, decl.name)
            if decl.target is not None and decl.target_span is not None:
                target = by_name.get(("system", decl.target))
                if target is not None:
                    out.setdefault(decl.target_span, target.name_span)
        elif decl.kind == "pairing":
            roles = role_decls(module, decl.target)
            if decl.target is not None and decl.target_span is not None:
                target = by_name.get(("plan", decl.target))
                if target is not None:
                    out.setdefault(decl.target_span, target.name_span)
        else:
            continue
        for name, span in _role_uses(decl):
            if name in roles:
                out[span] = roles[name].name_span
    return out


def definition_at(
    module: ast.Module, checked: CheckedModule, offset: int
) -> tuple[Span, Span] | None:
    """(the use under `offset`, its definition), or None where nothing is defined."""
    found = [(u, d) for u, d in links(module, checked).items() if _contains(u, offset)]
    if not found:
        return None
    return min(found, key=lambda ud: ud[0].end - ud[0].start)


def references_at(
    module: ast.Module, checked: CheckedModule, offset: int, include_definition: bool = True
) -> list[Span]:
    """Every use of what is under `offset` (a use or the definition itself), in source order."""
    table = links(module, checked)
    target: Span | None = None
    for use, d in table.items():
        if _contains(use, offset):
            target = d
            break
    if target is None:
        defs = [d for d in set(table.values()) if _contains(d, offset)]
        defs += [
            s for s in _definition_spans(module) if _contains(s, offset) and s not in set(defs)
        ]
        if not defs:
            return []
        target = defs[0]
    uses = sorted(u for u, d in table.items() if d == target)
    return ([target] if include_definition else []) + uses


def _definition_spans(module: ast.Module) -> Iterator[Span]:
    for decl in module.decls:
        if decl.kind != "error":
            yield decl.name_span
        for node in walk(decl.items):
            if isinstance(
                node, ast.ParamItem | ast.FnItem | ast.FnParam | ast.Let | ast.DataItem
            ) or isinstance(node, ast.RoleDecl):
                yield node.name_span


# ---- scope ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScopeName:
    name: str
    kind: str  # param | fn | data | argument | local | role | label | system | plan
    detail: str


def names_in_scope(module: ast.Module, offset: int) -> list[ScopeName]:
    """The names that may be written at `offset`."""
    decl = decl_at(module, offset)
    if decl is None:
        return []
    if decl.kind == "system":
        return _system_scope(decl, offset)
    plan_name = decl.name if decl.kind == "plan" else decl.target
    if decl.kind in ("plan", "pairing"):
        return [
            ScopeName(r.name, "role", f"role family [{r.count}]" if r.count else "role")
            for r in role_decls(module, plan_name).values()
        ]
    return []


def _system_scope(decl: ast.Decl, offset: int) -> list[ScopeName]:
    out: list[ScopeName] = []
    for item in decl.items:
        if isinstance(item, ast.ParamItem):
            out.append(ScopeName(item.name, "param", type_text(item.type)))
        elif isinstance(item, ast.FnItem):
            out.append(ScopeName(item.name, "fn", fn_signature(item)))
        elif isinstance(item, ast.DataItem):
            out.append(ScopeName(item.name, "data", f"data set ({item.source.func})"))
    for item in decl.items:
        span = getattr(item, "span", None)
        if span is None or not _contains(span, offset):
            continue
        if isinstance(item, ast.FnItem):
            out += [ScopeName(p.name, "argument", type_text(p.type)) for p in item.params]
            out += [
                ScopeName(s.name, "local", "let")
                for s in item.body
                if isinstance(s, ast.Let) and s.span.end < offset
            ]
        elif isinstance(item, ast.LossItem):
            out += [ScopeName("x", "label", "the examples"), ScopeName("y", "label", "the labels")]
    return out


# ---- outline -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Symbol:
    name: str
    kind: str  # system | plan | pairing | data | batch | param | fn | let | loss | learner ...
    detail: str
    span: Span
    selection: Span
    children: tuple[Symbol, ...] = ()


def outline(module: ast.Module, text: str) -> list[Symbol]:
    out: list[Symbol] = []
    for decl in module.decls:
        if decl.kind == "error":
            continue
        kids = tuple(s for s in (_item_symbol(i, text) for i in decl.items) if s is not None)
        detail = f"for {decl.target}" if decl.target else ""
        out.append(Symbol(decl.name, decl.kind, detail, decl.span, decl.name_span, kids))
    return out


def _item_symbol(item: object, text: str) -> Symbol | None:
    def sym(name: str, kind: str, detail: str, sel: Span, kids: tuple[Symbol, ...] = ()) -> Symbol:
        return Symbol(name, kind, detail, item.span, sel, kids)  # type: ignore[attr-defined]

    if isinstance(item, ast.DataItem):
        return sym(item.name, "data", item.source.func, item.name_span)
    if isinstance(item, ast.ParamItem):
        return sym(item.name, "param", type_text(item.type), item.name_span)
    if isinstance(item, ast.FnItem):
        lets = tuple(
            Symbol(s.name, "let", "", s.span, s.name_span)
            for s in item.body
            if isinstance(s, ast.Let)
        )
        return sym(item.name, "fn", fn_signature(item), item.name_span, lets)
    if isinstance(item, ast.BatchItem):
        return sym("batch", "batch", f"{item.size} leaves {item.leaves}", item.size_span)
    if isinstance(item, ast.LossItem | ast.LearnerItem):
        kind = "loss" if isinstance(item, ast.LossItem) else "learner"
        return sym(kind, kind, item.call.func, item.call.func_span)
    if isinstance(item, ast.StepsItem):
        return sym("steps", "steps", str(item.count), item.count_span)
    if isinstance(item, ast.RolesItem):
        kids = tuple(
            Symbol(
                r.name, "role", f"[{r.count}]" if r.count is not None else "", r.span, r.name_span
            )
            for r in item.roles
        )
        return sym("roles", "roles", "", item.span, kids)
    if isinstance(item, ast.TopologyItem | ast.ContractItem):
        word = "topology" if isinstance(item, ast.TopologyItem) else "contract"
        shape = item.shape if isinstance(item, ast.TopologyItem) else item.kind
        return sym(word, word, text[shape.span.start : shape.span.end], shape.span)
    if isinstance(item, ast.RoundItem):
        return sym("round", "round", f"{len(item.stmts)} statements", item.span)
    if isinstance(item, ast.LeavesItem):
        return sym("leaves", "leaves", "", item.span)
    if isinstance(item, ast.PairingItem):
        props = ", ".join(
            f"{p.key} {text[p.value_span.start : p.value_span.end]}" for p in item.props
        )
        return sym(text[item.role.span.start : item.role.span.end], "entry", props, item.role.span)
    return None


# ---- words ---------------------------------------------------------------------------------

KEYWORDS = frozenset(
    "system plan pairing for data batch leaves shuffle param fn let return loss learner steps "
    "roles topology round each computes over its combine by deliver to applies contract".split()
)
_TOKEN = re.compile(
    r"(?P<comment>#[^\n]*)|(?P<string>\"[^\"\n]*\"?)"
    r"|(?P<number>(?:[0-9]+\.(?!\.)[0-9]*|(?<![.0-9])\.[0-9]+|[0-9]+)(?:[eE][-+]?[0-9]+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def word_kinds(module: ast.Module, checked: CheckedModule) -> dict[Span, str]:
    """What each name in the tree stands for: a declaration's name, a parameter, a role ..."""
    kinds: dict[Span, str] = {}
    decl_spans = {}
    for decl in module.decls:
        if decl.kind == "error":
            continue
        kinds[decl.name_span] = "decl"
        decl_spans[decl.name_span] = decl
        if decl.target_span is not None:
            kinds[decl.target_span] = "decl"
        for node in walk(decl.items):
            _classify(node, kinds)
    by_def = {s: k for s, k in kinds.items()}
    for use, d in links(module, checked).items():
        if use not in kinds and d in by_def:
            kinds[use] = by_def[d]
    return kinds


_BUILTINS = set(UNARY) | set(REDUCE) | set(LEARNERS) | set(INITS) | set(LOSSES)
_BUILTINS |= {"table", "synthetic", "shuffle", "zeros", "pair", "star", "hierarchy", "exact"}
_BUILTINS |= {"approximate"}


def _classify(node: object, kinds: dict[Span, str]) -> None:
    if isinstance(node, ast.ParamItem):
        kinds[node.name_span] = "param"
    elif isinstance(node, ast.FnItem):
        kinds[node.name_span] = "fn"
    elif isinstance(node, ast.FnParam):
        kinds[node.name_span] = "argument"
    elif isinstance(node, ast.Let):
        kinds[node.name_span] = "local"
    elif isinstance(node, ast.DataItem):
        kinds[node.name_span] = "data"
    elif isinstance(node, ast.RoleDecl | ast.RoleRef):
        kinds[node.name_span] = "role"
    elif isinstance(node, ast.ComputeStmt):
        kinds[node.family_span] = "role"
        kinds[node.what_span] = "value"
    elif isinstance(node, ast.ApplyStmt):
        kinds[node.family_span] = "role"
    elif isinstance(node, ast.CombineStmt):
        kinds[node.what_span] = "value"
        kinds[node.order_span] = "value"
        kinds[node.deliver_span] = "value"
    elif isinstance(node, ast.PairingProp):
        kinds[node.key_span] = "keyword"
        kinds[node.value_span] = "value"
    elif isinstance(node, ast.Kwarg):
        kinds[node.name_span] = "kwarg"
    elif isinstance(node, ast.Call):
        kinds[node.func_span] = "builtin" if node.func in _BUILTINS else "fn"
    elif isinstance(node, ast.Name) and node.id in _BUILTINS:
        kinds[node.span] = "builtin"
    elif isinstance(node, ast.TensorType):
        kinds[node.dtype_span] = "type"
    elif isinstance(node, ast.Dim) and isinstance(node.value, str):
        kinds[node.span] = "type"


@dataclass(frozen=True)
class Word:
    span: Span
    kind: str  # keyword comment string number decl param fn argument local data role value
    # kwarg builtin type name


def words(text: str, module: ast.Module, checked: CheckedModule) -> list[Word]:
    """Every comment, string, number and name of the text, classified, in source order."""
    kinds = word_kinds(module, checked)
    # multi-word spans (`canonical tree`, `64 gib`): every word inside takes the span's kind
    for s, k in [
        (s, k) for s, k in kinds.items() if any(c.isspace() for c in text[s.start : s.end])
    ]:
        for m in _NAME.finditer(text, s.start, s.end):
            kinds.setdefault(Span(m.start(), m.end()), k)
    out: list[Word] = []
    for m in _TOKEN.finditer(text):
        group = m.lastgroup or "name"
        span = Span(m.start(), m.end())
        if group != "name":
            out.append(Word(span, group))
            continue
        kind = kinds.get(span) or ("keyword" if m.group() in KEYWORDS else "name")
        out.append(Word(span, kind))
    return out


# ---- built-ins -----------------------------------------------------------------------------

SUMMARIES = {
    "sgd": "gradient descent: p = p - lr·g",
    "momentum": "heavy-ball momentum: v = mu·v + g, then p = p - lr·v",
    "adam": "Adam with bias correction; state m, v, b1t, b2t",
    "zeros": "every element +0.0",
    "normal": "mean + std·z, z an Irwin–Hall approximation of a standard normal; a pure "
    "function of (seed, element)",
    "uniform": "low + (high - low)·u, u uniform in [0, 1); a pure function of (seed, element)",
    "softmax_cross_entropy": "per example log(Σ exp(z - m)) - (z[c] - m); needs class labels",
    "mse": "per example the mean of (z - t)², added left to right; needs regression targets",
    "table": "a CSV file of numbers, the label in the last column",
    "synthetic": "Gaussian blobs (classes) or a noisy linear map (targets), generated from a seed "
    "and compiled into the executable",
    "shuffle": "the order of the examples each epoch, from a seed",
    "relu": "t > 0 ? t : 0, elementwise",
    "tanh": "the compiler's tanh recipe, elementwise (within 3 ulp)",
    "sigmoid": "1 / (1 + exp(-t)), elementwise (within 3 ulp)",
    "exp": "the compiler's exp recipe, elementwise (within 2 ulp)",
    "log": "the compiler's log recipe, elementwise (within 2 ulp)",
    "sum": "the sum from +0.0 in row-major order, of all of t or over `axis:`",
    "mean": "the sum divided by the count, of all of t or over `axis:`",
    "pair": "two workers that exchange their pieces",
    "star": "workers send their pieces to one hub, which combines and sends the total back",
    "hierarchy": "a tree of workers, each combining up to `fanout` children",
    "exact": "every plan gives the bits of the single-process build",
}


def _arg_text(a: Arg) -> str:
    return f"{a.name}: {a.kind}" + ("" if a.default is None else f" = {a.default!r}")


def builtin_signature(name: str) -> str | None:
    """How a built-in is called, with its arguments and their defaults."""
    tables: dict[str, list[Arg]] = {**LEARNERS, **INITS, "table": TABLE, "synthetic": SYNTHETIC}
    tables["shuffle"] = [Arg("seed", "int")]
    if name in tables:
        return f"{name}({', '.join(_arg_text(a) for a in tables[name])})"
    if name in LOSSES:
        return f"{name}(model(x), y)"
    if name in UNARY:
        return f"{name}(t)"
    if name in REDUCE:
        return f"{name}(t, axis: int)"
    if name == "zeros":
        return "zeros"
    if name == "star":
        return "star(HUB)"
    if name == "hierarchy":
        return "hierarchy(fanout: int)"
    if name in ("pair", "exact"):
        return name
    return None


def builtin_args(name: str) -> list[Arg]:
    return {**LEARNERS, **INITS, "table": TABLE, "synthetic": SYNTHETIC}.get(name, [])


# ---- plans and pairings --------------------------------------------------------------------


def role_family(plan: Plan, name: str) -> Family | None:
    return plan.membership.family(name)


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
