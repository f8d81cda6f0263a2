"""Large nodes run as tasks over blocks of their first axis (the pool's threads, pool.h).

A node splits when the outputs in a block of its first axis are computed from the same block
of each input (or from all of an input that is broadcast along that axis) and nothing else:
element-wise work, and work along other axes (softmax along the last, the matrices of a
batched product, a mean over the last axis). Each block is then that node with a shorter first
axis, computed by the same emitter at offset pointers; every output is computed by the same
operations in the same order as unsplit (no sum crosses a block: a sum along the first axis
never splits), so the bits do not depend on the blocks nor on which thread computes them.

The op table (alpha_core/ops) names each op's rule (`Op.outer`); element-wise ops follow
"elementwise". This module says, for one node with concrete shapes, which inputs are cut with
the output, and how many rows of the first axis a task takes.
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from alpha_core.codegen.loops import I32, I64, PTR, gep, i64
from alpha_core.ir.graph import Node, size
from alpha_core.ops import OPS

# A node splits from this much work (floats written or read); smaller ones are not worth a
# task's overhead and stay one call, so small programs (the examples) start no threads for them.
SPLIT_FROM = 32768
# The least work (floats) of one task, and the most tasks of one node.
TASK_FLOATS = 16384
MAX_TASKS = 64
# the rules an op may name in the table (Op.outer); "" never splits
RULES = ("", "axis", "matrices", "swap", "kept")


def _same_first(out: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """An input indexed along the output's first axis: same rank, same first extent."""
    return len(shape) == len(out) and shape[0] == out[0]


def cut_inputs(
    node: Node, out: tuple[int, ...], inputs: Sequence[tuple[int, ...]]
) -> tuple[bool, ...] | None:
    """For each input, whether its first axis is cut with the output's (False: read whole,
    broadcast along it); None where the node does not split along its first axis."""
    entry = OPS.get(node.op)
    if entry is None or len(out) < 2 or out[0] < 2:
        return None
    rule = "elementwise" if entry.elementwise else entry.outer
    if rule == "elementwise":
        cut = tuple(_same_first(out, s) for s in inputs)
        # any other input must be broadcast along the first axis (a lower rank or extent 1)
        if all(c or len(s) < len(out) or s[0] == 1 for c, s in zip(cut, inputs, strict=True)):
            return cut
        return None
    if not all(len(s) >= 1 and s[0] == out[0] for s in inputs):
        return None  # (a batched product broadcast along its batch, a sum over the first axis)
    every = tuple(True for _ in inputs)
    if rule == "axis":  # along one attribute axis, never the first (a mean's input has one more)
        axis = node.axis()
        return every if axis is not None and axis > 0 else None
    if not all(len(s) == len(out) for s in inputs):
        return None
    if rule == "matrices":  # the last two axes move or are read; the others index matrices
        return every if len(out) >= 3 else None
    if rule == "swap":
        return every if node.attr("a") != 0 and node.attr("b") != 0 else None
    if rule == "kept":  # a sum to a shape that keeps the first axis (reduce_to [B, T, 1])
        return every
    return None


def task_rows(out: tuple[int, ...], inputs: Sequence[tuple[int, ...]] = ()) -> int:
    """Rows of the first axis one task computes: a divisor of it, so that every task is the
    same function; the whole axis (one call, no tasks) for a node whose work, the floats of
    its output or of its largest input (a mean reads more than it writes), is below
    SPLIT_FROM."""
    first = out[0]
    work = max([size(out), *(size(s) for s in inputs)])
    if work < SPLIT_FROM:
        return first
    per_row = max(1, work // first)
    least = max(-(-TASK_FLOATS // per_row), -(-first // MAX_TASKS))
    for rows in range(least, first + 1):
        if first % rows == 0:
            return rows
    return first


def emit_tasks(
    module: ir.Module,
    parallel: ir.Function,
    name: str,
    block: ir.Function,
    strides: Sequence[int],
    count: int,
) -> ir.Function:
    """f(out, source...) that runs `block(out, source...)` as `count` tasks of `parallel`
    (alpha_parallel, pool.h): task t with each pointer moved t * its stride floats (0: an
    input read whole)."""
    return emit_task_calls(module, parallel, name, [(block, range(len(strides)))], strides, count)


def emit_task_calls(
    module: ir.Module,
    parallel: ir.Function,
    name: str,
    calls: Sequence[tuple[ir.Function, Sequence[int]]],
    strides: Sequence[int],
    count: int,
) -> ir.Function:
    """f(pointer...) that runs `count` tasks of `parallel`: task t moves each pointer t times
    its stride (0: read whole) and calls each block in turn with the pointers at its positions
    (row_groups.py: the nodes of a group, each on the same block of rows)."""
    task = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, I32, PTR]), f"{name}.task")
    task.linkage = "internal"
    task.attributes.add("nounwind")
    ctx, index, _ = task.args
    tb = ir.IRBuilder(task.append_basic_block("entry"))
    t = tb.zext(index, I64)
    here = []
    for k, stride in enumerate(strides):
        p = tb.load(gep(tb, ctx, i64(k), PTR), typ=PTR)
        here.append(gep(tb, p, tb.mul(t, i64(stride))) if stride else p)
    for block, positions in calls:
        tb.call(block, [here[k] for k in positions])
    tb.ret_void()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR] * len(strides)), name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    fn.attributes.add("noinline")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    frame = b.alloca(ir.ArrayType(PTR, len(strides)))
    frame.type = PTR  # the task's context: the pointers, read back by each task
    for k, arg in enumerate(fn.args):
        b.store(arg, gep(b, frame, i64(k), PTR))
    b.call(parallel, [task, frame, ir.Constant(I32, count)])
    b.ret_void()
    return fn
