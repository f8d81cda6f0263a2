"""Emit the tensor graph as loops over static buffers, in the order docs/semantics.md fixes.

Every intermediate tensor is held in an internal global buffer (sizes are static), which
tensors whose lives do not overlap share (buffer_plan.py); within a node LLVM sees that its
output is no input and vectorises the innermost loops, which always run over independent
outputs. Large nodes run as tasks over blocks of their first axis (outer_split.py). Sums are
never reassociated: each accumulates from +0.0 in index order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from llvmlite import ir

from alpha_core.codegen.buffer_plan import plan_buffers
from alpha_core.codegen.column_sums import column_sums
from alpha_core.codegen.conv_ops import emit_conv_op
from alpha_core.codegen.gemm import DIRECT_ROWS, GemmEmitter
from alpha_core.codegen.line_blocks import Block, LineBlocks
from alpha_core.codegen.loops import (
    F32,
    PTR,
    RECIPE_VECTORS,
    broadcast_strides,
    entry_alloca,
    for_range,
    gep,
    i64,
    linear,
    load,
    nest,
    row_major_strides,
    store,
)
from alpha_core.codegen.loss_ops import emit_loss_op, emit_mse, emit_xent
from alpha_core.codegen.outer_split import cut_inputs, emit_task_calls, emit_tasks, task_rows
from alpha_core.codegen.parts import CallRun
from alpha_core.codegen.row_groups import Member, RowGroup, row_groups
from alpha_core.codegen.small_product import emit_small_product
from alpha_core.codegen.sum_folds import SumFold, fold_sums
from alpha_core.codegen.tensor_ops import emit_layer_op
from alpha_core.codegen.transpose import emit_transpose
from alpha_core.ir.graph import Graph, Node, concrete, size
from alpha_core.lower.blocking import packed
from alpha_core.lower.live import live_nodes
from alpha_core.ops import BOUND, OPS
from alpha_core.semantics import learners as recipes
from alpha_core.semantics.llvm_arith import LlvmArith, emit_math_functions

Chain = tuple[ir.Value, ir.Value] | None  # pointers to the arrays added as a product is stored
OUTLINE_FROM = 160  # live nodes from which a kernel calls one function per kind of node
# the emitter of one family of ops: (emitter, builder, arith, node index, node, output buffer)
Family = Callable[["GraphEmitter", ir.IRBuilder, LlvmArith, int, Node, ir.Value], None]


# Sums over an innermost axis computed side by side, this many outputs at a time.
REDUCE_LINES = 32


@dataclass(frozen=True)
class Lines:
    """A reduction seen as lines: for each index of the `outer` axes (their output strides),
    `rows` lines of `k` trailing elements each; line r of an outer index adds into output
    base + r * step, and no two lines of one outer index share an output."""

    outer: tuple[int, ...]
    outer_strides: tuple[int, ...]
    rows: int
    step: int
    k: int


def _reduced_suffix(shape: tuple[int, ...], strides: list[int]) -> Lines | None:
    """The reduction as Lines when its trailing axes are reduced (stride 0) and the axes just
    before them map to outputs as one row-major block (a layer norm's mean over the last axis;
    a convolution's bias gradient, B and H, W reduced around C). None otherwise: those keep
    the plain loops (whose inner loop already runs over independent outputs, or is too short)."""
    cut = len(shape)
    while cut > 0 and strides[cut - 1] == 0:
        cut -= 1
    if cut == len(shape) or cut == 0:
        return None
    first = cut
    while first > 0 and strides[first - 1] != 0:
        first -= 1
    step = strides[cut - 1]
    if [s * step for s in row_major_strides(shape[first:cut])] != strides[first:cut]:
        return None
    rows, k = size(shape[first:cut]), size(shape[cut:])
    if rows < 2 or k < 2:
        return None
    return Lines(tuple(shape[:first]), tuple(strides[:first]), rows, step, k)


class GraphEmitter:
    """Emits nodes of one graph into the function under `builder`."""

    def __init__(
        self,
        module: ir.Module,
        graph: Graph,
        batch: int,
        prefix: str,
        gemm: GemmEmitter,
        shared: dict[tuple[object, ...], ir.Function] | None = None,
    ) -> None:
        self.module = module
        self.gemm = gemm
        # one function per distinct node (op, attributes, shapes), shared by the module's
        # kernels: a model's code, and LLVM's time on it, grow with its distinct operations,
        # not with how many times a function of the source calls them
        self.shared = shared if shared is not None else {}
        # transposes read in place by the products that use them: node -> its input
        self.folded: dict[int, int] = {}
        self.graph = graph
        self.batch = batch
        self.prefix = prefix
        # the leaf kernel trains; the forward kernel ("fwd") evaluates: dropout is the identity
        self.training = prefix != "fwd"
        self.math = emit_math_functions(module)
        self.ptrs: dict[int, ir.Value] = {}
        self.param_offsets: dict[int, int] = {}
        # placed nodes whose stored values also get a chain added (GemmEmitter.call), when a
        # large product computes them; `chained` says which did
        self.chains: dict[int, Chain] = {}
        self.chained: set[int] = set()
        # adds computed as a large product's sums are stored (sum_folds.py): end add -> fold
        self.sums: dict[int, SumFold] = {}
        self._skipped: set[int] = set()
        # bias gradients added up as a product packs their input (column_sums.py): product ->
        # reduce_to
        self.column_sums: dict[int, int] = {}
        # nodes computed a block of rows at a time together (row_groups.py): member -> group
        self._groups: dict[int, RowGroup] = {}
        self._bound_ids: set[int] = set()
        self._run: CallRun | None = None
        # the buffers tensors share (buffer_plan.py): tensor -> buffer, buffer -> floats, global
        self._planned: dict[int, int] = {}
        self._buffer_floats: list[int] = []
        self._shared_buffers: dict[int, ir.Value] = {}
        # shapes in force while a node's block function is emitted (outer_split.py)
        self._blocks: dict[int, tuple[int, ...]] = {}
        self.parts = 0  # part functions the outlined calls were cut into (codegen/parts.py)

    def shape(self, i: int) -> tuple[int, ...]:
        if i in self._blocks:
            return self._blocks[i]
        return concrete(self.graph[i].shape, self.batch)

    def buffer(self, i: int) -> ir.Value:
        if i not in self.ptrs and i in self._planned:  # a buffer tensors share (buffer_plan.py)
            slot = self._planned[i]
            if slot not in self._shared_buffers:
                name = self.module.get_unique_name(f"{self.prefix}.b{slot}")
                self._shared_buffers[slot] = self._array(name, self._buffer_floats[slot])
            self.ptrs[i] = self._shared_buffers[slot]
        if i not in self.ptrs:
            node = self.graph[i]
            if node.op == "const":  # a constant global: every load of it folds away
                self.ptrs[i] = self._array(f"{self.prefix}.t{i}", 1, node.value())
            else:
                self.ptrs[i] = self._array(f"{self.prefix}.t{i}", max(1, size(self.shape(i))))
        return self.ptrs[i]

    def _array(self, name: str, n: int, value: float | None = None) -> ir.GlobalVariable:
        """An internal global of n floats, 64-byte aligned: zeros, or the constant `value`."""
        ty = ir.ArrayType(F32, n)
        g = ir.GlobalVariable(self.module, ty, name)
        g.linkage = "internal"
        g.initializer = ir.Constant(ty, None if value is None else [value])
        g.global_constant = value is not None
        g.align = 64
        g.type = PTR  # opaque: loads and stores name their own element type
        return g

    def emit(
        self,
        b: ir.IRBuilder,
        roots: Sequence[int],
        bound: dict[int, ir.Value],
        placed: dict[int, ir.Value] | None = None,
    ) -> None:
        """Emit every live node not in `bound` (params, inputs, labels bound to pointers);
        a node in `placed` is computed into the memory given there instead of a buffer."""
        self.ptrs.update(bound)
        self.ptrs.update(placed or {})
        self._bound_ids = set(bound)
        live = live_nodes(self.graph, roots)
        self._fold_transposes(live, roots)
        self.sums = fold_sums(
            self.graph, live, roots, self.shape, self.large, set(self.ptrs) | set(self.chains)
        )
        self._skipped = {j for fold in self.sums.values() for j in fold.skipped}
        given = set(placed or {}) - set(bound)
        self.column_sums = column_sums(
            self.graph, live, self.shape, self.large, given, self.gemm.k.nr, DIRECT_ROWS
        )
        self._skipped |= set(self.column_sums.values())
        in_place = {i for i in live if self.graph[i].op == "reshape" and i not in self.ptrs}
        groups = row_groups(self.graph, live, self._member, self._transparent, in_place)
        self._groups = {i: group for group in groups for i in group.members}
        self._plan(live, roots)
        # A small kernel stays one function, where LLVM shares work between nodes (the loss and
        # its gradient compute the same exponentials); a large one calls a function per kind
        # of node, so that LLVM's time grows with the distinct code.
        outline = len(live) >= OUTLINE_FROM
        # the calls of an outlined kernel, emitted in part functions when there are many
        self._run = CallRun(self.module, b, f"alpha.{self.prefix}") if outline else None
        A = LlvmArith(b, self.gemm.fused)
        for i in live:
            node = self.graph[i]
            if i in self.folded or i in self._skipped:
                continue
            if i in self.sums:
                if self._run is not None:
                    self._run.flush()  # the calls before it, before it
                self._folded_sum(b, i, self.sums[i])
                continue
            if i in bound or node.op in BOUND:
                if i not in self.ptrs:
                    raise AssertionError(f"{node.op} %{i} is not bound")
                continue
            if node.op == "const":
                self.buffer(i)  # initialised at its definition
                continue
            if node.op == "reshape" and i not in self.ptrs:
                # the same floats in the same order: read where they are
                self.ptrs[i] = self.ptrs[self.folded.get(node.inputs[0], node.inputs[0])]
                continue
            group = self._groups.get(i)
            if group is not None:
                self.buffer(i)  # its memory now, for the reshapes that read it in place
                if i == group.members[-1]:
                    self._call_group(b, group)
                continue
            if i in self.chains and node.op == "matmul" and self.large(node):
                if self._run is not None:
                    self._run.flush()  # the calls before it, before it
                self._product(b, node, self.buffer(i), self.chains[i], sums=self._sums_of(i))
                self.chained.add(i)
            elif i in self.column_sums:
                if self._run is not None:
                    self._run.flush()
                self._product(b, node, self.buffer(i), sums=self._sums_of(i))
            elif outline or self._split(i, node, self._sources(node)) is not None:
                self._call_node(b, i, node)  # (a large node of a small kernel: its tasks)
            else:
                self._emit(b, A, i, node)
        if self._run is not None:
            self._run.flush()
            self.parts += self._run.parts
            self._run = None

    def _plan(self, live: list[int], roots: Sequence[int]) -> None:
        """Which buffer each tensor this kernel computes is written to (buffer_plan.py), in the
        order `emit` computes them: the tensors given memory (bound, placed, or made by a
        larger variant of the kernel) keep it, reshapes and folded transposes are read where
        their input is."""
        holder: dict[int, int] = {}  # a tensor read in place -> the tensor holding its floats
        order: list[int] = []
        reads: dict[int, list[int]] = {}
        sizes: dict[int, int] = {}
        for i in live:
            node = self.graph[i]
            if node.op in BOUND or node.op == "const":
                continue
            src = self.folded.get(node.inputs[0], node.inputs[0]) if node.inputs else i
            if i in self._skipped:
                continue
            if i in self.folded or (node.op == "reshape" and i not in self.ptrs):
                holder[i] = holder.get(src, src)
                continue
            order.append(i)
            reads[i] = [holder.get(j, j) for j in node.inputs]
            if i in self.sums:  # the product's operands and the addends, read as it is stored
                fold = self.sums[i]
                addends = [*fold.inner, *([] if fold.row is None else [fold.row])]
                operands = [*self.graph[fold.product].inputs, *addends]
                reads[i] = [holder.get(j, j) for j in operands]
            if i not in self.ptrs:
                sizes[i] = max(1, size(self.shape(i)))
        # A row group computes block t of a later node before block t + 1 of an earlier one.
        # Tensors it cuts into blocks of rows of one size share a buffer safely (block t of
        # each is the same floats of it); one a node reads whole is read until the group ends.
        for group in {id(g): g for g in self._groups.values()}.values():
            last = reads.setdefault(group.members[-1], [])
            for i in group.members:
                node = self.graph[i]
                sources = self._sources(node)
                cut = cut_inputs(node, self.shape(i), [self.shape(j) for j in sources])
                whole = [j for j, c in zip(sources, cut or (), strict=True) if not c]
                last.extend(holder.get(j, j) for j in whole)
        kept = [holder.get(j, j) for j in roots]
        self._planned, self._buffer_floats = plan_buffers(order, reads, sizes, kept)

    def _call_node(self, b: ir.IRBuilder, i: int, node: Node) -> None:
        """Node i computed by a call of the function for its kind, made on first use:
        f(out, input...) with every shape fixed, the pointers its only variables."""
        every = [self.folded.get(j, j) for j in node.inputs]
        sources = self._sources(node)
        key = self._node_key(i, node)
        args = [self.buffer(i), *(self.ptrs[j] for j in sources)]
        fn = self.shared.get(key)
        if fn is None:
            name = f"alpha.node.{len(self.shared)}.{node.op}"
            split = self._split(i, node, sources)
            if split is None:
                fn = self._node_function(name, i, node, sources, every, {})
            else:
                cut, rows = split
                block = self._rows_function(name, i, node, cut, rows)
                strides = self._row_strides(i, sources, cut, rows)
                count = self.shape(i)[0] // rows
                fn = emit_tasks(self.module, self.gemm.parallel(), name, block, strides, count)
            self.shared[key] = fn
        self._invoke(b, fn, args)

    def _invoke(self, b: ir.IRBuilder, fn: ir.Function, args: Sequence[ir.Value]) -> None:
        """A node's or a group's call: recorded in the kernel's run of calls when outlined."""
        if self._run is not None:
            self._run.call(fn, args)
        else:
            b.call(fn, args)

    def _node_key(self, i: int, node: Node) -> tuple[object, ...]:
        """What makes two nodes' functions the same: op, constants, attributes and shapes."""
        every = [self.folded.get(j, j) for j in node.inputs]
        sources = self._sources(node)
        constants = tuple(
            self.graph[j].value() if self.graph[j].op == "const" else None for j in every
        )
        return (
            constants,
            node.op,
            node.attrs,
            self.shape(i),
            tuple(self.shape(j) for j in node.inputs),
            tuple(j in self.folded for j in node.inputs),
            tuple(self.shape(j) for j in sources),
            tuple(sources.index(j) for j in sources),  # x * x is not a * b
            self.training if node.op == "dropout" else None,  # a mask in training only
        )

    def _rows_function(
        self, name: str, i: int, node: Node, cut: tuple[bool, ...], rows: int
    ) -> ir.Function:
        """Node i's function on `rows` rows of its first axis (and of each cut source)."""
        sources = self._sources(node)
        every = [self.folded.get(j, j) for j in node.inputs]
        blocks = {i: (rows, *self.shape(i)[1:])}
        for j, c in zip(sources, cut, strict=True):
            if c:
                blocks[j] = (rows, *self.shape(j)[1:])
        return self._node_function(f"{name}.rows", i, node, sources, every, blocks)

    def _row_strides(
        self, i: int, sources: list[int], cut: tuple[bool, ...], rows: int
    ) -> list[int]:
        """Floats a task moves the output's pointer and each source's (0: read whole)."""
        strides = [rows * size(self.shape(i)[1:])]
        for j, c in zip(sources, cut, strict=True):
            strides.append(rows * size(self.shape(j)[1:]) if c else 0)
        return strides

    def _member(self, i: int) -> Member | None:
        """How node i joins a row group (row_groups.py), or None: a node the GEMM computes or
        that does not split along its first axis."""
        node = self.graph[i]
        if i in self._skipped or i in self.sums or i in self.chains or i in self.column_sums:
            return None
        if any(j in self.folded for j in node.inputs):
            return None
        sources = self._sources(node)
        shapes = [self.shape(j) for j in sources]
        out = self.shape(i)
        cut = cut_inputs(node, out, shapes)
        if cut is None:
            return None
        return out[0], cut, sources, out, shapes

    def _transparent(self, i: int) -> bool:
        """A node no code computes here: bound to memory, a constant, a transpose a product
        reads through, or a product's part a fold computes later."""
        node = self.graph[i]
        return (
            i in self.folded
            or i in self._skipped
            or i in self._bound_ids
            or node.op == "const"
            or node.op in BOUND
        )

    def _call_group(self, b: ir.IRBuilder, group: RowGroup) -> None:
        """A row group's nodes as one set of tasks: each task computes its block of rows of
        every node in order (row_groups.py)."""
        args: list[ir.Value] = []
        strides: list[int] = []
        placed: dict[tuple[int, int], int] = {}

        def place(value: ir.Value, stride: int) -> int:
            key = (id(value), stride)
            if key not in placed:
                placed[key] = len(args)
                args.append(value)
                strides.append(stride)
            return placed[key]

        rows = group.rows
        calls: list[tuple[ir.Function, list[int]]] = []
        kinds: list[tuple[object, ...]] = []
        for i in group.members:
            node = self.graph[i]
            sources = self._sources(node)
            cut = cut_inputs(node, self.shape(i), [self.shape(j) for j in sources])
            assert cut is not None
            moves = self._row_strides(i, sources, cut, rows)
            values = [self.buffer(i), *(self.ptrs[j] for j in sources)]
            positions = [place(v, s) for v, s in zip(values, moves, strict=True)]
            key = ("rows", rows, self._node_key(i, node))
            block = self.shared.get(key)
            if block is None:
                name = f"alpha.node.{len(self.shared)}.{node.op}"
                block = self._rows_function(name, i, node, cut, rows)
                self.shared[key] = block
            calls.append((block, positions))
            kinds.append((key, tuple(positions)))
        count = group.first // rows
        group_key = ("group", count, tuple(kinds), tuple(strides))
        fn = self.shared.get(group_key)
        if fn is None:
            name = f"alpha.group.{len(self.shared)}"
            fn = emit_task_calls(self.module, self.gemm.parallel(), name, calls, strides, count)
            self.shared[group_key] = fn
        self._invoke(b, fn, args)

    def _sources(self, node: Node) -> list[int]:
        """The inputs a node function takes as pointers: all but constants, which stay in the
        function (x / 16.0 becomes x * 0.0625) as part of its kind."""
        every = [self.folded.get(j, j) for j in node.inputs]
        return [j for j in every if self.graph[j].op != "const"]

    def _split(self, i: int, node: Node, sources: list[int]) -> tuple[tuple[bool, ...], int] | None:
        """Which sources a task cuts and the rows of the first axis it takes, for a node run
        as tasks (outer_split.py); None for one call."""
        if any(j in self.folded for j in node.inputs):
            return None
        shapes = [self.shape(j) for j in sources]
        cut = cut_inputs(node, self.shape(i), shapes)
        if cut is None:
            return None
        rows = task_rows(self.shape(i), shapes)
        return None if rows == self.shape(i)[0] else (cut, rows)

    def _node_function(
        self,
        name: str,
        i: int,
        node: Node,
        sources: list[int],
        every: list[int],
        blocks: dict[int, tuple[int, ...]],
    ) -> ir.Function:
        """f(out, source...) computing node i, at the shapes in `blocks` where given."""
        fn = ir.Function(
            self.module, ir.FunctionType(ir.VoidType(), [PTR] * (1 + len(sources))), name
        )
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        fn.attributes.add("noinline")  # inlined back, the kernel would be one huge function
        fn.args[0].add_attribute("noalias")  # the output is no input's memory
        saved = self.ptrs
        self.ptrs = dict(saved)
        self.ptrs[i] = fn.args[0]
        first: dict[int, ir.Value] = {}
        for j, arg in zip(sources, fn.args[1:], strict=True):
            first.setdefault(j, arg)  # an input given twice is read through its first
        self.ptrs.update(first)
        for j in every:
            if self.graph[j].op == "const":
                self.ptrs[j] = self.buffer(j)
        self._blocks = blocks
        try:
            inner = ir.IRBuilder(fn.append_basic_block("entry"))
            self._emit(inner, LlvmArith(inner, self.gemm.fused), i, node)
            inner.ret_void()
        finally:
            self._blocks = {}
            self.ptrs = saved
        return fn

    def large(self, node: Node) -> bool:
        """A product the GEMM computes (codegen/gemm.py), not inline loops."""
        (m, k), (_, n) = self.shape(node.inputs[0]), self.shape(node.inputs[1])
        return packed(m, n, k)

    def _fold_transposes(self, live: list[int], roots: Sequence[int]) -> None:
        """A transpose whose every live use is a large product is never written: the product
        reads its input through swapped strides."""
        users: dict[int, list[Node]] = {}
        for i in live:
            for j in self.graph[i].inputs:
                users.setdefault(j, []).append(self.graph[i])
        kept = set(roots)  # (a set: a step's roots are every parameter's gradient)
        for i in live:
            node = self.graph[i]
            uses = users.get(i, [])
            if (
                node.op == "transpose"
                and i not in kept
                and uses
                and all(u.op == "matmul" and self.large(u) for u in uses)
            ):
                self.folded[i] = node.inputs[0]

    def _in(self, node: Node, k: int) -> ir.Value:
        return self.ptrs[node.inputs[k]]

    def _emit(self, b: ir.IRBuilder, A: LlvmArith, i: int, node: Node) -> None:
        """Node i by the emitter of its family in the operation table (alpha_core/ops)."""
        out = self.buffer(i)
        entry = OPS.get(node.op)
        if entry is None:
            raise AssertionError(f"no code for {node.op}")
        GraphEmitter.FAMILIES[entry.host](self, b, A, i, node, out)

    def _bound(self, b: ir.IRBuilder, A: LlvmArith, i: int, node: Node, out: ir.Value) -> None:
        raise AssertionError(f"no code for {node.op}")  # bound to an argument by emit

    def _const(self, b: ir.IRBuilder, A: LlvmArith, i: int, node: Node, out: ir.Value) -> None:
        pass  # initialised at its definition

    def _zeros(self, b: ir.IRBuilder, A: LlvmArith, i: int, node: Node, out: ir.Value) -> None:
        self._fill(b, out, size(self.shape(i)))

    def _arith(self, b: ir.IRBuilder, A: LlvmArith, i: int, node: Node, out: ir.Value) -> None:
        """add, sub, mul, div with NumPy broadcasting."""
        shape = self.shape(i)
        sa, sc = self.shape(node.inputs[0]), self.shape(node.inputs[1])
        st_a, st_c = broadcast_strides(sa, shape), broadcast_strides(sc, shape)
        st_o = row_major_strides(shape)
        a, c = self._in(node, 0), self._in(node, 1)
        fn = {"add": A.add, "sub": A.sub, "mul": A.mul, "div": A.div}[node.op]

        def body(idx: list[ir.Value]) -> None:
            va = load(b, a, linear(b, idx, st_a))
            vc = load(b, c, linear(b, idx, st_c))
            store(b, fn(va, vc), out, linear(b, idx, st_o))

        nest(b, shape, body)

    def _math(self, b: ir.IRBuilder, A: LlvmArith, i: int, node: Node, out: ir.Value) -> None:
        """neg, relu, and the math functions' recipes (exp, log, tanh, sigmoid)."""
        op = node.op
        a = self._in(node, 0)

        def unary(v: ir.Value) -> ir.Value:
            if op == "neg":
                return A.neg(v)
            if op == "relu":
                return recipes.relu(A, v)
            return b.call(self.math[op], [v])

        long = op not in ("neg", "relu")  # a recipe's chain, not one operation
        for_range(
            b,
            size(self.shape(i)),
            lambda j: store(b, unary(load(b, a, j)), out, j),
            "m",
            RECIPE_VECTORS if long else 1,
        )

    def _math_grad(self, b: ir.IRBuilder, A: LlvmArith, i: int, node: Node, out: ir.Value) -> None:
        x, d = self._in(node, 0), self._in(node, 1)
        rec = {
            "relu_grad": recipes.relu_grad,
            "tanh_grad": recipes.tanh_grad,
            "sigmoid_grad": recipes.sigmoid_grad,
        }[node.op]
        for_range(
            b,
            size(self.shape(i)),
            lambda j: store(b, rec(A, load(b, x, j), load(b, d, j)), out, j),
        )

    def _transpose(self, b: ir.IRBuilder, A: LlvmArith, i: int, node: Node, out: ir.Value) -> None:
        """The last two axes swapped, for every index before them (transpose.py)."""
        src_shape = self.shape(node.inputs[0])
        (m, n) = src_shape[-2:]
        emit_transpose(b, self._in(node, 0), out, size(src_shape[:-2]), m, n)

    def _matmul_node(
        self, b: ir.IRBuilder, A: LlvmArith, i: int, node: Node, out: ir.Value
    ) -> None:
        self._matmul(b, A, node, out)

    def _reduce_node(
        self, b: ir.IRBuilder, A: LlvmArith, i: int, node: Node, out: ir.Value
    ) -> None:
        self._reduce(b, A, i, node, out)

    def _broadcast_node(
        self, b: ir.IRBuilder, A: LlvmArith, i: int, node: Node, out: ir.Value
    ) -> None:
        self._broadcast(b, node, out, self.shape(i))

    def _xent_node(self, b: ir.IRBuilder, A: LlvmArith, i: int, node: Node, out: ir.Value) -> None:
        emit_xent(self, b, A, node, out, grad=node.op == "xent_grad")  # loss_ops.py

    def _mse_node(self, b: ir.IRBuilder, A: LlvmArith, i: int, node: Node, out: ir.Value) -> None:
        emit_mse(self, b, A, node, out, grad=node.op == "mse_grad")  # loss_ops.py

    def _layer(self, b: ir.IRBuilder, A: LlvmArith, i: int, node: Node, out: ir.Value) -> None:
        emit_layer_op(self, b, A, i, node, out)  # tensor_ops.py

    def _conv(self, b: ir.IRBuilder, A: LlvmArith, i: int, node: Node, out: ir.Value) -> None:
        emit_conv_op(self, b, A, i, node, out)  # conv_ops.py

    def _loss(self, b: ir.IRBuilder, A: LlvmArith, i: int, node: Node, out: ir.Value) -> None:
        emit_loss_op(self, b, A, i, node, out)  # loss_ops.py

    def _fill(self, b: ir.IRBuilder, out: ir.Value, n: int) -> None:
        for_range(b, n, lambda j: store(b, ir.Constant(F32, 0.0), out, j))

    def _operand(self, i: int) -> tuple[ir.Value, tuple[int, int]]:
        """Where a product's operand lives and its (row, column) strides."""
        if i in self.folded:  # the transpose of an m x n tensor: element (r, c) at c * n + r
            (_, n) = self.shape(self.folded[i])
            return self.ptrs[self.folded[i]], (1, n)
        return self.ptrs[i], (self.shape(i)[1], 1)

    def _matmul(self, b: ir.IRBuilder, A: LlvmArith, node: Node, out: ir.Value) -> None:
        if self.large(node):
            self._product(b, node, out)
        else:
            self._small_matmul(b, A, node, out)

    def _product(
        self,
        b: ir.IRBuilder,
        node: Node,
        out: ir.Value,
        chain: Chain = None,
        row: ir.Value | None = None,
        sums: ir.Value | None = None,
    ) -> None:
        """A large product by the packed GEMM, its operands read through their strides;
        `sums`: where the column sums of its B go (column_sums.py), from +0.0."""
        (m, k), (_, n) = self.shape(node.inputs[0]), self.shape(node.inputs[1])
        (a, sa), (c, sc) = self._operand(node.inputs[0]), self._operand(node.inputs[1])
        if sums is not None:
            self._fill(b, sums, n)
        self.gemm.call(b, out, a, c, m, n, k, sa, sc, chain, row, sums)

    def _sums_of(self, product: int) -> ir.Value | None:
        """The memory of the bias gradient a product's packing adds up, or None."""
        reduce = self.column_sums.get(product)
        return None if reduce is None else self.ptrs[reduce]

    def _folded_sum(self, b: ir.IRBuilder, i: int, fold: SumFold) -> None:
        """The add i and the adds and product before it (sum_folds.py), by one product whose
        sums take the addends (the innermost first) and then the row as they are stored."""
        chain: Chain = None
        if fold.inner:
            count = len(fold.inner)
            links = entry_alloca(b, ir.ArrayType(PTR, count))
            links.type = PTR
            for t, y in enumerate(fold.inner):  # the GEMM adds the last pointer first
                b.store(self.ptrs[y], gep(b, links, i64(count - 1 - t), PTR))
            chain = (links, i64(count))
        row = None if fold.row is None else self.ptrs[fold.row]
        sums = self._sums_of(fold.product)
        self._product(b, self.graph[fold.product], self.buffer(i), chain, row, sums)

    def _small_matmul(self, b: ir.IRBuilder, A: LlvmArith, node: Node, out: ir.Value) -> None:
        """out[m, n] = Σ_k a[m, k] * c[k, n], k ascending from +0.0 (small_product.py)."""
        (m, k), (_, n) = self.shape(node.inputs[0]), self.shape(node.inputs[1])
        a, c = self._in(node, 0), self._in(node, 1)
        emit_small_product(b, A, out, a, c, m, n, k, lanes=self.gemm.k.width)

    def _reduce(self, b: ir.IRBuilder, A: LlvmArith, i: int, node: Node, out: ir.Value) -> None:
        """Add the input into the output in row-major input order, from +0.0."""
        src_shape = self.shape(node.inputs[0])
        out_shape = self.shape(i)
        src = self._in(node, 0)
        self._fill(b, out, max(1, size(out_shape)))
        if node.op == "reduce_to":
            strides = broadcast_strides(out_shape, src_shape)
        else:
            axis = node.axis()
            if axis is None:
                strides = [0] * len(src_shape)
            else:
                assert isinstance(axis, int)
                own = row_major_strides(out_shape)
                strides = own[:axis] + [0] + own[axis:]
        st_src = row_major_strides(src_shape)
        lines = _reduced_suffix(src_shape, strides)
        if lines is not None:
            self._reduce_lines(b, A, src, out, lines)
        else:

            def body(idx: list[ir.Value]) -> None:
                o = linear(b, idx, strides)
                store(b, A.add(load(b, out, o), load(b, src, linear(b, idx, st_src))), out, o)

            nest(b, src_shape, body)
        if node.op == "mean":
            axis = node.axis()
            count = size(src_shape) if axis is None else src_shape[axis]
            n = A.const(float(count))
            for_range(
                b, max(1, size(out_shape)), lambda j: store(b, A.div(load(b, out, j), n), out, j)
            )

    def _reduce_lines(
        self, b: ir.IRBuilder, A: LlvmArith, src: ir.Value, out: ir.Value, lines: Lines
    ) -> None:
        """out[base + r * step] += src[(outer, r, j)] for j ascending, every line r, outer index
        after outer index (a layer norm's mean, a convolution's bias gradient). In row-major
        order each output's additions are one chain over j and the lines follow each other;
        here a block of REDUCE_LINES lines goes together, the loop over the block inside the
        loop over j, so vector lanes are independent outputs. Each output still adds its terms
        in the row-major order of the input: outer index ascending, then j ascending."""
        per_outer = lines.rows * lines.k

        def one_outer(idx: list[ir.Value]) -> None:
            base = linear(b, idx, list(lines.outer_strides)) if idx else i64(0)
            at = linear(b, idx, row_major_strides(lines.outer)) if idx else i64(0)
            first_in = b.mul(at, i64(per_outer))

            def block(blk: Block) -> None:
                def add(r: ir.Value, j: ir.Value) -> None:
                    line = b.add(blk.first, r)
                    o = b.add(base, b.mul(line, i64(lines.step)))
                    v = load(b, src, b.add(first_in, b.add(b.mul(line, i64(lines.k)), j)))
                    store(b, A.add(load(b, out, o), v), out, o)

                blk.over(lines.k, add)

            LineBlocks(b, lines.rows, REDUCE_LINES, 0).run(block)

        if lines.outer:
            nest(b, lines.outer, one_outer)
        else:
            one_outer([])

    def _broadcast(
        self, b: ir.IRBuilder, node: Node, out: ir.Value, shape: tuple[int, ...]
    ) -> None:
        src = self._in(node, 0)
        axis = node.axis()
        if axis is None:
            strides = [0] * len(shape)
        else:
            assert isinstance(axis, int)
            own = row_major_strides(shape[:axis] + shape[axis + 1 :])
            strides = own[:axis] + [0] + own[axis:]
        st_o = row_major_strides(shape)
        nest(
            b,
            shape,
            lambda idx: store(b, load(b, src, linear(b, idx, strides)), out, linear(b, idx, st_o)),
        )

    FAMILIES: ClassVar[dict[str, Family]] = {
        "bound": _bound,
        "const": _const,
        "zeros": _zeros,
        "arith": _arith,
        "math": _math,
        "math_grad": _math_grad,
        "matmul": _matmul_node,
        "transpose": _transpose,
        "reduce": _reduce_node,
        "broadcast": _broadcast_node,
        "xent": _xent_node,
        "mse": _mse_node,
        "layer": _layer,
        "conv": _conv,
        "loss": _loss,
    }
