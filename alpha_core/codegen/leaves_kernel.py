"""One kernel for all the leaves of a round: alpha_leaves_grad.

A leaf's step is two kinds of work. Most nodes compute each example's rows from that example's
rows alone (the layers, the loss of each example, the gradients of the activations): computed
for the whole round at once, over leaves x leaf_size rows, every row has the bits it has when
its leaf is computed alone, and each weight matrix is read once per product, not once per leaf.
The rest sum over a leaf's examples (the weight and bias gradients, the loss sum): those are
computed per leaf and added by the canonical tree of the leaves, a weight gradient block by
block in the GEMM's scratch (GemmEmitter.call_tree), so that neither a leaf's gradient nor a
node of the tree is ever stored whole. The sums and the additions are those of the leaf kernel
and the combine walk, so the bits are too (tests/test_leaves_kernel.py).

Only a step of this shape is compiled so (`batching` says whether, and why not): a node that
mixes examples must be a parameter's gradient or the loss, read by no other node; dropout (its
mask is a function of the leaf), operations outside a known row-wise set, and rows of every leaf
that would take more than MAX_BATCH_BYTES keep the leaf kernel alone. The runtime calls it for
any node of the tree whose leaves a role computes itself with nothing held inside (the whole
tree in a single process, a worker's half in `pair`; schedule.c).
"""

from __future__ import annotations

from llvmlite import ir

from alpha_core.autodiff.reverse import StepGraph
from alpha_core.check.program import Program
from alpha_core.codegen.gemm import GemmEmitter
from alpha_core.codegen.graph_emit import GraphEmitter
from alpha_core.codegen.kernel_entry import bind_inputs, bind_params, copy, function
from alpha_core.codegen.loops import F32, I32, PTR, for_range, gep, i64, load, store
from alpha_core.codegen.parts import CallRun
from alpha_core.ir.graph import Graph, concrete, size
from alpha_core.lower.batching import OUTLINE_SUMS_FROM, Batching, subtree_sizes
from alpha_core.lower.tree import tree_split
from alpha_core.semantics.llvm_arith import LlvmArith


def emit_leaves_grad(
    module: ir.Module,
    program: Program,
    step: StepGraph,
    split: Batching,
    gemm: GemmEmitter,
    shared: dict[tuple[object, ...], ir.Function],
) -> None:
    """alpha_leaves_grad(params, x, y_class, y_reg, grad, count): the canonical tree's sum over
    `count` consecutive leaves of their gradients into grad (x and the labels those leaves'
    rows in leaf order); returns the tree's sum of their loss sums. `count` is a size of a node
    of the canonical tree (alpha_leaves_batch says which): the tree over a node's leaves has
    the same shape wherever the node is. One function per size, sharing one set of buffers
    (the largest size's)."""
    counts = subtree_sizes(program.leaves)
    largest: dict[int, ir.Value] = {}
    variants = {
        count: _emit_variant(module, program, step, split, gemm, shared, count, largest)
        for count in counts
    }
    fn, b = function(
        module,
        "alpha_leaves_grad",
        F32,
        [PTR] * 5 + [I32],
        ["params", "x", "y_class", "y_reg", "grad", "count"],
    )
    *args, count = fn.args
    unknown = fn.append_basic_block("unknown")
    switch = b.switch(count, unknown)
    for n, variant in variants.items():
        case = fn.append_basic_block(f"leaves{n}")
        switch.add_case(ir.Constant(I32, n), case)
        b.position_at_end(case)
        b.ret(b.call(variant, args))
    b.position_at_end(unknown)
    b.unreachable()  # the runtime asks alpha_leaves_batch first
    ask, a = function(module, "alpha_leaves_batch", I32, [I32], ["count"])
    (n_arg,) = ask.args
    yes = ir.Constant(ir.IntType(1), 0)
    for n in counts:
        yes = a.or_(yes, a.icmp_unsigned("==", n_arg, ir.Constant(I32, n)))
    a.ret(a.zext(yes, I32))


def _emit_variant(
    module: ir.Module,
    program: Program,
    step: StepGraph,
    split: Batching,
    gemm: GemmEmitter,
    shared: dict[tuple[object, ...], ir.Function],
    leaves: int,
    largest: dict[int, ir.Value],
) -> ir.Function:
    """The kernel for `leaves` leaves: an internal function of alpha_leaves_grad's first five
    arguments. The first (largest) size makes the buffers; a smaller one uses them, and makes
    only those the larger ones did not need (a transpose a small product cannot read in place)."""
    graph = step.graph
    rows = program.leaf_size
    names = ["params", "x", "y_class", "y_reg", "grad"]
    fn, b = function(module, f"alpha.leaves.{leaves}", F32, [PTR] * 5, names)
    fn.linkage = "internal"
    params, x, ycls, yreg, grad = fn.args
    em = GraphEmitter(module, graph, leaves * rows, "leaves", gemm, shared)
    em.ptrs.update(largest)  # the static buffers, sized for the most leaves
    bound = bind_params(b, graph, program, params)
    bound.update(bind_inputs(graph, x, ycls, yreg))
    feeds = sorted(
        {split.folded.get(j, j) for g in split.sums for j in graph[g].inputs} - set(bound)
    )
    em.emit(b, feeds, bound)
    for i, v in em.ptrs.items():  # sizes run largest first: a buffer made here serves the rest
        if isinstance(v, ir.GlobalVariable):
            largest.setdefault(i, v)
    em.ptrs.update(bound)
    loss = None
    # Many sums (a model of many bias vectors): each is a call of one function per kind of sum,
    # the calls in parts (codegen/parts.py); inlined, every sum's loops were emitted into this
    # one function, and LLVM's time on it grew with the square of their number (100 bias
    # vectors of 512: 53 s). The same loops either way.
    outline = sum(graph[g].op != "matmul" for g in split.sums) >= OUTLINE_SUMS_FROM
    run = CallRun(module, b, f"alpha.leaves.{leaves}.sums")
    kinds: dict[tuple[object, ...], ir.Function] = {}
    for g, offset in split.sums.items():
        node = graph[g]
        if outline and node.op != "matmul" and offset is not None:
            (src,) = node.inputs
            kind = _sums_function(module, program, graph, em.gemm, g, leaves, kinds)
            run.call(kind, [em.ptrs[src], gep(b, grad, i64(offset))])
            continue
        run.flush()  # the calls before this sum, before it
        if node.op == "matmul":  # hᵀ · d, per leaf, by the tree, block by block
            assert offset is not None
            h, d = split.folded[node.inputs[0]], node.inputs[1]
            height, width = graph[h].shape[1], graph[d].shape[1]
            per = -graph[h].shape[0] * rows  # rows of a leaf
            gemm.call_tree(
                b,
                gep(b, grad, i64(offset)),
                em.ptrs[h],
                em.ptrs[d],
                height,
                width,
                per,
                (1, height),
                (width, 1),
                leaves,
                (per * height, per * width),
            )
            continue
        out = _leaf_sums(module, b, program, graph, em.gemm, em.ptrs[node.inputs[0]], g, leaves)
        if offset is None:
            loss = out
        else:
            copy(b, out, grad, offset, max(1, size(graph[g].shape)))
    run.flush()
    assert loss is not None
    b.ret(load(b, loss, i64(0)))
    return fn


def _sums_function(
    module: ir.Module,
    program: Program,
    graph: Graph,
    gemm: GemmEmitter,
    g: int,
    leaves: int,
    kinds: dict[tuple[object, ...], ir.Function],
) -> ir.Function:
    """f(rows, out): _leaf_sums of a sum like node g on `rows`, its root copied to `out`; one
    function per kind of sum (its operation, attributes and shapes), made on first use."""
    node = graph[g]
    (src,) = node.inputs
    batch = program.leaf_size
    key = (node.op, node.attrs, concrete(graph[src].shape, batch), concrete(node.shape, batch))
    fn = kinds.get(key)
    if fn is None:
        fn = ir.Function(
            module,
            ir.FunctionType(ir.VoidType(), [PTR, PTR]),
            f"alpha.leaves.{leaves}.sum.{len(kinds)}.{node.op}",
        )
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        fn.attributes.add("noinline")  # inlined back, the kernel would be one huge function
        rows, out = fn.args
        out.add_attribute("noalias")  # a parameter's gradient: no buffer of the kernel's
        inner = ir.IRBuilder(fn.append_basic_block("entry"))
        tag = f"{leaves}.kind{len(kinds)}"
        root = _leaf_sums(module, inner, program, graph, gemm, rows, g, leaves, tag)
        copy(inner, root, out, 0, max(1, size(node.shape)))
        inner.ret_void()
        kinds[key] = fn
    return fn


def _leaf_sums(
    module: ir.Module,
    b: ir.IRBuilder,
    program: Program,
    graph: Graph,
    gemm: GemmEmitter,
    rows: ir.Value,
    g: int,
    leaves: int,
    tag: str | None = None,
) -> ir.Value:
    """Node g (a sum over a leaf's rows) for each leaf, by the leaf kernel's own code on that
    leaf's rows (`rows`, its input for every leaf), then added by the canonical tree; returns
    the buffer holding the root. `tag` names the buffers (default: after g)."""
    (src,) = graph[g].inputs
    shape = graph[src].shape
    per_row = size(shape[1:]) * -shape[0]  # floats of one example
    n = max(1, size(graph[g].shape))
    values = []
    for leaf in range(leaves):
        name = f"leaves{leaves}.sum{g}.{leaf}" if tag is None else f"leaves{tag}.{leaf}"
        buf = ir.GlobalVariable(module, ir.ArrayType(F32, n), name)
        buf.linkage = "internal"
        buf.initializer = ir.Constant(ir.ArrayType(F32, n), None)
        buf.align = 64
        buf.type = PTR
        one = GraphEmitter(module, graph, program.leaf_size, f"leaves.{leaf}", gemm)
        one.ptrs = {src: gep(b, rows, i64(leaf * program.leaf_size * per_row)), g: buf}
        # the node alone, on this leaf's rows
        one._emit(b, LlvmArith(b, one.gemm.fused), g, graph[g])
        values.append(buf)

    def tree(lo: int, hi: int) -> ir.Value:  # left + right, into the left's buffer
        if hi - lo == 1:
            return values[lo]
        mid = lo + tree_split(hi - lo)
        left, right = tree(lo, mid), tree(mid, hi)
        for_range(b, n, lambda j: store(b, b.fadd(load(b, left, j), load(b, right, j)), left, j))
        return left

    return tree(0, leaves)
