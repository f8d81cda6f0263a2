"""The kernels one executable links: init, leaf gradient, learner update, forward.

Their C signatures are declared in runtime/alpha_program.h; this module is the other side of
that contract.
"""

from __future__ import annotations

from collections import Counter

from llvmlite import ir

from alpha_core.autodiff.reverse import StepGraph
from alpha_core.check.program import InitSpec, Program
from alpha_core.codegen import learner_emit
from alpha_core.codegen.gemm import GemmEmitter
from alpha_core.codegen.graph_emit import GraphEmitter
from alpha_core.codegen.kernel_entry import bind_inputs, bind_params, copy, function
from alpha_core.codegen.leaves_kernel import emit_leaves_grad
from alpha_core.codegen.loops import (
    F32,
    I32,
    I64,
    PTR,
    entry_alloca,
    for_count,
    for_range,
    gep,
    i64,
    load,
    store,
)
from alpha_core.codegen.parts import CallRun
from alpha_core.codegen.tiles import blocking_of
from alpha_core.lower.batching import batching
from alpha_core.lower.live import live_nodes
from alpha_core.semantics import learners
from alpha_core.semantics.llvm_arith import LlvmArith

CHAIN_MAX = 8  # the longest chain the runtime passes a leaf (runtime/schedule.c, CHAIN)
# parameters from which the leaf kernel calls one function for every gradient's copy and chain
# pass instead of emitting each parameter's loops into itself
OUTLINE_PARAMS_FROM = 32


def emit_leaf_grad(
    module: ir.Module,
    program: Program,
    step: StepGraph,
    gemm: GemmEmitter,
    shared: dict[tuple[object, ...], ir.Function],
) -> None:
    """alpha_leaf_grad_chain, and alpha_leaf_grad as its call with no chain.

    Each element of a parameter's gradient is stored as chain[0] + (chain[1] + (... +
    (chain[n-1] + g))): a gradient computed by a large product has the chain added by the GEMM
    as it stores its tiles; any other gets its chain added in passes over its elements, the
    last vector first. The same additions either way, after the same g."""
    fn, b = function(
        module,
        "alpha_leaf_grad_chain",
        F32,
        [PTR] * 6 + [I32],
        ["params", "x", "y_class", "y_reg", "grad", "chain", "links"],
    )
    fn.attributes.add("noinline")  # alpha_leaf_grad calls it: the body is emitted once
    params, x, ycls, yreg, grad, chain, links32 = fn.args
    links = b.zext(links32, I64)
    em = GraphEmitter(module, step.graph, program.leaf_size, "step", gemm, shared)
    bound = bind_params(b, step.graph, program, params)
    bound.update(bind_inputs(step.graph, x, ycls, yreg))
    # A gradient computed by its own node is computed where the caller wants it, with no copy;
    # one that is also another parameter's gradient, or a parameter or input itself, is copied.
    direct: dict[int, int] = {}
    for spec, g in zip(program.params, step.grads, strict=True):
        if g not in bound and g not in direct and step.graph[g].op != "const":
            direct[g] = spec.offset
    placed = {g: gep(b, grad, i64(offset)) for g, offset in direct.items()}
    # A placed gradient that nothing else reads (no node, no second parameter) can be stored
    # with its chain added: the chain's vectors offset to where the gradient lives in them.
    live = live_nodes(step.graph, [step.loss_sum, *step.grads])
    read = {j for i in live for j in step.graph[i].inputs}
    times = Counter(step.grads)  # how many parameters have each gradient
    for g, offset in direct.items():
        # (only a large product takes a chain: a small one's gradient gets its pass below)
        node = step.graph[g]
        if g not in read and times[g] == 1 and node.op == "matmul" and em.large(node):
            at = entry_alloca(b, ir.ArrayType(PTR, CHAIN_MAX))
            at.type = PTR

            def shift(j: ir.Value, at: ir.Value = at, offset: int = offset) -> None:
                vector = b.load(gep(b, chain, j, PTR), typ=PTR)
                b.store(gep(b, vector, i64(offset)), gep(b, at, j, PTR))

            for_count(b, links, shift, "chain")
            em.chains[g] = (at, links)
    em.emit(b, [step.loss_sum, *step.grads], bound, placed)
    # Every copy before any chain pass: a gradient that two parameters share is placed where
    # the first wants it and copied for the second, and a copy made after the first's chain
    # pass added the chain to the second twice (chain + (chain + g)).
    # Many parameters: one function for the copies and one for the chain passes, called per
    # parameter with its offset and count, so that the kernel grows by two calls a parameter
    # and LLVM's time with it (inlined, each parameter added loops to one function whose
    # optimisation grew faster than linearly). The same operations on each element either way.
    outline = len(program.params) >= OUTLINE_PARAMS_FROM
    run = CallRun(module, b, "alpha.grads")
    for spec, g in zip(program.params, step.grads, strict=True):
        if direct.get(g) == spec.offset:
            continue
        if outline:
            args = [em.ptrs[g], grad, i64(spec.offset), i64(spec.count)]
            run.call(_copy_function(module), args)
        else:
            copy(b, em.ptrs[g], grad, spec.offset, spec.count)
    for spec, g in zip(program.params, step.grads, strict=True):
        if direct.get(g) == spec.offset and g in em.chained:
            continue  # stored with its chain by the GEMM
        if outline:
            fn_chain = _chain_function(module, gemm.k.width)
            run.call(fn_chain, [grad, i64(spec.offset), i64(spec.count), chain, links])
        else:
            _add_chain(b, grad, spec.offset, spec.count, chain, links, gemm.k.width)
    run.flush()
    b.ret(load(b, em.ptrs[step.loss_sum], i64(0)))

    wrapper, w = function(
        module, "alpha_leaf_grad", F32, [PTR] * 5, ["params", "x", "y_class", "y_reg", "grad"]
    )
    none = ir.Constant(PTR, None)
    w.ret(w.call(fn, [*wrapper.args, none, ir.Constant(I32, 0)]))


def _copy_function(module: ir.Module) -> ir.Function:
    """alpha.grad_copy(src, dst, offset, n): dst[offset + j] = src[j] for j < n, made once."""
    name = "alpha.grad_copy"
    if name in module.globals:
        found = module.globals[name]
        assert isinstance(found, ir.Function)
        return found
    fn = _internal(module, name, [PTR, PTR, I64, I64])
    src, dst, offset, n = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    for_count(b, n, lambda j: store(b, load(b, src, j), dst, b.add(j, offset)), "cp")
    b.ret_void()
    return fn


def _chain_function(module: ir.Module, width: int) -> ir.Function:
    """alpha.grad_chain(grad, offset, n, chain, links): _add_chain with the parameter's offset
    and count as arguments, made once per module."""
    name = "alpha.grad_chain"
    if name in module.globals:
        found = module.globals[name]
        assert isinstance(found, ir.Function)
        return found
    fn = _internal(module, name, [PTR, I64, I64, PTR, I64])
    grad, offset, n, chain, links = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    _add_chain(b, grad, offset, n, chain, links, width)
    b.ret_void()
    return fn


def _internal(module: ir.Module, name: str, args: list[ir.Type]) -> ir.Function:
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), args), name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    fn.attributes.add("noinline")  # inlined back, the kernel would be one huge function again
    for arg in fn.args:
        if isinstance(arg.type, ir.PointerType):
            arg.add_attribute("noalias")
    return fn


def _add_chain(
    b: ir.IRBuilder,
    grad: ir.Value,
    offset: int | ir.Value,
    n: int | ir.Value,
    chain: ir.Value,
    links: ir.Value,
    width: int,
) -> None:
    """grad[e] = chain[0][e] + (chain[1][e] + (... + (chain[links-1][e] + grad[e]))) for the
    elements e of one parameter, in one pass: `width` elements at a time (independent lanes),
    then one at a time. `offset` and `n` are known now, or values (alpha.grad_chain)."""
    vec = ir.VectorType(F32, width)

    def chained(e: ir.Value, ty: ir.Type) -> None:
        slot = entry_alloca(b, ty)
        b.store(b.load(gep(b, grad, e, ty), typ=ty, align=4), slot)

        def link(t: ir.Value) -> None:
            where = gep(b, chain, b.sub(b.sub(links, i64(1)), t), PTR)
            add = b.load(gep(b, b.load(where, typ=PTR), e, ty), typ=ty, align=4)
            b.store(b.fadd(b.load(slot, typ=ty), add), slot)

        for_count(b, links, link, "link")
        b.store(b.load(slot, typ=ty), gep(b, grad, e, ty), align=4)

    if isinstance(n, int) and isinstance(offset, int):
        whole = n // width
        if whole:
            for_range(b, whole, lambda j: chained(b.add(b.mul(j, i64(width)), i64(offset)), vec))
        rest = n - whole * width
        for_range(b, rest, lambda j: chained(b.add(j, i64(offset + whole * width)), F32))
        return
    assert isinstance(n, ir.Value) and isinstance(offset, ir.Value)
    # the same two passes, their bounds computed at run time
    count = b.udiv(n, i64(width))
    tail = b.add(offset, b.mul(count, i64(width)))
    for_count(b, count, lambda j: chained(b.add(b.mul(j, i64(width)), offset), vec), "vec")
    for_count(b, b.sub(n, b.mul(count, i64(width))), lambda j: chained(b.add(j, tail), F32))


def emit_forward(
    module: ir.Module,
    program: Program,
    gemm: GemmEmitter,
    shared: dict[tuple[object, ...], ir.Function],
) -> None:
    fn, b = function(module, "alpha_forward", ir.VoidType(), [PTR] * 3, ["params", "x", "out"])
    params, x, out = fn.args
    em = GraphEmitter(module, program.model, program.leaf_size, "fwd", gemm, shared)
    bound = bind_params(b, program.model, program, params)
    bound.update(bind_inputs(program.model, x, None, None))
    result = program.output if program.forward_output is None else program.forward_output
    em.emit(b, [result], bound)
    per_example = program.data.outputs * program.data.positions  # a label's outputs, per label
    copy(b, em.ptrs[result], out, 0, program.leaf_size * per_example)
    b.ret_void()


APPLY_CHUNK = 1 << 16  # elements per task of the learner update
APPLY_TASKS_FROM = 1 << 18  # a role applying fewer elements does it on its own thread
ROUND_VALUES = 5  # the fields of learners.Round, passed to every span of the update


def emit_apply(module: ir.Module, program: Program, gemm: GemmEmitter, pair: bool = False) -> None:
    """The learner on elements [start, start + count) of the flat parameters.

    `state` is the caller's learner state for exactly those elements: `slots` arrays of `count`
    floats, then the learner's scalars. The update of each element depends on that element
    alone, so any partition of the elements gives the bits of the whole update: a large count
    is split into tasks of APPLY_CHUNK elements run on the role's threads.

    `pair`: alpha_apply_pair, whose gradient is the sum of two vectors, each element's addition
    made as the learner reads it (the last addition of the combine tree, left + right, which
    the schedule leaves to the learner when nothing else reads the round's gradient: one pass
    over memory fewer, and no vector written for it).
    """
    grads = ["left", "right"] if pair else ["grad_sum"]
    fn, b = function(
        module,
        "alpha_apply_pair" if pair else "alpha_apply",
        ir.VoidType(),
        [PTR, PTR, *[PTR] * len(grads), I32, I64, I64],
        ["params", "state", *grads, "step", "start", "count"],
    )
    params, state = fn.args[:2]
    gsums = list(fn.args[2 : 2 + len(grads)])
    step_index, start, count = fn.args[2 + len(grads) :]
    r = learner_emit.emit_round_values(module, b, program, state, step_index, count)
    scalars = [r.lr, r.factor, r.b1t, r.b2t, r.scale]
    stem = "alpha.apply_pair" if pair else "alpha.apply"  # its span and task functions
    span = _emit_apply_span(module, program, grads, f"{stem}.span")
    if program.n_params < APPLY_TASKS_FROM:
        b.call(span, [params, state, *gsums, start, count, i64(0), count, *scalars])
        b.ret_void()
        return
    pointers = [PTR] * (2 + len(grads))
    ctx_ty = ir.LiteralStructType([*pointers, I64, I64, *[F32] * ROUND_VALUES])
    task = _emit_apply_task(module, span, ctx_ty, len(pointers), f"{stem}.task")
    ctx = entry_alloca(b, ctx_ty)
    ctx.type = PTR
    for i, value in enumerate((params, state, *gsums, start, count, *scalars)):
        field = b.gep(ctx, [ir.Constant(I32, 0), ir.Constant(I32, i)], source_etype=ctx_ty)
        b.store(value, field)
    tasks = b.udiv(b.add(count, i64(APPLY_CHUNK - 1)), i64(APPLY_CHUNK))
    b.call(gemm.parallel(), [task, ctx, b.trunc(tasks, I32)])
    b.ret_void()


def _emit_apply_task(
    module: ir.Module, span: ir.Function, ctx_ty: ir.Type, pointers: int, name: str
) -> ir.Function:
    """task(ctx, index, scratch): elements [index * CHUNK, ...) of the update in ctx."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, I32, PTR]), name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    ctx, index, _ = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    tys = (*[PTR] * pointers, I64, I64, *[F32] * ROUND_VALUES)
    fields = [
        b.load(b.gep(ctx, [ir.Constant(I32, 0), ir.Constant(I32, i)], source_etype=ctx_ty), typ=t)
        for i, t in enumerate(tys)
    ]
    count = fields[pointers + 1]
    lo = b.mul(b.zext(index, I64), i64(APPLY_CHUNK))
    hi = b.add(lo, i64(APPLY_CHUNK))
    hi = b.select(b.icmp_unsigned("<", hi, count), hi, count)
    b.call(span, [*fields[: pointers + 2], lo, hi, *fields[pointers + 2 :]])
    b.ret_void()
    return fn


def _emit_apply_span(
    module: ir.Module, program: Program, names: list[str], name: str
) -> ir.Function:
    """span(params, state, grad_sum, start, count, lo, hi, lr, factor, b1t, b2t, scale): the
    update of elements start + j for j in [lo, hi), with the round's values (learners.Round);
    with two gradient vectors (`names` left and right), the gradient is their sum."""
    grads = len(names)
    fn, b = function(
        module,
        name,
        ir.VoidType(),
        [PTR, PTR, *[PTR] * grads, I64, I64, I64, I64, *[F32] * ROUND_VALUES],
        ["params", "state", *names, "start", "count", "lo", "hi"]
        + ["lr", "factor", "b1t", "b2t", "scale"],
    )
    fn.linkage = "internal"
    params, state = fn.args[:2]
    gsums = fn.args[2 : 2 + grads]
    start, count, lo, hi = fn.args[2 + grads : 6 + grads]
    r = learners.Round(*fn.args[6 + grads :])
    A = LlvmArith(b)

    def element(t: ir.Value) -> None:
        emit_apply_element(
            b,
            A,
            program,
            params,
            state,
            gsums[0],
            start,
            count,
            b.add(lo, t),
            r.b1t,
            r.b2t,
            r,
            right=gsums[1] if grads == 2 else None,
        )

    for_count(b, b.sub(hi, lo), element, "p")
    b.ret_void()
    return fn


def emit_apply_element(
    b: ir.IRBuilder,
    A: LlvmArith,
    program: Program,
    params: ir.Value,
    state: ir.Value,
    gsum: ir.Value,
    start: ir.Value,
    count: ir.Value,
    j: ir.Value,
    b1t: ir.Value,
    b2t: ir.Value,
    r: learners.Round[ir.Value] | None = None,
    right: ir.Value | None = None,
) -> None:
    """The learner's update of element start + j (0 <= j < count): host kernels call it in a
    loop, GPU kernels once per thread, so both compute it with the same operations.

    `r` is the round's values (learner_emit.emit_round_values). Without it the round is built
    from b1t, b2t and the constant rate, which is right only for a learner with no schedule
    and no clipping (a GPU role refuses those until it computes the round's values).
    With `right`, the element's gradient is gsum's plus right's (gsum's first)."""
    learner = program.learner
    if r is None:
        lr = A.const(dict(learner.hyper)["lr"])
        factor = A.const(1.0)
        if learner.kind == "adamw":
            factor = learners.decoupled_factor(A, lr, dict(learner.hyper)["weight_decay"])
        r = learners.Round(lr, factor, b1t, b2t, A.const(1.0))
    e = b.add(start, j)
    at = [j if k == 0 else b.add(j, b.mul(count, i64(k))) for k in range(program.state_slots)]
    slots = [load(b, state, x) for x in at]
    g = load(b, gsum, e)
    if right is not None:
        g = A.add(g, load(b, right, e))
    p2, new = learners.update(A, learner, program.batch, load(b, params, e), slots, g, r)
    store(b, p2, params, e)
    for value, x in zip(new, at, strict=True):
        store(b, value, state, x)


def emit_init(module: ir.Module, program: Program) -> None:
    from alpha_core.semantics import rng_llvm

    fn, b = function(module, "alpha_init_params", ir.VoidType(), [PTR], ["params"])
    (params,) = fn.args
    # one loop per kind of initialiser (its kind and constants), the seed and the count its
    # arguments: a model of many layers initialised alike compiles the generator once, not once
    # per parameter (the same operations either way: the same bits)
    loops: dict[tuple[str, tuple[float, ...]], ir.Function] = {}
    run = CallRun(module, b, "alpha.init")  # many parameters: calls in parts (codegen/parts.py)
    for spec in program.params:
        if spec.init.loaded is not None:  # `load`: the values compiled in, copied
            blob = _blob(module, f"alpha.init.values.{spec.offset}", spec.init.loaded.values)
            copy = _copy_function(module)  # alpha.grad_copy(src, dst, offset, n)
            run.call(copy, [blob, params, i64(spec.offset), i64(spec.count)])
            continue
        kind, args, seed = init_arguments(spec.init)
        loop = loops.get((kind, args))
        if loop is None:
            loop = ir.Function(
                module,
                ir.FunctionType(ir.VoidType(), [PTR, I64, I64]),
                f"alpha.init.{len(loops)}.{kind}",
            )
            loop.linkage = "internal"
            loop.attributes.add("nounwind")
            loop.attributes.add("noinline")
            out, seed_arg, count = loop.args
            inner = ir.IRBuilder(loop.append_basic_block("entry"))
            rng_llvm.emit_init(inner, kind, args, seed_arg, out, count)
            inner.ret_void()
            loops[(kind, args)] = loop
        u = seed % (1 << 64)  # the seed's 64 bits, as rng takes them
        seed_bits = ir.Constant(I64, u - (1 << 64) if u >= 1 << 63 else u)
        run.call(loop, [gep(b, params, i64(spec.offset)), seed_bits, i64(spec.count)])
    run.flush()
    b.ret_void()


def _blob(module: ir.Module, name: str, values: bytes) -> ir.GlobalVariable:
    """A read-only array of the bytes `values` (little-endian float32, as both targets store
    floats): internal, so a CPU level whose initialiser is dropped drops it too."""
    g = ir.GlobalVariable(module, ir.ArrayType(ir.IntType(8), len(values)), name)
    g.initializer = ir.Constant(ir.ArrayType(ir.IntType(8), len(values)), bytearray(values))
    g.global_constant = True
    g.linkage = "internal"
    g.align = 16
    return g


def init_arguments(init: InitSpec) -> tuple[str, tuple[float, ...], int]:
    """(kind, parameters, seed) of semantics.rng for a declared initialiser (never `load`,
    whose values are compiled in: emit_init)."""
    if init.kind == "load":
        raise ValueError("a loaded tensor has no generator")
    if init.kind == "zeros":
        return "constant", (0.0,), 0
    if init.kind == "constant":
        return "constant", (init.a,), 0
    return init.kind, (init.a, init.b), init.seed


def build_kernels(
    program: Program, step: StepGraph, triple: str, cpu: str = "generic", features: str = ""
) -> ir.Module:
    """The kernels for one target CPU: its vector width sizes the products' register tiles
    (never their bits)."""
    module = ir.Module(name=f"alpha.{program.name}")
    module.triple = triple
    gemm = GemmEmitter(module, blocking_of(triple, cpu, features, program.fused), program.fused)
    emit_init(module, program)
    shared: dict[tuple[object, ...], ir.Function] = {}  # node functions of both kernels
    emit_leaf_grad(module, program, step, gemm, shared)
    split = batching(program, step)
    if split is not None:
        emit_leaves_grad(module, program, step, split, gemm, shared)
    emit_apply(module, program, gemm)
    if program.learner.clip is None:  # clipping reads the round's gradient whole before it
        emit_apply(module, program, gemm, pair=True)
    if program.learner.clip is not None:
        learner_emit.emit_clipping(module, program)
    emit_forward(module, program, gemm, shared)
    gemm.finish()
    return module
