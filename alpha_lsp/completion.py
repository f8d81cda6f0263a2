"""Completion by context: the items a system, a plan or a pairing may hold, the names in scope,
the built-ins with their arguments as snippets, the hosts and device profiles of a pairing."""

from __future__ import annotations

import re
from collections.abc import Iterable

from lsprotocol import types

from alpha_core import query
from alpha_core.check.arguments import Arg
from alpha_core.check.builtins import CALLS, REDUCE, UNARY
from alpha_core.check.init_check import INIT_POSITIONAL
from alpha_core.check.system import INITS, LEARNERS, LOSSES
from alpha_core.plan.pairing_check import GPU_PROFILES, HOSTS
from alpha_core.query.blocks import members_after
from alpha_core.syntax import ast
from alpha_lsp.kernel import AlphaServer, Snapshot, guarded

CK = types.CompletionItemKind
SNIPPET = types.InsertTextFormat.Snippet

DECLS = [
    ("system", "system ${1:name} {\n  $0\n}"),
    ("plan", "plan ${1:name} for ${2:system} {\n  roles worker[${3:2}]\n  topology ${4:pair}\n}"),
    ("pairing", "pairing ${1:name} for ${2:plan} {\n  worker[*]: host ${3|x86_64,aarch64|}\n}"),
]
SYSTEM_ITEMS = [
    ("data", 'data ${1:train}: table("${2:data.csv}", features: ${3:4}, classes: ${4:3})'),
    ("batch", "batch ${1:64} leaves ${2:8}"),
    ("param", "param ${1:w}: f32[${2:4}, ${3:3}] = ${4:zeros}"),
    ("fn", "fn ${1:model}(x: f32[B, ${2:4}]) -> f32[B, ${3:3}] {\n  return $0\n}"),
    ("loss", "loss ${1|softmax_cross_entropy,sigmoid_cross_entropy,mse|}(model(x), y)"),
    ("learner", "learner ${1|sgd,momentum,adam|}(lr: ${2:0.01})"),
    ("steps", "steps ${1:100}"),
    ("arithmetic", "arithmetic ${1|fused,unfused|}"),
]
FN_ITEMS = [("let", "let ${1:h} = $0"), ("return", "return $0")]
PLAN_ITEMS = [
    ("roles", "roles worker[${1:2}]"),
    ("topology", "topology ${1|pair,star(hub),hierarchy(fanout: 2)|}"),
    (
        "round",
        "round {\n  each worker computes grad over its leaves\n"
        "  combine grad by canonical tree, deliver to all\n  each worker applies learner\n}",
    ),
    ("contract", "contract exact"),
    ("leaves", "leaves worker[${1:0}]: ${2:0}..${3:4}"),
]
ROUND_STMTS = [
    ("each … computes", "each ${1:worker} computes grad over its leaves"),
    ("combine", "combine grad by canonical tree, deliver to all"),
    ("each … applies", "each ${1:worker} applies learner"),
]
TOPOLOGIES = [
    ("pair", "pair"),
    ("star", "star(${1:hub})"),
    ("hierarchy", "hierarchy(fanout: ${1:2})"),
]
DATA_SOURCES = [
    ("table", 'table("${1:data.csv}", features: ${2:4}, classes: ${3:3})'),
    ("synthetic", "synthetic(rows: ${1:600}, features: ${2:8}, classes: ${3:4}, seed: ${4:1})"),
]
EXAMPLE = {"lr": "0.01", "mean": "0.0", "std": "0.1", "low": "-0.1", "high": "0.1", "seed": "1"}
PAIRING_KEYS = [
    ("host", "host ${1|x86_64,aarch64|}"),
    ("gpu", "gpu ${1:h200}"),
    ("memory", "memory ${1:8} gib"),
    ("cores", "cores ${1:8}"),
]

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
CONTEXT = 400  # characters of the line before the cursor that completion reads
SCOPE_KINDS = {
    "param": CK.Variable,
    "data": CK.Variable,
    "local": CK.Variable,
    "argument": CK.Variable,
    "label": CK.Variable,
    "fn": CK.Function,
    "role": CK.EnumMember,
}


def _snippets(
    pairs: Iterable[tuple[str, str]], kind: types.CompletionItemKind, detail: str = ""
) -> list[types.CompletionItem]:
    return [
        types.CompletionItem(
            label=label,
            kind=kind,
            detail=detail or None,
            insert_text=body,
            insert_text_format=SNIPPET,
        )
        for label, body in pairs
    ]


def call_snippet(name: str, args: list[Arg], positional: int = 0) -> str:
    parts = []
    for i, a in enumerate(args, 1):
        value = EXAMPLE.get(a.name, "" if a.default is None else str(a.default))
        value = value or ("0.1" if a.kind == "float" else "1")
        parts.append(f"${{{i}:{value}}}" if i <= positional else f"{a.name}: ${{{i}:{value}}}")
    return f"{name}({', '.join(parts)})"


def _builtins(names: dict[str, list[Arg]], positional: int = 0) -> list[types.CompletionItem]:
    return [
        types.CompletionItem(
            label=name,
            kind=CK.Function,
            detail=query.builtin_signature(name),
            documentation=query.SUMMARIES.get(name),
            insert_text=call_snippet(name, args, positional),
            insert_text_format=SNIPPET,
        )
        for name, args in names.items()
    ]


def _words(
    words: Iterable[str], kind: types.CompletionItemKind, detail: str
) -> list[types.CompletionItem]:
    return [types.CompletionItem(label=w, kind=kind, detail=detail) for w in words]


def _item_at(decl: ast.Decl, offset: int) -> object | None:
    for item in decl.items:
        span = item.span  # type: ignore[attr-defined]
        if span.start <= offset <= span.end:
            return item
    return None


def _inside_braces(snap: Snapshot, item: object | None, offset: int, word: str) -> bool:
    """Whether the cursor is inside the braces of an item that starts with `word` (a `fn` body,
    a `round`), parsed or not yet."""
    if item is None:
        return False
    span = item.span  # type: ignore[attr-defined]
    text = snap.text[span.start : offset]
    return text.startswith(word) and text.count("{") > text.count("}")


def _word_length(before: str) -> int:
    """How many characters of the name being typed stand before the cursor."""
    i = len(before)
    while i > 0 and (before[i - 1].isascii() and (before[i - 1].isalnum() or before[i - 1] == "_")):
        i -= 1
    return len(before) - i


def _open_call(head: str) -> str | None:
    """The function whose argument list the cursor is in, on this line."""
    depth = 0
    for i in range(len(head) - 1, -1, -1):
        if head[i] == ")":
            depth += 1
        elif head[i] == "(":
            if depth == 0:
                m = _WORD.search(head[:i])
                return m.group() if m else None
            depth -= 1
    return None


def _kwargs(func: str, head: str) -> list[types.CompletionItem]:
    args = query.builtin_args(func)
    given = set(re.findall(r"([A-Za-z_]\w*)\s*:", head[head.rfind("(") :]))
    return [
        types.CompletionItem(
            label=f"{a.name}:",
            kind=CK.Property,
            detail=f"{a.kind}" + ("" if a.default is None else f" = {a.default!r}"),
            insert_text=f"{a.name}: ",
        )
        for a in args
        if a.name not in given
    ]


def complete(snap: Snapshot, offset: int) -> list[types.CompletionItem]:
    text = snap.text
    line_start = max(text.rfind("\n", 0, offset), text.rfind("\r", 0, offset)) + 1
    # what decides a completion stands close to the cursor: a huge line is read no further back
    before = text[max(line_start, offset - CONTEXT) : offset]
    head = before[: len(before) - _word_length(before)]
    module = snap.analysis.module
    decl = query.decl_at(module, offset)
    systems = [d.name for d in module.decls if d.kind == "system"]
    plans = [d.name for d in module.decls if d.kind == "plan"]
    if re.match(r"^plan\s+\w+\s+for\s+$", head):
        return _words(systems, CK.Module, "system")
    if re.match(r"^pairing\s+\w+\s+for\s+$", head):
        return _words(plans, CK.Module, "plan")
    if decl is None or not (decl.body_span.start <= offset <= decl.body_span.end):
        # a declaration starts at column 0
        return _snippets(DECLS, CK.Keyword) if head == "" else []
    if decl.kind == "system":
        return _system(snap, decl, offset, head)
    if decl.kind == "plan":
        return _plan(snap, decl, offset, head)
    if decl.kind == "pairing":
        return _pairing(snap, decl, offset, head)
    return []


def _scope(snap: Snapshot, offset: int) -> list[types.CompletionItem]:
    return [
        types.CompletionItem(
            label=n.name, kind=SCOPE_KINDS.get(n.kind, CK.Variable), detail=n.detail
        )
        for n in query.names_in_scope(snap.analysis.module, offset)
    ]


def _system(snap: Snapshot, decl: ast.Decl, offset: int, head: str) -> list[types.CompletionItem]:
    item = _item_at(decl, offset)
    in_fn = _inside_braces(snap, item, offset, "fn")
    if in_fn and item is not None:  # after `blocks[i].` or `p.`: the block's members
        start = item.span.start  # type: ignore[attr-defined]
        members = members_after(decl, snap.text[start:offset], head)
        if members is not None:
            return [types.CompletionItem(label=n, kind=CK.Field, detail=t) for n, t in members]
    if not head.strip():
        return _snippets(FN_ITEMS if in_fn else SYSTEM_ITEMS, CK.Keyword) + (
            _scope(snap, offset) if in_fn else []
        )
    stripped = head.strip()
    if re.fullmatch(r"learner", stripped):
        return _builtins(LEARNERS)
    if re.fullmatch(r"loss", stripped):
        return _snippets(((n, f"{n}(model(x), y)") for n in LOSSES), CK.Function)
    if re.fullmatch(r"param\s+\w+\s*:.*=", stripped):
        inits = [
            item
            for name, args in INITS.items()
            for item in _builtins({name: args}, positional=INIT_POSITIONAL.get(name, 0))
        ]
        return inits + _words(["zeros", "ones"], CK.Constant, "every element +0.0, or 1.0")
    if re.fullmatch(r"data\s+\w+\s*:", stripped):
        return _snippets(DATA_SOURCES, CK.Function)
    call = _open_call(head)
    if call is not None and query.builtin_args(call) and not head.rstrip().endswith(":"):
        return _kwargs(call, head)
    names = _scope(snap, offset)
    if in_fn or stripped.startswith("loss"):
        names = [n for n in names if n.detail is None or not n.detail.startswith("data set")]
        names += [
            types.CompletionItem(
                label=n,
                kind=CK.Function,
                detail=query.builtin_signature(n),
                documentation=query.SUMMARIES.get(n),
                insert_text=f"{n}($1)",
                insert_text_format=SNIPPET,
            )
            for n in [*UNARY, *REDUCE, *(c for c in CALLS if c not in UNARY)]
        ]
    return names


def _plan(snap: Snapshot, decl: ast.Decl, offset: int, head: str) -> list[types.CompletionItem]:
    item = _item_at(decl, offset)
    stripped = head.strip()
    if _inside_braces(snap, item, offset, "round"):
        return _snippets(ROUND_STMTS, CK.Keyword) if not stripped else _scope(snap, offset)
    if not stripped:
        return _snippets(PLAN_ITEMS, CK.Keyword)
    if stripped == "topology":
        return _snippets(TOPOLOGIES, CK.Function)
    if stripped == "contract":
        return _words(["exact"], CK.Constant, "the bits of the single-process build")
    return _scope(snap, offset)


def _pairing(snap: Snapshot, decl: ast.Decl, offset: int, head: str) -> list[types.CompletionItem]:
    stripped = head.strip()
    if stripped.endswith("host"):
        return _words(HOSTS, CK.EnumMember, "host")
    if stripped.endswith("gpu"):
        return _words((p.replace("-", "_") for p in GPU_PROFILES), CK.EnumMember, "device profile")
    if stripped.endswith(":") or stripped.endswith(","):
        return _snippets(PAIRING_KEYS, CK.Property)
    if stripped:
        return []
    plan = snap.analysis.checked.plans.get(decl.target or "")
    out: list[types.CompletionItem] = []
    if plan is not None:
        for fam, lo, hi in query.pairing_gaps(snap.analysis.module, plan, decl):
            ref = query.range_text(fam, lo, hi)
            out.append(
                types.CompletionItem(
                    label=f"{ref}: host …",
                    kind=CK.Snippet,
                    detail="not paired yet",
                    insert_text=f"{ref}: host ${{1|x86_64,aarch64|}}",
                    insert_text_format=SNIPPET,
                    sort_text="0",
                )
            )
    roles = query.role_decls(snap.analysis.module, decl.target)
    for r in roles.values():
        ref = r.name if r.count is None else f"{r.name}[*]"
        out.append(
            types.CompletionItem(
                label=ref,
                kind=CK.EnumMember,
                detail="role family" if r.count is not None else "role",
                insert_text=f"{ref}: host ${{1|x86_64,aarch64|}}",
                insert_text_format=SNIPPET,
                sort_text="1",
            )
        )
    return out


def register(server: AlphaServer) -> None:
    @server.feature(
        types.TEXT_DOCUMENT_COMPLETION,
        types.CompletionOptions(trigger_characters=[" ", "(", ":", ",", "."]),
    )
    @guarded(lambda: types.CompletionList(is_incomplete=False, items=[]))
    def completion(ls: AlphaServer, params: types.CompletionParams) -> types.CompletionList:
        snap = ls.snapshot(params.text_document.uri)
        items = complete(snap, snap.lines.offset(params.position))
        return types.CompletionList(is_incomplete=False, items=items)
