"""What the learner update computes once per round, and the kernels of clipping by global norm.

The round's values (learning rate, AdamW's factor, Adam's beta powers, the clipping scale) are
the recipes of alpha_core.semantics.learners.round_values, evaluated at the top of alpha_apply;
every element's update then reads them (kernels.emit_apply_element).

A system that clips gets two more symbols (runtime/clip_norm.c):
- `alpha_grad_sqsum(grad_sum, lo, hi)`: the canonical-tree sum over elements [lo, hi) of the
  squared mean gradient (learners.clip_square), a node [lo, hi) splitting at lo plus the largest
  power of two strictly below hi - lo, the left child first, as the leaf tree does;
- `alpha_clip_hook`, a pointer to the runtime's clip_norm_run: the schedule interpreter calls
  it only when it is defined, so an executable whose kernels do not clip links no clipping code.
The round's total sum of squares reaches alpha_apply through `alpha_clip_sqsum`, a float the
kernels define and clip_norm_run sets before each apply.
"""

from __future__ import annotations

from llvmlite import ir

from alpha_core.check.program import Program
from alpha_core.codegen.loops import F32, I32, I64, PTR, i64, load, store
from alpha_core.semantics import learners, schedules
from alpha_core.semantics.llvm_arith import LlvmArith, intrinsic

SQSUM = "alpha_grad_sqsum"
SQSUM_TOTAL = "alpha_clip_sqsum"
HOOK = "alpha_clip_hook"
HOOK_TARGET = "clip_norm_run"
UNROLLED = 8  # a node of 8 elements (a perfect tree) is added without calls


def _phase(b: ir.IRBuilder, spec: schedules.ScheduleSpec, step: ir.Value) -> tuple[ir.Value, ...]:
    """schedules.phase in integers: (tc, after, k) as i32 values, each at most 2**24."""
    cap = ir.Constant(I32, schedules.ROUND_CAP)
    tc = b.select(b.icmp_unsigned("<", step, cap), step, cap)
    warm = ir.Constant(I32, spec.warmup)
    past = b.select(b.icmp_unsigned(">=", tc, warm), b.sub(tc, warm), ir.Constant(I32, 0))
    span = ir.Constant(I32, max(spec.steps - spec.warmup, 1))
    after = b.select(b.icmp_unsigned("<", past, span), past, span)
    k = b.udiv(past, ir.Constant(I32, spec.every))
    return tc, after, k


def emit_round_values(
    module: ir.Module,
    b: ir.IRBuilder,
    program: Program,
    state: ir.Value,
    step: ir.Value,
    count: ir.Value,
    sqsum_value: ir.Value | None = None,
) -> learners.Round[ir.Value]:
    """The round's values at the top of alpha_apply; Adam's powers are stored back into the
    state's scalars (after the count * slots floats of the elements). A clipping system reads
    the round's sum of squares from alpha_clip_sqsum, or from `sqsum_value` when given (a GPU
    role, whose kernels cannot read the host's global)."""
    A = LlvmArith(b)
    learner = program.learner
    zero = ir.Constant(F32, 0.0)
    b1t: ir.Value = zero
    b2t: ir.Value = zero
    at = b.mul(count, i64(2))
    adam = learners.SCALARS[learner.kind] == 2
    if adam:
        b1t, b2t = load(b, state, at), load(b, state, b.add(at, i64(1)))
    when = None
    if learner.schedule is not None:
        tc, after, k = _phase(b, learner.schedule, step)
        when = (A.itof(tc), A.itof(after), k)
    sqsum = None
    if learner.clip is not None:
        sqsum = sqsum_value or b.load(_global_float(module, SQSUM_TOTAL), typ=F32)
    first = b.icmp_unsigned("==", step, ir.Constant(I32, 0))
    r = learners.round_values(A, learner, when, first, b1t, b2t, sqsum)
    if adam:
        store(b, r.b1t, state, at)
        store(b, r.b2t, state, b.add(at, i64(1)))
    return r


def _global_float(module: ir.Module, name: str) -> ir.GlobalVariable:
    if name in module.globals:
        found = module.globals[name]
        assert isinstance(found, ir.GlobalVariable)
        return found
    g = ir.GlobalVariable(module, F32, name)
    g.initializer = ir.Constant(F32, 0.0)
    return g


def emit_clipping(module: ir.Module, program: Program) -> None:
    """alpha_grad_sqsum, alpha_clip_sqsum and alpha_clip_hook, for a system that clips."""
    _global_float(module, SQSUM_TOTAL)
    node = ir.Function(module, ir.FunctionType(F32, [PTR, I64, I64]), "alpha.sqsum.node")
    node.linkage = "internal"
    node.attributes.add("nounwind")
    g, lo, hi = node.args
    b = ir.IRBuilder(node.append_basic_block("entry"))
    A = LlvmArith(b)
    n = b.sub(hi, lo)
    one, unrolled, split = (node.append_basic_block(x) for x in ("one", "unrolled", "split"))
    is_one = b.icmp_unsigned("==", n, i64(1))
    b.cbranch(is_one, one, split)

    b.position_at_end(one)
    b.ret(learners.clip_square(A, load(b, g, lo), program.batch))

    b.position_at_end(split)
    is_block = b.icmp_unsigned("==", n, i64(UNROLLED))
    recurse = node.append_basic_block("recurse")
    b.cbranch(is_block, unrolled, recurse)

    b.position_at_end(unrolled)
    terms = [
        learners.clip_square(A, load(b, g, b.add(lo, i64(i))), program.batch) for i in range(8)
    ]
    while len(terms) > 1:  # a perfect tree: pairs, left first, level by level
        terms = [A.add(terms[i], terms[i + 1]) for i in range(0, len(terms), 2)]
    b.ret(terms[0])

    b.position_at_end(recurse)
    # the largest power of two strictly below n (n >= 2): 2 ** floor(log2(n - 1))
    ctlz = intrinsic(module, "llvm.ctlz.i64", I64, [I64, ir.IntType(1)])
    lead = b.call(ctlz, [b.sub(n, i64(1)), ir.Constant(ir.IntType(1), 0)])
    mid = b.add(lo, b.shl(i64(1), b.sub(i64(63), lead)))
    left = b.call(node, [g, lo, mid])
    right = b.call(node, [g, mid, hi])
    b.ret(A.add(left, right))

    entry = ir.Function(module, ir.FunctionType(F32, [PTR, I64, I64]), SQSUM)
    entry.attributes.add("nounwind")
    eb = ir.IRBuilder(entry.append_basic_block("entry"))
    eb.ret(eb.call(node, list(entry.args)))

    target = ir.Function(module, ir.FunctionType(PTR, [PTR, PTR]), HOOK_TARGET)
    hook = ir.GlobalVariable(module, PTR, HOOK)
    hook.global_constant = True
    hook.initializer = target
