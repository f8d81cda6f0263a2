"""lark parse trees to ast nodes: one method per grammar rule, spans relative to the piece.

A construct the grammar accepts but the language does not (a positional argument after a
keyword one, an integer too long to read) is raised as SyntaxFailure and becomes a diagnostic.
"""

from __future__ import annotations

from typing import Any

import lark

from alpha_core.diagnostics import Diagnostic
from alpha_core.support.span import Span
from alpha_core.syntax import ast


class SyntaxFailure(Exception):
    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def _span(meta_or_tok: Any) -> Span:
    if isinstance(meta_or_tok, lark.Token):
        return Span(meta_or_tok.start_pos or 0, meta_or_tok.end_pos or 0)
    meta = meta_or_tok.meta
    if getattr(meta, "empty", True):
        return Span(0, 0)
    return Span(meta.start_pos, meta.end_pos)


class Build:
    """lark tree → ast nodes, spans relative to the piece plus `base`: a piece is built where it
    stands in its declaration, so that the tree the declaration holds is the one memoized."""

    def __init__(self, text: str, base: int = 0) -> None:
        self.text = text
        self.base = base

    def _span(self, meta_or_tok: Any) -> Span:
        s = _span(meta_or_tok)
        return Span(s.start + self.base, s.end + self.base) if self.base else s

    def _int(self, tok: lark.Token) -> int:
        """An integer literal's value; one beyond Python's digit limit for int() is refused."""
        try:
            return int(tok)
        except ValueError:
            raise SyntaxFailure(
                Diagnostic(
                    "syntax-error", f"an integer of {len(tok)} digits is too long", self._span(tok)
                )
            ) from None

    def node(self, t: Any) -> Any:
        if isinstance(t, lark.Token):
            raise SyntaxFailure(Diagnostic("syntax-error", f"unexpected `{t}`", self._span(t)))
        method = getattr(self, "_" + t.data, None)
        if method is None:
            raise SyntaxFailure(Diagnostic("syntax-error", "this does not parse", self._span(t)))
        return method(t, *t.children)

    # headers: (kind, name, name_span, target, target_span)
    def _system_header(self, t: Any, name: lark.Token) -> tuple[Any, ...]:
        return ("system", str(name), self._span(name), None, None)

    def _plan_header(self, t: Any, name: lark.Token, target: lark.Token) -> tuple[Any, ...]:
        return ("plan", str(name), self._span(name), str(target), self._span(target))

    def _pairing_header(self, t: Any, name: lark.Token, target: lark.Token) -> tuple[Any, ...]:
        return ("pairing", str(name), self._span(name), str(target), self._span(target))

    # system items
    def _data_item(self, t: Any, name: lark.Token, source: Any) -> ast.DataItem:
        return ast.DataItem(str(name), self._span(name), self.node(source), self._span(t))

    def _batch_item(self, t: Any, size: lark.Token, leaves: lark.Token, shuffle: Any) -> Any:
        sh = None
        if shuffle is not None:
            args, kwargs = self._args(shuffle.children[0])
            at = self._span(shuffle).start  # the keyword starts the clause
            sh = ast.Call(
                "shuffle", Span(at, at + len("shuffle")), args, kwargs, self._span(shuffle)
            )
        return ast.BatchItem(
            self._int(size),
            self._span(size),
            self._int(leaves),
            self._span(leaves),
            sh,
            self._span(t),
        )

    def _param_item(self, t: Any, name: lark.Token, ty: Any, init: Any) -> ast.ParamItem:
        return ast.ParamItem(
            str(name), self._span(name), self.node(ty), self.node(init), self._span(t)
        )

    def _fn_item(self, t: Any, name: lark.Token, params: Any, result: Any, *body: Any) -> Any:
        ps = tuple(self._fn_param(p) for p in params.children) if params is not None else ()
        return ast.FnItem(
            str(name),
            self._span(name),
            ps,
            self.node(result),
            tuple(self.node(s) for s in body),
            self._span(t),
        )

    def _fn_param(self, p: Any) -> ast.FnParam:
        name, ty = p.children
        if p.data == "block_param":  # `p: blocks`, one block of the array `blocks`
            return ast.FnParam(
                str(name), self._span(name), ast.BlockType(str(ty), self._span(ty)), self._span(p)
            )
        return ast.FnParam(str(name), self._span(name), self.node(ty), self._span(p))

    def _let_stmt(self, t: Any, name: lark.Token, value: Any) -> ast.Let:
        return ast.Let(str(name), self._span(name), self.node(value), self._span(t))

    def _return_stmt(self, t: Any, value: Any) -> ast.Return:
        return ast.Return(self.node(value), self._span(t))

    def _assign_stmt(self, t: Any, name: lark.Token, value: Any) -> ast.Assign:
        return ast.Assign(str(name), self._span(name), self.node(value), self._span(t))

    def _for_stmt(
        self, t: Any, name: lark.Token, start: lark.Token, stop: lark.Token, *body: Any
    ) -> ast.ForLoop:
        return ast.ForLoop(
            str(name),
            self._span(name),
            self._int(start),
            self._int(stop),
            Span(self._span(start).start, self._span(stop).end),
            tuple(self.node(s) for s in body),
            self._span(t),
        )

    def _param_array_item(
        self, t: Any, name: lark.Token, count: lark.Token, *members: Any
    ) -> ast.ParamArrayItem:
        built = tuple(self.node(m) for m in members)
        for before, after in zip(built, built[1:], strict=False):
            between = self.text[before.span.end - self.base : after.span.start - self.base]
            if "\n" not in between:  # as items of a system: one member declaration a line
                raise SyntaxFailure(
                    Diagnostic(
                        "syntax-error",
                        "two member declarations on one line",
                        after.span,
                        help="start each member declaration on a line of its own",
                    )
                )
        return ast.ParamArrayItem(
            str(name), self._span(name), self._int(count), self._span(count), built, self._span(t)
        )

    def _member_decl(self, t: Any, *parts: Any) -> ast.MemberDecl:
        *names, ty, init = parts
        return ast.MemberDecl(
            tuple(ast.MemberName(str(n), self._span(n), self._span(n)) for n in names),
            self.node(ty),
            self.node(init),
            self._span(t),
        )

    def _loss_item(self, t: Any, call: Any) -> ast.LossItem:
        return ast.LossItem(self.node(call), self._span(t))

    def _learner_item(self, t: Any, call: Any) -> ast.LearnerItem:
        return ast.LearnerItem(self.node(call), self._span(t))

    def _steps_item(self, t: Any, count: lark.Token) -> ast.StepsItem:
        return ast.StepsItem(self._int(count), self._span(count), self._span(t))

    def _arithmetic_item(self, t: Any, word: lark.Token) -> ast.ArithmeticItem:
        return ast.ArithmeticItem(str(word), self._span(word), self._span(t))

    def _tensor_type(self, t: Any, dtype: lark.Token, dims: Any) -> ast.TensorType:
        ds = tuple(self.node(d) for d in dims.children) if dims is not None else ()
        return ast.TensorType(str(dtype), self._span(dtype), ds, self._span(t))

    def _dim_int(self, t: Any, tok: lark.Token) -> ast.Dim:
        return ast.Dim(self._int(tok), self._span(tok))

    def _dim_name(self, t: Any, tok: lark.Token) -> ast.Dim:
        return ast.Dim(str(tok), self._span(tok))

    # plan items
    def _roles_item(self, t: Any, *decls: Any) -> ast.RolesItem:
        return ast.RolesItem(tuple(self.node(d) for d in decls), self._span(t))

    def _role_decl(self, t: Any, name: lark.Token, count: lark.Token | None) -> ast.RoleDecl:
        return ast.RoleDecl(
            str(name), self._span(name), int(count) if count else None, self._span(t)
        )

    def _topology_item(self, t: Any, shape: Any) -> ast.TopologyItem:
        return ast.TopologyItem(self.node(shape), self._span(t))

    def _round_item(self, t: Any, *stmts: Any) -> ast.RoundItem:
        return ast.RoundItem(tuple(self.node(s) for s in stmts), self._span(t))

    def _compute_stmt(self, t: Any, family: lark.Token, what: lark.Token) -> ast.ComputeStmt:
        return ast.ComputeStmt(
            str(family), self._span(family), str(what), self._span(what), self._span(t)
        )

    def _combine_stmt(self, t: Any, what: lark.Token, *rest: lark.Token) -> ast.CombineStmt:
        *order, deliver = rest
        order_span = Span(self._span(order[0]).start, self._span(order[-1]).end)
        return ast.CombineStmt(
            str(what),
            self._span(what),
            " ".join(str(o) for o in order),
            order_span,
            str(deliver),
            self._span(deliver),
            self._span(t),
        )

    def _apply_stmt(self, t: Any, family: lark.Token) -> ast.ApplyStmt:
        return ast.ApplyStmt(str(family), self._span(family), self._span(t))

    def _contract_item(self, t: Any, kind: Any) -> ast.ContractItem:
        return ast.ContractItem(self.node(kind), self._span(t))

    def _state_item(self, t: Any, *stmts: Any) -> ast.StateItem:
        return ast.StateItem(tuple(self.node(x) for x in stmts if x is not None), self._span(t))

    def _state_stmt(self, t: Any, what: lark.Token, mode: lark.Token, over: Any) -> Any:
        return ast.StateStmt(
            str(what),
            self._span(what),
            str(mode),
            self._span(mode),
            str(over) if over is not None else None,
            self._span(over) if over is not None else None,
            self._span(t),
        )

    def _checkpoint_item(self, t: Any, every: lark.Token) -> ast.CheckpointItem:
        return ast.CheckpointItem(int(every), self._span(every), self._span(t))

    def _leaves_item(self, t: Any, *ranges: Any) -> ast.LeavesItem:
        return ast.LeavesItem(tuple(self.node(r) for r in ranges), self._span(t))

    def _leaf_range(self, t: Any, role: Any, lo: lark.Token, hi: lark.Token) -> ast.LeafRange:
        return ast.LeafRange(self.node(role), int(lo), int(hi), self._span(t))

    def _role_single(self, t: Any, name: lark.Token) -> ast.RoleRef:
        return ast.RoleRef(str(name), self._span(name), None, None, None, False, self._span(t))

    def _role_index(self, t: Any, name: lark.Token, index: lark.Token) -> ast.RoleRef:
        return ast.RoleRef(
            str(name), self._span(name), int(index), None, None, False, self._span(t)
        )

    def _role_range(self, t: Any, name: lark.Token, lo: lark.Token, hi: lark.Token) -> Any:
        return ast.RoleRef(
            str(name), self._span(name), None, int(lo), int(hi), False, self._span(t)
        )

    def _role_all(self, t: Any, name: lark.Token) -> ast.RoleRef:
        return ast.RoleRef(str(name), self._span(name), None, None, None, True, self._span(t))

    # pairing items
    def _pairing_item(self, t: Any, role: Any, *props: Any) -> ast.PairingItem:
        out = []
        for p in props:
            if p.data == "pairing_count":  # `cores 8`: an amount without a unit
                key, amount = p.children
                out.append(
                    ast.PairingProp(str(key), self._span(key), "", self._span(amount), int(amount))
                )
            elif p.data == "pairing_amount":
                key, amount, unit = p.children
                out.append(
                    ast.PairingProp(
                        str(key),
                        self._span(key),
                        str(unit),
                        Span(self._span(amount).start, self._span(unit).end),
                        int(amount),
                    )
                )
            else:
                key, value = p.children
                out.append(
                    ast.PairingProp(str(key), self._span(key), str(value), self._span(value))
                )
        return ast.PairingItem(self.node(role), tuple(out), self._span(t))

    # expressions
    def _args(self, args: Any) -> tuple[tuple[ast.Expr, ...], tuple[ast.Kwarg, ...]]:
        pos: list[ast.Expr] = []
        kws: list[ast.Kwarg] = []
        if args is None:
            return (), ()
        for a in args.children:
            if isinstance(a, lark.Tree) and a.data == "kwarg":
                name, value = a.children
                kws.append(ast.Kwarg(str(name), self._span(name), self.node(value), self._span(a)))
            else:
                if kws:
                    raise SyntaxFailure(
                        Diagnostic(
                            "syntax-error",
                            "positional argument after a keyword argument",
                            self._span(a),
                        )
                    )
                pos.append(self.node(a))
        return tuple(pos), tuple(kws)

    def _call(self, t: Any, func: lark.Token, args: Any) -> ast.Call:
        pos, kws = self._args(args)
        return ast.Call(str(func), self._span(func), pos, kws, self._span(t))

    def _name(self, t: Any, tok: lark.Token) -> ast.Name:
        return ast.Name(str(tok), self._span(tok))

    def _number(self, t: Any, tok: lark.Token) -> ast.Number:
        text = str(tok)
        if tok.type == "INT":
            self._int(tok)  # arguments read an integer's value exactly, from its text
        return ast.Number(float(text), text, tok.type == "INT", self._span(tok))

    def _string(self, t: Any, tok: lark.Token) -> ast.String:
        return ast.String(str(tok)[1:-1], self._span(tok))

    def _attribute(self, t: Any, obj: Any, name: lark.Token) -> ast.Call | ast.Member:
        """`w.T` is `transpose(w)`, the call spelled at the `T`; any other name reads a member of
        a block (`blocks[i].wq`, `p.wq`), which the checker resolves."""
        if str(name) != "T":
            return ast.Member(self.node(obj), str(name), self._span(name), self._span(t))
        return ast.Call("transpose", self._span(name), (self.node(obj),), (), self._span(t))

    def _index(self, t: Any, obj: Any, index: Any) -> ast.Index:
        return ast.Index(self.node(obj), self.node(index), self._span(t))

    def _neg(self, t: Any, operand: Any) -> ast.Neg:
        return ast.Neg(self.node(operand), self._span(t))

    def _binop(self, t: Any, op: str, left: Any, right: Any) -> ast.BinOp:
        lnode, rnode = self.node(left), self.node(right)
        between = self.text[lnode.span.end - self.base : rnode.span.start - self.base]
        at = lnode.span.end + max(0, between.find(op))
        if op in "*/" and isinstance(rnode, ast.BinOp) and rnode.op == "@":
            if "(" not in between[between.find(op) :]:
                # `a * b @ c` is `a * (b @ c)` here but `(a * b) @ c` in NumPy: say which
                raise SyntaxFailure(
                    Diagnostic(
                        "syntax-error",
                        f"`{op}` and `@` mixed without parentheses",
                        Span(at, at + 1),
                        help=f"write `(a {op} b) @ c` or `a {op} (b @ c)`",
                    )
                )
        return ast.BinOp(op, lnode, rnode, self._span(t), Span(at, at + 1))

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
