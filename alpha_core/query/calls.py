"""Signature help: the call the cursor stands in, what it takes, and which argument is being
written. Read from the text before the cursor (a call being typed does not parse yet), the
callee looked up among the built-ins and the functions of the system around it."""

from __future__ import annotations

from dataclasses import dataclass

from alpha_core.query.signatures import SUMMARIES, builtin_args, builtin_signature
from alpha_core.query.tree import decl_at, type_text
from alpha_core.syntax import ast

CONTEXT = 2000  # characters before the cursor looked at for the open parenthesis


@dataclass(frozen=True)
class CallHelp:
    name: str
    label: str  # `adam(lr: float, beta1: float = 0.9, ...)`
    parameters: tuple[str, ...]  # each parameter's text, as it stands in `label`
    active: int  # the parameter being written (by its name for a keyword argument)
    summary: str


def _open_paren(text: str, offset: int) -> tuple[int, int] | None:
    """The `(` of the innermost call open at `offset`: (its offset, the number of top-level
    commas between it and the cursor)."""
    depth = 0
    commas = 0
    i = offset - 1
    low = max(0, offset - CONTEXT)
    while i >= low:
        ch = text[i]
        if ch in ")]":
            depth += 1
        elif ch in "([":
            if depth == 0:
                if ch == "[":
                    return None
                return i, commas
            depth -= 1
        elif ch == "," and depth == 0:
            commas += 1
        elif ch in "{}" and depth == 0:  # out of a body: no call is open
            return None
        i -= 1
    return None


def _callee(text: str, paren: int) -> str | None:
    j = paren
    while j > 0 and text[j - 1] in " \t":
        j -= 1
    k = j
    while k > 0 and (text[k - 1].isalnum() or text[k - 1] == "_"):
        k -= 1
    name = text[k:j]
    return name if name and not name[0].isdigit() else None


def _keyword_at(text: str, paren: int, offset: int) -> str | None:
    """The keyword argument being written: `name:` at the start of the current argument."""
    depth = 0
    start = paren + 1
    for i in range(paren + 1, offset):
        ch = text[i]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            start = i + 1
    head = text[start:offset].strip()
    name, colon, _ = head.partition(":")
    return name.strip() if colon and name.strip().isidentifier() else None


def call_at(module: ast.Module, text: str, offset: int) -> CallHelp | None:
    found = _open_paren(text, offset)
    if found is None:
        return None
    paren, commas = found
    name = _callee(text, paren)
    if name is None:
        return None
    decl = decl_at(module, offset)
    user = None
    if decl is not None and decl.kind == "system":
        user = next((i for i in decl.items if isinstance(i, ast.FnItem) and i.name == name), None)
    if user is not None:
        params = tuple(f"{p.name}: {type_text(p.type)}" for p in user.params)
        label = f"fn {name}({', '.join(params)}) -> {type_text(user.result)}"
        return CallHelp(name, label, params, min(commas, max(0, len(params) - 1)), "")
    signature = builtin_signature(name)
    if signature is None or "(" not in signature:
        return None
    inside = signature[signature.index("(") + 1 : signature.rindex(")")]
    params = tuple(p.strip() for p in inside.split(", ")) if inside else ()
    active = min(commas, max(0, len(params) - 1))
    keyword = _keyword_at(text, paren, offset)
    names = [a.name for a in builtin_args(name)]
    if keyword in names:
        active = names.index(keyword)
    return CallHelp(name, signature, params, active, SUMMARIES.get(name, ""))
