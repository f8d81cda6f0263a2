"""What a rename changes: every occurrence of one declared name (a parameter, a function, a
function argument, a `let`, a data set, a system, a plan, a pairing, a role), and when a
rename is refused (a keyword, a built-in, a name not declared in the file, a new name that is no
name or is taken)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from alpha_core.query.blocks import member_siblings, statements
from alpha_core.query.names import names_in_scope, references_at
from alpha_core.query.words import BUILTINS, KEYWORDS
from alpha_core.support.span import Span
from alpha_core.syntax import ast
from alpha_core.workspace.module_check import CheckedModule

# the keywords, and the words a plan or pairing reads as keywords (`state`, `host`, ...)
RESERVED = KEYWORDS | frozenset(
    "state checkpoint every rounds host gpu memory cores replicated partitioned".split()
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class RenameRefused(Exception):
    """Why a name cannot be renamed, or cannot be renamed to that: one line."""


class NothingToRename(RenameRefused):
    """No symbol at all under the cursor: a keyword, a comment, a space. An editor asking
    whether it may rename there is answered "no" without a message (LSP: null)."""


@dataclass(frozen=True)
class RenameTarget:
    name: str
    span: Span  # the occurrence under the cursor
    spans: tuple[Span, ...]  # every occurrence, the declaration first


def word_at(text: str, offset: int) -> Span | None:
    """The name (a run of name characters) touching `offset`."""
    start = offset
    while start > 0 and (
        text[start - 1].isascii() and (text[start - 1].isalnum() or text[start - 1] == "_")
    ):
        start -= 1
    m = _NAME.match(text, start)
    if m is None or m.end() < offset:
        return None
    return Span(m.start(), m.end())


def _in_comment_or_string(text: str, offset: int) -> bool:
    line_start = text.rfind("\n", 0, offset) + 1
    head = text[line_start:offset]
    quotes = 0
    for ch in head:
        if ch == '"':
            quotes += 1
        elif ch == "#" and quotes % 2 == 0:
            return True
    return quotes % 2 == 1


def rename_target(
    module: ast.Module, checked: CheckedModule, text: str, offset: int
) -> RenameTarget:
    """The name under `offset` and all its occurrences; RenameRefused where it is not one."""
    span = word_at(text, offset)
    if span is None or _in_comment_or_string(text, span.start):
        raise NothingToRename("no name here to rename")
    word = text[span.start : span.end]
    spans = references_at(module, checked, span.start, include_definition=True)
    spans = [s for s in spans if text[s.start : s.end] == word]
    if span not in spans:
        if word in RESERVED:
            raise NothingToRename(f"`{word}` is a keyword of the language: it cannot be renamed")
        if word in BUILTINS:
            raise RenameRefused(
                f"`{word}` is a built-in: only names declared in this file can be renamed"
            )
        raise RenameRefused(f"`{word}` is not a name declared in this file")
    local = _local_scope(module, spans[0])
    if local is not None:  # an argument or a `let`: only its function's occurrences (the `x`
        # of the loss is the examples, whatever the checker links it to)
        spans = [s for s in spans if local.start <= s.start and s.end <= local.end]
    return RenameTarget(word, span, tuple(dict.fromkeys(spans)))


def _local_scope(module: ast.Module, declared: Span) -> Span | None:
    """The function whose argument or `let` is declared at `declared`, if it is one."""
    for decl in module.decls:
        for item in decl.items:
            if isinstance(item, ast.FnItem) and item.span.start <= declared.start < item.span.end:
                names = [p.name_span for p in item.params]
                names += [
                    st.name_span
                    for st in statements(item.body)
                    if isinstance(st, ast.Let | ast.ForLoop)
                ]
                return item.span if declared in names else None
    return None


def check_new_name(module: ast.Module, target: RenameTarget, new_name: str) -> None:
    """RenameRefused if `new_name` cannot stand where the target's name stands."""
    if not _IDENT.match(new_name):
        raise RenameRefused(
            f"`{new_name}` is not a name (a letter or `_`, then letters, digits or `_`)"
        )
    if new_name in RESERVED:
        raise RenameRefused(f"`{new_name}` is a keyword of the language")
    if new_name in BUILTINS:
        raise RenameRefused(f"`{new_name}` is a built-in: a name declared as it would hide it")
    if new_name == target.name:
        return
    declared = target.spans[0]
    siblings = member_siblings(module, declared)
    if siblings is not None:  # a block's member: only its array's other members can clash
        if new_name in siblings:
            raise RenameRefused(f"`{new_name}` is a member of the same block array already")
        if new_name == "T":
            raise RenameRefused("a member may not be named `T`: `p.T` is the transpose")
        return
    for decl in module.decls:
        if decl.name_span == declared and any(
            d.name == new_name and d.kind == decl.kind for d in module.decls
        ):
            raise RenameRefused(f"a {decl.kind} named `{new_name}` is declared already")
    for use in target.spans:
        taken = {n.name: n for n in names_in_scope(module, use.start)}
        if new_name in taken:
            raise RenameRefused(
                f"`{new_name}` is declared already where `{target.name}` is used "
                f"({taken[new_name].kind})"
            )
