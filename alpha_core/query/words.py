"""Every word of a text classified: keyword, comment, string, number, or what a name stands for."""

from __future__ import annotations

import re
from typing import NamedTuple

from alpha_core.check.builtins import CALLS, REDUCE, UNARY
from alpha_core.check.system import INITS, LEARNERS, LOSSES
from alpha_core.query.names import links
from alpha_core.query.tree import walk
from alpha_core.support.span import Span
from alpha_core.syntax import ast
from alpha_core.workspace.module_check import CheckedModule

KEYWORDS = frozenset(
    "system plan pairing for in data batch leaves shuffle param fn let return loss learner steps "
    "roles topology round each computes over its combine by deliver to applies contract "
    "arithmetic".split()
)
_TOKEN = re.compile(
    r"(?P<comment>#[^\n]*)|(?P<string>\"[^\"\n]*\"?)"
    r"|(?P<number>(?:[0-9]+\.(?!\.)[0-9]*|(?<![.0-9])\.[0-9]+|[0-9]+)(?:[eE][-+]?[0-9]+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
)
_SPACE = re.compile(r"\s")
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


_BUILTINS = set(UNARY) | set(REDUCE) | set(CALLS) | set(LEARNERS) | set(INITS) | set(LOSSES)
_BUILTINS |= {"table", "synthetic", "shuffle", "zeros", "pair", "star", "hierarchy", "exact"}
_BUILTINS |= {"approximate"}
BUILTINS = frozenset(_BUILTINS)  # every built-in's name: what a user name may not take


def _classify(node: object, kinds: dict[Span, str]) -> None:
    if isinstance(node, ast.ParamItem):
        kinds[node.name_span] = "param"
    elif isinstance(node, ast.FnItem):
        kinds[node.name_span] = "fn"
    elif isinstance(node, ast.ParamArrayItem | ast.MemberName):  # a block array, a member
        kinds[node.name_span] = "param"
    elif isinstance(node, ast.FnParam):
        kinds[node.name_span] = "argument"
        if isinstance(node.type, ast.BlockType):  # `p: blocks`: the array's name
            kinds[node.type.span] = "param"
    elif isinstance(node, ast.ForLoop):
        kinds[node.name_span] = "local"
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


class Word(NamedTuple):
    """A classified word: `kind` is keyword, comment, string, number, decl, param, fn,
    argument, local, data, role, value, kwarg, builtin, type or name."""

    start: int
    end: int
    kind: str


def words(text: str, module: ast.Module, checked: CheckedModule) -> list[Word]:
    """Every comment, string, number and name of the text, classified, in source order."""
    kinds = {(s.start, s.end): k for s, k in word_kinds(module, checked).items()}
    # multi-word spans (`canonical tree`, `64 gib`): every word inside takes the span's kind
    for (a, b), k in [(ab, k) for ab, k in kinds.items() if _SPACE.search(text, *ab)]:
        for m in _NAME.finditer(text, a, b):
            kinds.setdefault((m.start(), m.end()), k)
    out: list[Word] = []
    for m in _TOKEN.finditer(text):
        group = m.lastgroup or "name"
        start, end = m.span()
        if group == "name":
            group = kinds.get((start, end)) or ("keyword" if m.group() in KEYWORDS else "name")
        out.append(Word(start, end, group))
    return out
