"""The operation table: one entry per graph op, read by every phase.

An op is a string on a graph node (`ir/graph.py` Node.op). Its entry says, for each phase, what
that phase does with it, by name: the rule of its shape (ops/shapes.py), the adjoint rule of
autodiff (`autodiff/reverse.py` ADJOINTS) or why it has none, whether it is element-wise and
row-wise (the leaves kernel may compute it over every leaf's rows at once), the emitter family
on the host (`codegen/graph_emit.py`) and on the GPU (`codegen/gpu_nodes.py`) or the refusal a
GPU role gets without one, and where the NumPy reference of the tests evaluates it. The ops a
user calls by name are in BUILTINS: how each is called and what it does, for messages and the
editor, and the graph ops it lowers to.

Data only: no phase is imported here, so the checker (`alpha check`) reads it without llvmlite.
tests/test_op_table.py checks that every name here resolves in its phase, and that every op a
built system contains has an entry.
"""

from __future__ import annotations

from dataclasses import dataclass

# -- adjoints that are not a rule of autodiff ------------------------------------------------
#: a node with no inputs: reverse mode stops there (a parameter's gradient is read there)
LEAF = "leaf"
#: no adjoint: an input of the step (labels), or a loss, whose adjoint op autodiff seeds
NOT_DIFFERENTIABLE = "not differentiable"
#: made by autodiff as some op's adjoint, never itself differentiated
IS_ADJOINT = "is itself an adjoint"
NO_ADJOINT_RULE = (LEAF, NOT_DIFFERENTIABLE, IS_ADJOINT)

# -- the NumPy reference of the tests ---------------------------------------------------------
#: tests/reference.py `evaluate` computes it in its own branch
REF_EVALUATE = "evaluate"
#: tests/reference_layers.py `LAYER[op]` computes it
REF_LAYERS = "layers"

# -- the GPU ----------------------------------------------------------------------------------
#: no GPU body: a GPU role with this op live is refused by this name (plan/pairing_check.py)
GPU_REFUSAL = "unsupported-on-target"


@dataclass(frozen=True, slots=True)
class Op:
    """What every phase does with one graph op."""

    name: str
    arity: int  # inputs of the node
    shape: str  # a rule of ops/shapes.py RULES
    adjoint: str  # a key of autodiff/reverse.py ADJOINTS, or one of NO_ADJOINT_RULE
    host: str  # the emitter family of codegen/graph_emit.py (GraphEmitter.FAMILIES)
    gpu: str  # the body family of codegen/gpu_nodes.py (NodeBodies.FAMILIES), or GPU_REFUSAL
    reference: str  # REF_EVALUATE or REF_LAYERS
    elementwise: bool = False  # output j is a function of element j of each (broadcast) input
    row_wise: bool = False  # an example's rows are a function of its rows alone (leaves kernel)
    grad: str | None = None  # the op that carries its adjoint (the `unary` rule makes it)
    grad_reads: str = "x"  # what `grad` reads with the adjoint: the input (x) or output (y)
    operator: str | None = None  # the source operator that writes it (`a + b`)
    # how a large node's outputs split into tasks over blocks of its first axis
    # (codegen/outer_split.py): "axis" (work along its attribute axis, when not the first),
    # "matrices" (the last two axes), "swap" (two axes, neither the first), "kept" (a sum to a
    # shape that keeps the first axis); element-wise ops split by element; "" never splits
    outer: str = ""


@dataclass(frozen=True, slots=True)
class Builtin:
    """A function a user calls by name, as the checker and the editor know it."""

    name: str
    kind: str  # "unary" (one tensor, its op), "reduce" (axis:, keepdims:), "pairwise", "call"
    call: str  # how it is called
    summary: str  # what it does, in one line
    ops: tuple[str, ...]  # the graph ops it lowers to


def _ops(*entries: Op) -> dict[str, Op]:
    table: dict[str, Op] = {}
    for e in entries:
        assert e.name not in table, e.name
        table[e.name] = e
    return table


_E, _L = REF_EVALUATE, REF_LAYERS

OPS: dict[str, Op] = _ops(
    # what a step is given: bound to the kernel's arguments, never computed
    Op("param", 0, "given", LEAF, "bound", "bound", _E),
    Op("input_x", 0, "given", LEAF, "bound", "bound", _E, row_wise=True),
    Op("label_class", 0, "given", NOT_DIFFERENTIABLE, "bound", "bound", _E, row_wise=True),
    Op("label_reg", 0, "given", NOT_DIFFERENTIABLE, "bound", "bound", _E, row_wise=True),
    Op("const", 0, "scalar", LEAF, "const", "const", _E),
    Op("zeros", 0, "given", NOT_DIFFERENTIABLE, "zeros", "zeros", _E),
    # arithmetic, NumPy broadcasting
    Op("add", 2, "broadcast", "add", "arith", "arith", _E, True, True, operator="+"),
    Op("sub", 2, "broadcast", "sub", "arith", "arith", _E, True, True, operator="-"),
    Op("mul", 2, "broadcast", "mul", "arith", "arith", _E, True, True, operator="*"),
    Op("div", 2, "broadcast", "div", "arith", "arith", _E, True, True, operator="/"),
    Op("neg", 1, "same", "neg", "math", "math", _E, True, True, operator="-"),
    # the first activations (semantics/learners.py and mathfuncs.py) and their adjoints
    Op("relu", 1, "same", "unary", "math", "math", _E, True, True, grad="relu_grad"),
    Op("tanh", 1, "same", "unary", "math", "math", _E, True, True, "tanh_grad", "y"),
    Op("sigmoid", 1, "same", "unary", "math", "math", _E, True, True, "sigmoid_grad", "y"),
    Op("exp", 1, "same", "exp", "math", "math", _E, True, True),
    Op("log", 1, "same", "log", "math", "math", _E, True, True),
    Op("relu_grad", 2, "same", IS_ADJOINT, "math_grad", "math_grad", _E, True, True),
    Op("tanh_grad", 2, "same", IS_ADJOINT, "math_grad", "math_grad", _E, True, True),
    Op("sigmoid_grad", 2, "same", IS_ADJOINT, "math_grad", "math_grad", _E, True, True),
    # the activations of semantics/activations.py (UNARY, GRADS) and their adjoints
    Op("sqrt", 1, "same", "unary", "layer", "layer", _L, True, grad="sqrt_grad", grad_reads="y"),
    Op("abs", 1, "same", "unary", "layer", "layer", _L, True, grad="abs_grad"),
    Op("square", 1, "same", "unary", "layer", "layer", _L, True, grad="square_grad"),
    Op("gelu", 1, "same", "unary", "layer", "layer", _L, True, grad="gelu_grad"),
    Op("silu", 1, "same", "unary", "layer", "layer", _L, True, grad="silu_grad"),
    Op("sqrt_grad", 2, "same", IS_ADJOINT, "layer", "layer", _L, True),
    Op("abs_grad", 2, "same", IS_ADJOINT, "layer", "layer", _L, True),
    Op("square_grad", 2, "same", IS_ADJOINT, "layer", "layer", _L, True),
    Op("gelu_grad", 2, "same", IS_ADJOINT, "layer", "layer", _L, True),
    Op("silu_grad", 2, "same", IS_ADJOINT, "layer", "layer", _L, True),
    Op("maximum", 2, "broadcast", "pick", "layer", "layer", _L, True),
    Op("minimum", 2, "broadcast", "pick", "layer", "layer", _L, True),
    Op("pick_grad", 3, "broadcast", IS_ADJOINT, "layer", "layer", _L, True),
    # products and moves
    Op("matmul", 2, "matmul", "matmul", "matmul", "matmul", _E, row_wise=True, operator="@"),
    Op("bmatmul", 2, "bmatmul", "bmatmul", "layer", "layer", _L, operator="@", outer="matrices"),
    Op("transpose", 1, "transpose", "transpose", "transpose", "transpose", _E, outer="matrices"),
    Op("swap_axes", 1, "swap_axes", "swap_axes", "layer", "layer", _L, outer="swap"),
    Op("reshape", 1, "given", "reshape", "layer", "layer", _L, row_wise=True),
    Op("slice", 1, "given", "slice", "layer", "layer", _L),
    Op("slice_grad", 1, "given", IS_ADJOINT, "layer", "layer", _L),
    Op("embed", 2, "embed", "embed", "layer", "layer", _L),
    Op("embed_grad", 2, "given", IS_ADJOINT, "layer", "layer", _L),
    # sums from +0.0 in row-major order, and their adjoint's spread
    Op("sum", 1, "reduce_axis", "reduce", "reduce", "reduce", _E, outer="axis"),
    Op("mean", 1, "reduce_axis", "reduce", "reduce", "reduce", _E, outer="axis"),
    Op("reduce_to", 1, "given", IS_ADJOINT, "reduce", "reduce", _E, outer="kept"),
    Op("broadcast", 1, "given", IS_ADJOINT, "broadcast", "broadcast", _E, outer="axis"),
    Op("max", 1, "reduce_axis", "extreme", "layer", "extreme", _L, grad="max_grad"),
    Op("min", 1, "reduce_axis", "extreme", "layer", "extreme", _L, grad="min_grad"),
    Op("max_grad", 2, "same", IS_ADJOINT, "layer", "extreme", _L),
    Op("min_grad", 2, "same", IS_ADJOINT, "layer", "extreme", _L),
    # along an axis
    Op("softmax", 1, "same", "softmax", "layer", "layer", _L, outer="axis"),
    Op("log_softmax", 1, "same", "log_softmax", "layer", "layer", _L, outer="axis"),
    Op("causal_mask", 1, "same", "causal_mask", "layer", "layer", _L, outer="matrices"),
    Op("dropout", 1, "same", "dropout", "layer", "layer", _L),
    # losses, per example (training_step seeds the adjoint with `grad`)
    Op("xent", 2, "rows", NOT_DIFFERENTIABLE, "xent", "xent", _E, row_wise=True, grad="xent_grad"),
    Op("xent_grad", 2, "same", IS_ADJOINT, "xent", "xent", _E, row_wise=True),
    Op("mse", 2, "rows", NOT_DIFFERENTIABLE, "mse", "mse", _E, row_wise=True, grad="mse_grad"),
    Op("mse_grad", 2, "same", IS_ADJOINT, "mse", "mse", _E, row_wise=True),
    Op("sigmoid_xent", 2, "rows", NOT_DIFFERENTIABLE, "loss", "loss", _L, grad="sigmoid_xent_grad"),
    Op("sigmoid_xent_grad", 2, "same", IS_ADJOINT, "loss", "loss", _L),
    Op("xent_smooth", 2, "rows", NOT_DIFFERENTIABLE, "loss", "loss", _L, grad="xent_smooth_grad"),
    Op("xent_smooth_grad", 2, "same", IS_ADJOINT, "loss", "loss", _L),
    # images f32[B, C, H, W] (ir/conv.py's windows)
    Op("conv2d", 2, "conv2d", "conv2d", "conv", "conv", _L),
    Op("conv2d_dx", 2, "given", IS_ADJOINT, "conv", "conv", _L),
    Op("conv2d_dw", 2, "given", IS_ADJOINT, "conv", "conv", _L),
    Op("max_pool", 1, "pool", "max_pool", "conv", "conv", _L, outer="matrices"),
    Op("max_pool_grad", 2, "same", IS_ADJOINT, "conv", "conv", _L, outer="matrices"),
    Op("avg_pool", 1, "pool", "avg_pool", "conv", "conv", _L, outer="matrices"),
    Op("avg_pool_grad", 1, "given", IS_ADJOINT, "conv", "conv", _L, outer="matrices"),
)


def _builtins(*entries: Builtin) -> dict[str, Builtin]:
    table: dict[str, Builtin] = {}
    for e in entries:
        assert e.name not in table and all(op in OPS for op in e.ops), e.name
        table[e.name] = e
    return table


def _unary(name: str, summary: str) -> Builtin:
    return Builtin(name, "unary", f"{name}(t)", summary, (name,))


def _reduce(name: str, summary: str) -> Builtin:
    return Builtin(name, "reduce", f"{name}(t, axis: int, keepdims: bool)", summary, (name,))


# in the order the editor lists them: the unary functions, the reductions, then the others
BUILTINS: dict[str, Builtin] = _builtins(
    _unary("relu", "t > 0 ? t : 0, elementwise"),
    _unary("tanh", "the compiler's tanh recipe, elementwise (within 3 ulp)"),
    _unary("sigmoid", "1 / (1 + exp(-t)), elementwise (within 3 ulp)"),
    _unary("exp", "the compiler's exp recipe, elementwise (within 2 ulp)"),
    _unary("log", "the compiler's log recipe, elementwise (within 2 ulp)"),
    _unary("sqrt", "the correctly rounded square root, elementwise"),
    _unary("abs", "|t|, elementwise"),
    _unary("square", "t·t, elementwise"),
    _unary("gelu", "t·(1 + tanh(sqrt(2/π)(t + 0.044715 t³)))/2, elementwise (the tanh form)"),
    _unary("silu", "t·sigmoid(t), elementwise"),
    _reduce("sum", "the sum from +0.0 in row-major order, of all of t or over `axis:`"),
    _reduce("mean", "the sum divided by the count, of all of t or over `axis:`"),
    _reduce("max", "the largest element, of all of t or along `axis:`"),
    _reduce("min", "the smallest element, of all of t or along `axis:`"),
    Builtin(
        "maximum",
        "pairwise",
        "maximum(a, b)",
        "a > b ? a : b, elementwise with broadcasting",
        ("maximum",),
    ),
    Builtin(
        "minimum",
        "pairwise",
        "minimum(a, b)",
        "a < b ? a : b, elementwise with broadcasting",
        ("minimum",),
    ),
    Builtin(
        "clamp",
        "call",
        "clamp(t, low, high)",
        "minimum(maximum(t, low), high), elementwise",
        ("maximum", "minimum"),
    ),
    Builtin(
        "softmax",
        "call",
        "softmax(t, axis: k)",
        "exp(t - m) / Σ exp(t - m) along the axis, m the axis's maximum",
        ("softmax",),
    ),
    Builtin(
        "log_softmax",
        "call",
        "log_softmax(t, axis: k)",
        "(t - m) - log Σ exp(t - m) along the axis",
        ("log_softmax",),
    ),
    Builtin(
        "reshape",
        "call",
        "reshape(t, D1, ..., Dn)",
        "the same elements in row-major order, another static shape (B first)",
        ("reshape",),
    ),
    Builtin(
        "transpose",
        "call",
        "transpose(t) or transpose(t, a, b)",
        "the last two axes swapped (t.T), or axes a and b",
        ("transpose", "swap_axes"),
    ),
    Builtin(
        "causal_mask",
        "call",
        "causal_mask(t)",
        "position [.., r, c] kept where c <= r, else -inf (before a softmax)",
        ("causal_mask",),
    ),
    Builtin(
        "embed",
        "call",
        "embed(table, tokens)",
        "row token of the table for every token of the input (clamped to its rows)",
        ("embed",),
    ),
    Builtin(
        "dropout",
        "call",
        "dropout(t, rate: p, seed: s)",
        "in training, each element kept with probability 1 - rate and scaled by "
        "1 / (1 - rate); a pure function of (seed, round, example, element); none in evaluation",
        ("dropout",),
    ),
    Builtin(
        "slice",
        "call",
        "slice(t, axis: k, start: a, stop: b)",
        "the elements start..stop-1 along the axis",
        ("slice",),
    ),
    Builtin(
        "conv2d",
        "call",
        "conv2d(images, kernels, stride: s, padding: p)",
        "the 2-D convolution of images [B, C, H, W] with kernels [O, C, KH, KW]",
        ("conv2d",),
    ),
    Builtin(
        "max_pool",
        "call",
        "max_pool(images, size: k, stride: s)",
        "the maximum of each size x size window, moved by stride",
        ("max_pool",),
    ),
    Builtin(
        "avg_pool",
        "call",
        "avg_pool(images, size: k, stride: s)",
        "the mean of each size x size window, moved by stride",
        ("avg_pool",),
    ),
)


# -- queries ----------------------------------------------------------------------------------


def op(name: str) -> Op:
    """The entry of op `name` (KeyError for an op no phase knows)."""
    return OPS[name]


def ops_where(**fields: object) -> tuple[str, ...]:
    """The ops whose entries have these field values, in table order."""
    return tuple(
        name
        for name, e in OPS.items()
        if all(getattr(e, field) == value for field, value in fields.items())
    )


def builtins_of(kind: str) -> tuple[str, ...]:
    """The built-ins of one kind, in table order."""
    return tuple(name for name, b in BUILTINS.items() if b.kind == kind)


#: every op a GPU role computes (bound and constant nodes included); any other is refused
GPU_SUPPORTED = frozenset(name for name, e in OPS.items() if e.gpu != GPU_REFUSAL)
#: operations computed over the rows of every leaf at once by the leaves kernel
ROW_WISE = frozenset(ops_where(row_wise=True))
#: nodes bound to a kernel's arguments (parameters, inputs, labels)
BOUND = ops_where(host="bound")
#: `a + b` and the other element-wise operators of two tensors, to their ops
BINARY_OPERATORS = {
    e.operator: name
    for name, e in OPS.items()
    if e.operator is not None and e.elementwise and e.arity == 2
}
