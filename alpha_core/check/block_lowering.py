"""Blocks in a model: `blocks[i].m` and `p.m` resolved to their parameter's graph node, block
arguments (`p: blocks`), `for` loops unrolled and `h = expr` (docs/language.md "Block arrays").

A `for` loop is repeated when the model is built, each pass with its index bound to an integer,
so the graph holds the body's operations once per pass, in order: the same graph as the passes
written out one after another. An index of a block array must be known then: an integer, a
loop's index, or `+ - *` of them.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Iterator, MutableMapping
from typing import TYPE_CHECKING

from alpha_core.check.block_values import Binding, BlockArray, BlockRef, LoopIndex
from alpha_core.check.builtins import Env
from alpha_core.check.context import show_shape, suggest
from alpha_core.diagnostics import Related
from alpha_core.syntax import ast

if TYPE_CHECKING:
    from alpha_core.check.expressions import ExprLowering

MAX_LOOP_PASSES = 100_000  # passes of every loop body of one system together


def expr(lw: ExprLowering, e: ast.Index | ast.Member, env: Env) -> int | None:
    """The tensor `blocks[i].m` or `p.m` stands for; a block alone is no tensor."""
    if isinstance(e, ast.Index):
        ref = block_of(lw, e, env)
        if ref is not None:
            lw.ctx.refuse(
                "type-mismatch",
                f"`{ref.array.name}[{ref.index}]` is a block of `{ref.array.name}`, not a tensor",
                e.span,
                help=f"read one of its members (`.{next(iter(ref.array.members), 'm')}`), or "
                f"pass it to an argument declared `p: {ref.array.name}`",
            )
        return None
    if not _names_block(e.value, env):
        lw.ctx.refuse(
            "type-mismatch",
            f"a tensor has no member `.{e.name}`; the only attribute of a tensor is `.T`, the "
            "transpose",
            e.name_span,
            help="members are read from a block: `blocks[i].wq`, or `p.wq` for an argument "
            "declared `p: blocks`",
        )
        return None
    ref = block_of(lw, e.value, env)
    if ref is None:
        return None
    member = ref.array.members.get(e.name)
    if member is None:
        near = suggest(e.name, ref.array.members)
        lw.ctx.refuse(
            "unknown-name",
            f"block array `{ref.array.name}` has no member `{e.name}`",
            e.name_span,
            help="did you mean " + " or ".join(f"`{n}`" for n in near) + "?" if near else None,
        )
        return None
    lw.ctx.definitions[e.name_span] = member.span
    return ref.array.nodes[ref.index].get(e.name)  # absent: refused where declared


def _names_block(e: ast.Expr, env: Env) -> bool:
    """Whether `e` is written as a block: `blocks[...]`, or a name bound to a block or array."""
    if isinstance(e, ast.Index):
        return True
    if isinstance(e, ast.Name):
        bound = env.get(e.id)
        return bound is None or isinstance(bound.other, BlockRef | BlockArray)
    return False


def block_of(lw: ExprLowering, e: ast.Expr, env: Env) -> BlockRef | None:
    """The block `e` names: `blocks[i]`, or an argument declared `p: blocks`."""
    ctx = lw.ctx
    if isinstance(e, ast.Name):
        bound = env.get(e.id)
        if bound is None:
            ctx.unknown("name", e.id, e.span, list(env))
            return None
        ctx.definitions[e.span] = bound.span
        if isinstance(bound.other, BlockRef):
            return bound.other
        if isinstance(bound.other, BlockArray):
            ctx.refuse(
                "type-mismatch",
                f"`{e.id}` is an array of {bound.other.count} blocks; name one: `{e.id}[i]`",
                e.span,
            )
            return None
        ctx.refuse("type-mismatch", f"`{e.id}` is not a block", e.span)
        return None
    if not isinstance(e, ast.Index):
        ctx.refuse("type-mismatch", "this is not a block", e.span)
        return None
    if not isinstance(e.value, ast.Name):
        ctx.refuse(
            "type-mismatch",
            "only a block array is indexed: `blocks[i]`",
            e.value.span,
        )
        return None
    bound = env.get(e.value.id)
    if bound is None:
        ctx.unknown("name", e.value.id, e.value.span, list(env))
        return None
    ctx.definitions[e.value.span] = bound.span
    array = bound.other
    if not isinstance(array, BlockArray):
        ctx.refuse(
            "type-mismatch",
            f"`{e.value.id}` is not a block array: only a block array is indexed",
            e.span,
            help="a tensor's elements are read with `slice`, `reshape` or `embed`",
        )
        return None
    index = const_index(lw, e.index, env, array.name)
    if index is None:
        return None
    if not 0 <= index < array.count:
        passes = _loop_values(e.index, env)
        ctx.refuse(
            "block-index-out-of-range",
            f"block {index} of `{array.name}`, which holds blocks 0 to {array.count - 1}"
            + (f" (in the pass where {passes})" if passes else ""),
            e.index.span,
            related=(Related(array.span, f"`{array.name}` is declared here"),),
        )
        return None
    return BlockRef(array, index)


def _loop_values(e: ast.Expr, env: Env) -> str:
    """`i = 12`: the values of the loop indices an index expression reads."""
    found = []
    for node in _names(e):
        bound = env.get(node.id)
        if bound is not None and isinstance(bound.other, LoopIndex):
            found.append(f"{node.id} = {bound.other.value}")
    return ", ".join(dict.fromkeys(found))


def _names(e: ast.Expr) -> Iterator[ast.Name]:
    if isinstance(e, ast.Name):
        yield e
    elif isinstance(e, ast.BinOp):
        yield from _names(e.left)
        yield from _names(e.right)
    elif isinstance(e, ast.Neg):
        yield from _names(e.operand)


def const_index(lw: ExprLowering, e: ast.Expr, env: Env, array: str) -> int | None:
    """The integer an index expression has when the model is built, or None (refused)."""
    if isinstance(e, ast.Number) and e.is_int:
        return int(e.text)
    if isinstance(e, ast.Name):
        bound = env.get(e.id)
        if bound is not None and isinstance(bound.other, LoopIndex):
            lw.ctx.definitions[e.span] = bound.span
            return bound.other.value
    if isinstance(e, ast.Neg):
        inner = const_index(lw, e.operand, env, array)
        return None if inner is None else -inner
    if isinstance(e, ast.BinOp) and e.op in "+-*":
        a = const_index(lw, e.left, env, array)
        b = const_index(lw, e.right, env, array) if a is not None else None
        if a is None or b is None:
            return None
        return a + b if e.op == "+" else a - b if e.op == "-" else a * b
    what = "a tensor, known only when the model runs" if isinstance(e, ast.Name) else None
    lw.ctx.refuse(
        "block-index-not-constant",
        f"the index of `{array}[…]` must be known when the model is built"
        + (f": `{e.id}` is {what}" if isinstance(e, ast.Name) and what else ""),
        e.span,
        help="write an integer, a `for` loop's index, or `+ - *` of them: "
        f"`{array}[i]`, `{array}[i + 1]`, `{array}[0]`",
    )
    return None


def not_a_tensor(lw: ExprLowering, e: ast.Name, bound: Binding) -> None:
    """A name that stands for a block array, a block or a loop index, used as a tensor."""
    other = bound.other
    lw.ctx.definitions[e.span] = bound.span
    if isinstance(other, LoopIndex):
        message = f"`{e.id}` is a `for` loop's index, an integer known when the model is built"
        help = f"it indexes block arrays: `blocks[{e.id}]`"
    elif isinstance(other, BlockArray):
        message = f"`{e.id}` is an array of {other.count} blocks, not a tensor"
        help = f"name one block's member: `{e.id}[0].{next(iter(other.members), 'm')}`"
    else:
        assert isinstance(other, BlockRef)
        message = f"`{e.id}` is a block of `{other.array.name}`, not a tensor"
        help = f"read one of its members: `{e.id}.{next(iter(other.array.members), 'm')}`"
    lw.ctx.refuse("type-mismatch", message, e.span, help=help)


def block_argument(lw: ExprLowering, arg: ast.Expr, param: ast.FnParam, env: Env) -> Binding | None:
    """The binding of an argument declared `p: blocks`: the block `arg` names."""
    assert isinstance(param.type, ast.BlockType)
    ctx = lw.ctx
    declared = env.get(param.type.array)
    if declared is None or not isinstance(declared.other, BlockArray):
        arrays = [n for n, b in env.items() if isinstance(b.other, BlockArray)]
        ctx.unknown("block array", param.type.array, param.type.span, arrays)
        return None
    want = declared.other
    ctx.definitions[param.type.span] = want.span
    if not _names_block(arg, env):
        ctx.refuse(
            "type-mismatch",
            f"`{param.name}` is a block of `{want.name}`; this is a tensor",
            arg.span,
            related=(Related(param.type.span, "declared here"),),
            help=f"pass one block: `{want.name}[i]`",
        )
        return None
    ref = block_of(lw, arg, env)
    if ref is None:
        return None
    if ref.array is not want and ref.array.layout() != want.layout():
        ctx.refuse(
            "block-shape-mismatch",
            f"`{param.name}` is a block of `{want.name}` but is given a block of "
            f"`{ref.array.name}`: {_difference(want, ref.array)}",
            arg.span,
            related=(Related(param.type.span, "declared here"),),
        )
        return None
    return Binding(-1, param.name_span, ref)


def _difference(want: BlockArray, got: BlockArray) -> str:
    """The first member in which two arrays' blocks differ."""
    for (a, sa), (b, sb) in zip(want.layout(), got.layout(), strict=False):
        if a != b:
            return f"its member `{b}` stands where `{want.name}` has `{a}`"
        if sa != sb:
            shown = [show_shape(s) if s is not None else "refused" for s in (sa, sb)]
            return f"member `{a}` is {shown[0]} in `{want.name}` and {shown[1]} in `{got.name}`"
    w, g = len(want.members), len(got.members)
    return f"`{want.name}` has {w} members and `{got.name}` {g}"


# ---- statements ----------------------------------------------------------------------------


def statement(lw: ExprLowering, stmt: ast.Assign | ast.ForLoop, env: Env) -> bool:
    """Lowers an assignment or a loop of a function's body; False once refused."""
    if isinstance(stmt, ast.Assign):
        return _assign(lw, stmt, env)
    return _loop(lw, stmt, env)


def _maps(env: Env) -> Iterator[MutableMapping[str, Binding]]:
    if isinstance(env, ChainMap):
        for m in env.maps:
            yield from _maps(m)
    else:
        yield env


def _assign(lw: ExprLowering, stmt: ast.Assign, env: Env) -> bool:
    ctx = lw.ctx
    owner = next((m for m in _maps(env) if stmt.name in m), None)
    if owner is None:
        ctx.unknown("name", stmt.name, stmt.name_span, list(env))
        return False
    old = owner[stmt.name]
    ctx.definitions[stmt.name_span] = old.span
    if owner is lw.system_names or old.other is not None:
        what = (
            "a loop's index"
            if isinstance(old.other, LoopIndex)
            else "a block"
            if old.other is not None
            else "a parameter: the learner changes it, the model only reads it"
        )
        ctx.refuse(
            "duplicate-name",
            f"`{stmt.name}` is {what}; only a `let` or an argument takes a new value",
            stmt.name_span,
            related=(Related(old.span, "declared here"),),
        )
        return False
    node = lw.expr(stmt.value, env)
    if node is None:
        return False
    shape = lw.b.shape(node)
    if old.node >= 0 and lw.b.shape(old.node) != shape:
        ctx.refuse(
            "shape-mismatch",
            f"`{stmt.name}` is {show_shape(lw.b.shape(old.node))}; the new value is "
            f"{show_shape(shape)}",
            stmt.value.span,
            related=(Related(old.span, "first defined here"),),
            help="a new value keeps the shape; give another shape a new name with `let`",
        )
        return False
    ctx.types[stmt.name_span] = shape
    owner[stmt.name] = Binding(node, old.span)
    return True


def _loop(lw: ExprLowering, loop: ast.ForLoop, env: Env) -> bool:
    ctx = lw.ctx
    if loop.stop <= loop.start:
        ctx.refuse(
            "bad-argument",
            f"the range {loop.start}..{loop.stop} is empty: `a..b` counts from a up to b - 1",
            loop.range_span,
        )
        return False
    if loop.name in env:
        ctx.refuse(
            "duplicate-name",
            f"`{loop.name}` is already defined",
            loop.name_span,
            related=(Related(env[loop.name].span, "first defined here"),),
        )
        return False
    passes = loop.stop - loop.start
    if lw.loop_passes + passes > MAX_LOOP_PASSES:
        ctx.refuse(
            "system-too-large",
            f"the loops of this model would run their bodies more than {MAX_LOOP_PASSES:,} "
            "times when it is built",
            loop.range_span,
        )
        return False
    lw.loop_passes += passes
    for value in range(loop.start, loop.stop):
        scope: Env = ChainMap({loop.name: Binding(-1, loop.name_span, LoopIndex(value))}, env)
        if not _loop_body(lw, loop.body, scope):
            return False
    return True


def _loop_body(lw: ExprLowering, body: tuple[ast.Stmt, ...], scope: Env) -> bool:
    """One pass: its `let`s are its own (the next pass and the code after the loop do not see
    them); an assignment changes the name where it is defined."""
    ctx = lw.ctx
    for stmt in body:
        if isinstance(stmt, ast.Return):
            ctx.refuse(
                "syntax-error",
                "`return` inside a `for` loop",
                stmt.span,
                help="give the loop's result to a name defined before it (`h = ...`), and "
                "return after the loop",
            )
            return False
        if isinstance(stmt, ast.Let):
            if stmt.name in scope:
                ctx.refuse(
                    "duplicate-name",
                    f"`{stmt.name}` is already defined",
                    stmt.name_span,
                    related=(Related(scope[stmt.name].span, "first defined here"),),
                    help=f"give it a new value with `{stmt.name} = ...`",
                )
                return False
            node = lw.expr(stmt.value, scope)
            if node is None:
                return False
            ctx.types[stmt.name_span] = lw.b.shape(node)
            next(_maps(scope))[stmt.name] = Binding(node, stmt.name_span)
        elif not statement(lw, stmt, scope):
            return False
    return True
