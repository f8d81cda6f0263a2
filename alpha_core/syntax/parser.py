"""Parse a source text into a Module. Parsing never fails: it returns a tree and diagnostics.

The file is cut into declarations and each declaration's body into items (pieces.py); each
piece is parsed by the LALR grammar in grammars/alpha.lark with the start rule that fits it.
Parsing is memoized at two levels in one table (`_parse_piece`), both by text alone: a whole
declaration, with spans relative to its first character, and within it each item. An edit
re-parses the one declaration it touched, and in it only the items whose text changed; every
other declaration is a lookup, wherever it moved. Absolute spans are made when the module is
asked for (`ParsedFile.module`), one declaration at a time, and kept for the offsets in use.
A piece that does not parse becomes an ErrorItem.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lark

from alpha_core.diagnostics import Diagnostic, Related
from alpha_core.syntax import ast
from alpha_core.syntax.pieces import DeclPieces, cut_decls, scan_decl
from alpha_core.syntax.shift import shift
from alpha_core.syntax.shift import span as shift_span
from alpha_core.syntax.span import Span

GRAMMAR_PATH = Path(__file__).resolve().parents[2] / "grammars" / "alpha.lark"
ITEM_START = {"system": "system_item", "plan": "plan_item", "pairing": "pairing_item"}
DECLARATION = "declaration"  # the pseudo start rule of a whole declaration in `_parse_piece`


@functools.cache
def _parser() -> lark.Lark:
    return lark.Lark(
        GRAMMAR_PATH.read_text(),
        parser="lalr",
        start=["header", "system_item", "plan_item", "pairing_item", "start"],
        propagate_positions=True,
        maybe_placeholders=True,
    )


class _SyntaxFailure(Exception):
    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


_TOKEN_WORDS = {
    "LBRACE": "`{`",
    "RBRACE": "`}`",
    "LPAR": "`(`",
    "RPAR": "`)`",
    "LSQB": "`[`",
    "RSQB": "`]`",
    "COMMA": "`,`",
    "COLON": "`:`",
    "EQUAL": "`=`",
    "PLUS": "`+`",
    "MINUS": "`-`",
    "STAR": "`*`",
    "SLASH": "`/`",
    "__ANON_0": "`->`",
    "NAME": "a name",
    "INT": "an integer",
    "NUMBER": "a number",
    "STRING": "a string",
    "$END": "end of item",
}


def _describe(expected: set[str]) -> str:
    words = sorted({_TOKEN_WORDS.get(e, f"`{e.lower()}`" if e.isupper() else e) for e in expected})
    if len(words) > 6:
        words = words[:6] + ["..."]
    return ", ".join(words)


def _syntax_diagnostic(err: lark.exceptions.LarkError, text: str, offset: int) -> Diagnostic:
    if isinstance(err, lark.exceptions.UnexpectedToken):
        tok = err.token
        if tok.type == "$END":
            pos = len(text)
            found = "end of item"
        else:
            pos = tok.start_pos or 0
            found = f"`{tok.value}`"
        # `accepts` are the tokens really acceptable here; `expected` holds the lookaheads of the
        # state before its pending reductions, which may name items that cannot follow
        message = f"expected {_describe(set(err.accepts or err.expected))}, found {found}"
        span = Span(offset + pos, offset + pos + max(1, len(str(tok.value))))
        if tok.type == "$END":
            span = Span(offset + max(0, pos - 1), offset + pos)
    elif isinstance(err, lark.exceptions.UnexpectedCharacters):
        pos = err.pos_in_stream or 0
        message = f"unexpected character `{text[pos]}`"
        span = Span(offset + pos, offset + pos + 1)
    else:
        pos = 0
        message = "this does not parse"
        span = Span(offset, offset + len(text))
    return Diagnostic("syntax-error", message, span)


@dataclass(frozen=True, eq=False)
class ParsedDecl:
    """One declaration parsed on its own: its tree and diagnostics with spans relative to its
    first character. The same text always gives the same object while it is memoized, so it
    serves as a key for what is computed from it (compared by identity)."""

    text: str
    decl: ast.Decl
    diagnostics: tuple[Diagnostic, ...]


@functools.lru_cache(maxsize=65536)
def _parse_piece(text: str, start: str) -> tuple[Any, Diagnostic | None]:
    """Parse one piece at offset 0. Memoized by text: the unit of incremental reparsing.

    `start` is a grammar start rule, or DECLARATION for a whole declaration (a ParsedDecl,
    whose items come from this same table), so clearing it forgets every parse."""
    if start == DECLARATION:
        diags: list[Diagnostic] = []
        decl = _parse_decl(scan_decl(text), diags)
        return ParsedDecl(text, decl, tuple(diags)), None
    try:
        tree = _parser().parse(text, start=start)
        return _Build(text).node(tree), None
    except lark.exceptions.UnexpectedInput as err:  # a grammar error must not hide as input's
        return None, _syntax_diagnostic(err, text, 0)
    except _SyntaxFailure as failure:
        return None, failure.diagnostic
    except RecursionError:
        return None, Diagnostic(
            "syntax-error",
            "this item nests too deeply to parse",
            Span(0, len(text)),
            help="split the expression with `let`",
        )


def parse_decl(text: str) -> ParsedDecl:
    """A declaration's text (from its keyword at column 0 to its end), parsed at offset 0."""
    parsed, _ = _parse_piece(text, DECLARATION)
    assert isinstance(parsed, ParsedDecl)
    return parsed


def parse_cache_info() -> Any:
    """Hits and misses of the parse memo (declarations and items together): a miss is a
    declaration or an item parsed anew."""
    return _parse_piece.cache_info()


@functools.lru_cache(maxsize=8192)
def _placed(parsed: ParsedDecl, offset: int) -> ast.Decl:
    """A declaration's tree at its offset in the file; kept while that offset is in use."""
    return shift(parsed.decl, offset)


def clear_memos() -> None:
    """Forget every parsed piece and placed declaration."""
    _parse_piece.cache_clear()
    _placed.cache_clear()


def shift_diagnostic(d: Diagnostic, by: int) -> Diagnostic:
    """The same diagnostic with its span and related spans moved by `by` characters."""
    if by == 0:
        return d
    return dataclasses.replace(
        d,
        span=shift_span(d.span, by) if d.span is not None else None,
        related=tuple(Related(shift_span(r.span, by), r.message) for r in d.related),
    )


@dataclass(frozen=True)
class ParsedFile:
    """A file parsed declaration by declaration: each one at offset 0 and where it starts."""

    decls: tuple[tuple[ParsedDecl, int], ...]
    diagnostics: tuple[Diagnostic, ...]  # stray text first, then each declaration's, in order

    @functools.cached_property
    def module(self) -> ast.Module:
        """The tree with spans into the file, made when first asked for."""
        return ast.Module(tuple(_placed(parsed, offset) for parsed, offset in self.decls))


def parse_file(text: str) -> ParsedFile:
    """Parse a whole file into its declarations. Never raises on any input text."""
    bounds, strays = cut_decls(text)
    diags: list[Diagnostic] = []
    for stray in strays:
        diags.append(
            Diagnostic(
                "syntax-error",
                "expected `system`, `plan` or `pairing` at the start of a line",
                Span(
                    stray.piece.span.start,
                    stray.piece.span.start + len(stray.piece.text.split()[0]),
                ),
                help="declarations start at column 0 with their keyword",
            )
        )
    decls: list[tuple[ParsedDecl, int]] = []
    for start, end in bounds:
        parsed = parse_decl(text[start:end])
        decls.append((parsed, start))
        diags += (shift_diagnostic(d, start) for d in parsed.diagnostics)
    return ParsedFile(tuple(decls), tuple(diags))


def parse(text: str) -> tuple[ast.Module, list[Diagnostic]]:
    """Parse a whole file. Never raises on any input text."""
    parsed = parse_file(text)
    return parsed.module, list(parsed.diagnostics)


def _parse_decl(dp: DeclPieces, diags: list[Diagnostic]) -> ast.Decl:
    header, err = _parse_piece(dp.header.text, "header")
    if err is not None:
        diags.append(shift_diagnostic(err, dp.header.span.start))
        return ast.Decl("error", "", dp.header.span, None, None, (), dp.span, dp.body)
    kind, name, name_span, target, target_span = shift(header, dp.header.span.start)
    if dp.missing_open:
        at = dp.header.span.end  # the character after the header; none at the end of the text
        diags.append(
            Diagnostic(
                "syntax-error",
                f"expected `{{` after the {kind} header",
                Span(at, min(at + 1, dp.span.end)),
            )
        )
    if dp.unclosed:
        diags.append(
            Diagnostic(
                "syntax-error",
                f"unclosed `{{` of {kind} `{name}`",
                Span(dp.body.start - 1, dp.body.start),
                help="add `}` where the body ends",
            )
        )
    items: list[object] = []
    start = ITEM_START.get(kind)
    for piece in dp.items:
        if start is None:
            items.append(ast.ErrorItem(piece.text, piece.span))
            continue
        item, err = _parse_piece(piece.text, start)
        if err is not None:
            diags.append(shift_diagnostic(err, piece.span.start))
            items.append(ast.ErrorItem(piece.text, piece.span))
        else:
            items.append(shift(item, piece.span.start))
    return ast.Decl(kind, name, name_span, target, target_span, tuple(items), dp.span, dp.body)


def _int(tok: lark.Token) -> int:
    """An integer literal's value; one beyond Python's digit limit for int() is refused here."""
    try:
        return int(tok)
    except ValueError:
        raise _SyntaxFailure(
            Diagnostic("syntax-error", f"an integer of {len(tok)} digits is too long", _span(tok))
        ) from None


def _span(meta_or_tok: Any) -> Span:
    if isinstance(meta_or_tok, lark.Token):
        return Span(meta_or_tok.start_pos or 0, meta_or_tok.end_pos or 0)
    meta = meta_or_tok.meta
    if getattr(meta, "empty", True):
        return Span(0, 0)
    return Span(meta.start_pos, meta.end_pos)


class _Build:
    """lark tree → ast nodes, spans relative to the piece."""

    def __init__(self, text: str) -> None:
        self.text = text

    def node(self, t: Any) -> Any:
        if isinstance(t, lark.Token):
            raise _SyntaxFailure(Diagnostic("syntax-error", f"unexpected `{t}`", _span(t)))
        method = getattr(self, "_" + t.data, None)
        if method is None:
            raise _SyntaxFailure(Diagnostic("syntax-error", "this does not parse", _span(t)))
        return method(t, *t.children)

    # headers: (kind, name, name_span, target, target_span)
    def _system_header(self, t: Any, name: lark.Token) -> tuple[Any, ...]:
        return ("system", str(name), _span(name), None, None)

    def _plan_header(self, t: Any, name: lark.Token, target: lark.Token) -> tuple[Any, ...]:
        return ("plan", str(name), _span(name), str(target), _span(target))

    def _pairing_header(self, t: Any, name: lark.Token, target: lark.Token) -> tuple[Any, ...]:
        return ("pairing", str(name), _span(name), str(target), _span(target))

    # system items
    def _data_item(self, t: Any, name: lark.Token, source: Any) -> ast.DataItem:
        return ast.DataItem(str(name), _span(name), self.node(source), _span(t))

    def _batch_item(self, t: Any, size: lark.Token, leaves: lark.Token, shuffle: Any) -> Any:
        sh = None
        if shuffle is not None:
            args, kwargs = self._args(shuffle.children[0])
            at = _span(shuffle).start  # the keyword starts the clause
            sh = ast.Call("shuffle", Span(at, at + len("shuffle")), args, kwargs, _span(shuffle))
        return ast.BatchItem(_int(size), _span(size), _int(leaves), _span(leaves), sh, _span(t))

    def _param_item(self, t: Any, name: lark.Token, ty: Any, init: Any) -> ast.ParamItem:
        return ast.ParamItem(str(name), _span(name), self.node(ty), self.node(init), _span(t))

    def _fn_item(self, t: Any, name: lark.Token, params: Any, result: Any, *body: Any) -> Any:
        ps = tuple(self._fn_param(p) for p in params.children) if params is not None else ()
        return ast.FnItem(
            str(name),
            _span(name),
            ps,
            self.node(result),
            tuple(self.node(s) for s in body),
            _span(t),
        )

    def _fn_param(self, p: Any) -> ast.FnParam:
        name, ty = p.children
        return ast.FnParam(str(name), _span(name), self.node(ty), _span(p))

    def _let_stmt(self, t: Any, name: lark.Token, value: Any) -> ast.Let:
        return ast.Let(str(name), _span(name), self.node(value), _span(t))

    def _return_stmt(self, t: Any, value: Any) -> ast.Return:
        return ast.Return(self.node(value), _span(t))

    def _loss_item(self, t: Any, call: Any) -> ast.LossItem:
        return ast.LossItem(self.node(call), _span(t))

    def _learner_item(self, t: Any, call: Any) -> ast.LearnerItem:
        return ast.LearnerItem(self.node(call), _span(t))

    def _steps_item(self, t: Any, count: lark.Token) -> ast.StepsItem:
        return ast.StepsItem(_int(count), _span(count), _span(t))

    def _tensor_type(self, t: Any, dtype: lark.Token, dims: Any) -> ast.TensorType:
        ds = tuple(self.node(d) for d in dims.children) if dims is not None else ()
        return ast.TensorType(str(dtype), _span(dtype), ds, _span(t))

    def _dim_int(self, t: Any, tok: lark.Token) -> ast.Dim:
        return ast.Dim(_int(tok), _span(tok))

    def _dim_name(self, t: Any, tok: lark.Token) -> ast.Dim:
        return ast.Dim(str(tok), _span(tok))

    # plan items
    def _roles_item(self, t: Any, *decls: Any) -> ast.RolesItem:
        return ast.RolesItem(tuple(self.node(d) for d in decls), _span(t))

    def _role_decl(self, t: Any, name: lark.Token, count: lark.Token | None) -> ast.RoleDecl:
        return ast.RoleDecl(str(name), _span(name), int(count) if count else None, _span(t))

    def _topology_item(self, t: Any, shape: Any) -> ast.TopologyItem:
        return ast.TopologyItem(self.node(shape), _span(t))

    def _round_item(self, t: Any, *stmts: Any) -> ast.RoundItem:
        return ast.RoundItem(tuple(self.node(s) for s in stmts), _span(t))

    def _compute_stmt(self, t: Any, family: lark.Token, what: lark.Token) -> ast.ComputeStmt:
        return ast.ComputeStmt(str(family), _span(family), str(what), _span(what), _span(t))

    def _combine_stmt(self, t: Any, what: lark.Token, *rest: lark.Token) -> ast.CombineStmt:
        *order, deliver = rest
        order_span = Span(_span(order[0]).start, _span(order[-1]).end)
        return ast.CombineStmt(
            str(what),
            _span(what),
            " ".join(str(o) for o in order),
            order_span,
            str(deliver),
            _span(deliver),
            _span(t),
        )

    def _apply_stmt(self, t: Any, family: lark.Token) -> ast.ApplyStmt:
        return ast.ApplyStmt(str(family), _span(family), _span(t))

    def _contract_item(self, t: Any, kind: Any) -> ast.ContractItem:
        return ast.ContractItem(self.node(kind), _span(t))

    def _state_item(self, t: Any, *stmts: Any) -> ast.StateItem:
        return ast.StateItem(tuple(self.node(x) for x in stmts if x is not None), _span(t))

    def _state_stmt(self, t: Any, what: lark.Token, mode: lark.Token, over: Any) -> Any:
        return ast.StateStmt(
            str(what),
            _span(what),
            str(mode),
            _span(mode),
            str(over) if over is not None else None,
            _span(over) if over is not None else None,
            _span(t),
        )

    def _checkpoint_item(self, t: Any, every: lark.Token) -> ast.CheckpointItem:
        return ast.CheckpointItem(int(every), _span(every), _span(t))

    def _leaves_item(self, t: Any, *ranges: Any) -> ast.LeavesItem:
        return ast.LeavesItem(tuple(self.node(r) for r in ranges), _span(t))

    def _leaf_range(self, t: Any, role: Any, lo: lark.Token, hi: lark.Token) -> ast.LeafRange:
        return ast.LeafRange(self.node(role), int(lo), int(hi), _span(t))

    def _role_single(self, t: Any, name: lark.Token) -> ast.RoleRef:
        return ast.RoleRef(str(name), _span(name), None, None, None, False, _span(t))

    def _role_index(self, t: Any, name: lark.Token, index: lark.Token) -> ast.RoleRef:
        return ast.RoleRef(str(name), _span(name), int(index), None, None, False, _span(t))

    def _role_range(self, t: Any, name: lark.Token, lo: lark.Token, hi: lark.Token) -> Any:
        return ast.RoleRef(str(name), _span(name), None, int(lo), int(hi), False, _span(t))

    def _role_all(self, t: Any, name: lark.Token) -> ast.RoleRef:
        return ast.RoleRef(str(name), _span(name), None, None, None, True, _span(t))

    # pairing items
    def _pairing_item(self, t: Any, role: Any, *props: Any) -> ast.PairingItem:
        out = []
        for p in props:
            if p.data == "pairing_amount":
                key, amount, unit = p.children
                out.append(
                    ast.PairingProp(
                        str(key),
                        _span(key),
                        str(unit),
                        Span(_span(amount).start, _span(unit).end),
                        int(amount),
                    )
                )
            else:
                key, value = p.children
                out.append(ast.PairingProp(str(key), _span(key), str(value), _span(value)))
        return ast.PairingItem(self.node(role), tuple(out), _span(t))

    # expressions
    def _args(self, args: Any) -> tuple[tuple[ast.Expr, ...], tuple[ast.Kwarg, ...]]:
        pos: list[ast.Expr] = []
        kws: list[ast.Kwarg] = []
        if args is None:
            return (), ()
        for a in args.children:
            if isinstance(a, lark.Tree) and a.data == "kwarg":
                name, value = a.children
                kws.append(ast.Kwarg(str(name), _span(name), self.node(value), _span(a)))
            else:
                if kws:
                    raise _SyntaxFailure(
                        Diagnostic(
                            "syntax-error", "positional argument after a keyword argument", _span(a)
                        )
                    )
                pos.append(self.node(a))
        return tuple(pos), tuple(kws)

    def _call(self, t: Any, func: lark.Token, args: Any) -> ast.Call:
        pos, kws = self._args(args)
        return ast.Call(str(func), _span(func), pos, kws, _span(t))

    def _name(self, t: Any, tok: lark.Token) -> ast.Name:
        return ast.Name(str(tok), _span(tok))

    def _number(self, t: Any, tok: lark.Token) -> ast.Number:
        text = str(tok)
        if tok.type == "INT":
            _int(tok)  # arguments read an integer's value exactly, from its text
        return ast.Number(float(text), text, tok.type == "INT", _span(tok))

    def _string(self, t: Any, tok: lark.Token) -> ast.String:
        return ast.String(str(tok)[1:-1], _span(tok))

    def _neg(self, t: Any, operand: Any) -> ast.Neg:
        return ast.Neg(self.node(operand), _span(t))

    def _binop(self, t: Any, op: str, left: Any, right: Any) -> ast.BinOp:
        lnode, rnode = self.node(left), self.node(right)
        between = self.text[lnode.span.end : rnode.span.start]
        at = lnode.span.end + max(0, between.find(op))
        return ast.BinOp(op, lnode, rnode, _span(t), Span(at, at + 1))

    def _add(self, t: Any, a: Any, b: Any) -> ast.BinOp:
        return self._binop(t, "+", a, b)

    def _sub(self, t: Any, a: Any, b: Any) -> ast.BinOp:
        return self._binop(t, "-", a, b)

    def _mul(self, t: Any, a: Any, b: Any) -> ast.BinOp:
        return self._binop(t, "*", a, b)

    def _div(self, t: Any, a: Any, b: Any) -> ast.BinOp:
        return self._binop(t, "/", a, b)

    def _matmul(self, t: Any, a: Any, b: Any) -> ast.BinOp:
        return self._binop(t, "@", a, b)
