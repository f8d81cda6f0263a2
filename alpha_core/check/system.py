"""Check one `system` declaration and lower it to a Program."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from alpha_core.check import arguments as A
from alpha_core.check import block_params
from alpha_core.check.builtins import REDUCE
from alpha_core.check.calls import HANDLERS
from alpha_core.check.context import CheckContext, show_shape
from alpha_core.check.data_source import ReadFile, check_data
from alpha_core.check.expressions import Binding, ExprLowering, declared_shape, parameter_shape
from alpha_core.check.init_check import INITS as INITS  # re-exported: editors
from alpha_core.check.init_check import Files, check_init
from alpha_core.check.learner_check import LEARNERS as LEARNERS  # re-exported: editors
from alpha_core.check.learner_check import check_learner
from alpha_core.check.program import ARITHMETICS, UNFUSED, LearnerSpec, ParamSpec, Program
from alpha_core.data.spec import DataSpec
from alpha_core.diagnostics import Related
from alpha_core.ir.graph import BATCH, Graph, GraphBuilder, GraphTooLarge, size
from alpha_core.support.span import Span
from alpha_core.syntax import ast
from alpha_core.syntax.shift import node_fields
from alpha_core.syntax.words import DEVICE_WORDS, device_word

ITEM_WORDS = {
    ast.DataItem: "data",
    ast.BatchItem: "batch",
    ast.FnItem: "fn model",
    ast.LossItem: "loss",
    ast.LearnerItem: "learner",
    ast.StepsItem: "steps",
    ast.ArithmeticItem: "arithmetic",
}
LOSSES = ("softmax_cross_entropy", "mse", "sigmoid_cross_entropy")
# the grammar's NAME: every word the tree holds is one of these in the declaration's text
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
RUNTIME_U32 = 2**32 - 1  # counts the runtime holds in 32 bits
# The largest system `alpha build` builds (system-too-large; docs/language.md, "Limits"): its
# time and memory grow linearly with both counts, and a system at either limit builds in under
# a minute and a gigabyte (docs/performance.md, "Build time against the number of tensors").
MAX_PARAM_TENSORS = 10_000  # `param` items of one system
MAX_MODEL_NODES = 25_000  # operations of the model and its loss, as the check lowers them
PARAM_FLOATS = (1 << 62) - 1  # all parameters together; their bytes are counted in 64 bits


@dataclass
class _Items:
    """A system's items by kind, each kind that may appear once held once."""

    data: ast.DataItem | None = None
    batch: ast.BatchItem | None = None
    loss: ast.LossItem | None = None
    learner: ast.LearnerItem | None = None
    steps: ast.StepsItem | None = None
    arithmetic: ast.ArithmeticItem | None = None
    params: list[ast.ParamItem | ast.ParamArrayItem] = field(default_factory=list)
    fns: dict[str, ast.FnItem] = field(default_factory=dict)


_SINGLE = {
    ast.DataItem: "data",
    ast.BatchItem: "batch",
    ast.LossItem: "loss",
    ast.LearnerItem: "learner",
    ast.StepsItem: "steps",
    ast.ArithmeticItem: "arithmetic",
}


def _collect(decl: ast.Decl, ctx: CheckContext) -> _Items:
    items = _Items()
    names: dict[str, Span] = {}
    for item in decl.items:
        if isinstance(item, ast.ParamItem | ast.ParamArrayItem | ast.FnItem | ast.DataItem):
            if item.name in names:
                ctx.refuse(
                    "duplicate-name",
                    f"`{item.name}` is declared twice",
                    item.name_span,
                    related=(Related(names[item.name], "first declared here"),),
                )
                continue
            names[item.name] = item.name_span
        if isinstance(item, ast.ParamItem | ast.ParamArrayItem):
            items.params.append(item)
        elif isinstance(item, ast.FnItem):
            if item.name in HANDLERS or item.name in REDUCE:
                # a call resolves to the built-in first: this function would never be called
                ctx.refuse(
                    "duplicate-name",
                    f"`{item.name}` is a built-in function; a function of that name would never "
                    "be called",
                    item.name_span,
                    help=f"rename it, for example `my_{item.name}`",
                )
                continue
            items.fns[item.name] = item
        elif isinstance(item, tuple(_SINGLE)):
            field_name = _SINGLE[type(item)]
            first = getattr(items, field_name)
            if first is not None:
                ctx.refuse(
                    "duplicate-name",
                    f"a second `{ITEM_WORDS[type(item)]}` item",
                    item.span,  # type: ignore[attr-defined]
                    related=(Related(first.span, "first here"),),
                )
            else:
                setattr(items, field_name, item)
    return items


def check_system(
    decl: ast.Decl, ctx: CheckContext, read_file: ReadFile, base_dir: str, text: str | None = None
) -> Program | None:
    """`text`, the declaration's source if the caller has it, lets the walk for device words
    be skipped when no word of it is one (the walk visited every node of every system)."""
    if text is None or not DEVICE_WORDS.isdisjoint(w.lower() for w in _WORD.findall(text)):
        _device_words(decl, ctx)
    items = _collect(decl, ctx)
    tensors = block_params.tensor_count(items.params)  # each block's members counted
    if tensors > MAX_PARAM_TENSORS:  # refused before anything is lowered
        ctx.refuse(
            "system-too-large",
            f"system `{decl.name}` declares {tensors:,} parameter tensors; at most "
            f"{MAX_PARAM_TENSORS:,} can be built",
            block_params.nth_tensor_span(items.params, MAX_PARAM_TENSORS),
            help="concatenate small tensors into larger ones (one matrix instead of many vectors)",
        )
        return None
    errors_before = len(ctx.diagnostics)
    data = None
    if items.data is None:
        _missing(ctx, decl, "data", 'data train: table("data.csv", features: 4, classes: 3)')
    else:
        data = check_data(items.data, ctx, read_file, base_dir)
    batch = items.batch
    leaves_ok = _batch(batch, ctx, decl)
    param_specs = _params(items.params, ctx, Files(read_file, base_dir))
    learner = _learner(items.learner, ctx, decl, items.steps)
    steps = items.steps
    if steps is None:
        _missing(ctx, decl, "steps", "steps 100")
    elif not 1 <= steps.count <= RUNTIME_U32:
        ctx.refuse("bad-argument", f"`steps` must be from 1 to {RUNTIME_U32:,}", steps.count_span)
    arithmetic = _arithmetic(items.arithmetic, ctx)
    if not items.params:
        _missing(ctx, decl, "param", "param w: f32[4, 3] = normal(0.0, 0.1, seed: 1)")
    try:
        lowered = _model(items.fns, items.loss, param_specs, items.params, data, ctx, decl)
    except GraphTooLarge:  # raised as the limit is passed: functions may call each other often
        model = items.fns.get("model")
        ctx.refuse(
            "system-too-large",
            f"the model of system `{decl.name}` lowers to more than {MAX_MODEL_NODES:,} "
            "operations, the most one system can have",
            model.name_span if model is not None else decl.name_span,
            help="functions are inlined: a function calling another twice doubles its "
            "operations at each level",
        )
        return None
    if len(ctx.diagnostics) > errors_before or not leaves_ok:
        return None
    if data is None or learner is None or steps is None or lowered is None or batch is None:
        return None
    graph, output, loss, smoothing, forward_output = lowered
    shuffle_seed = None
    if batch.shuffle is not None:
        bound = A.bind(ctx, batch.shuffle, [A.Arg("seed", "int", low=0)])
        if bound is None:
            return None
        shuffle_seed = int(bound["seed"])
    return Program(
        decl.name,
        data,
        batch.size,
        batch.leaves,
        shuffle_seed,
        tuple(param_specs),
        graph,
        output,
        loss,
        learner,
        steps.count,
        smoothing=smoothing,
        forward_output=forward_output,
        arithmetic=arithmetic,
    )


def _arithmetic(item: ast.ArithmeticItem | None, ctx: CheckContext) -> str:
    """`fused` or `unfused` (the default, and what a refused word leaves)."""
    if item is None:
        return UNFUSED
    if item.word not in ARITHMETICS:
        ctx.unknown("arithmetic", item.word, item.word_span, ARITHMETICS)
        return UNFUSED
    return item.word


def _missing(ctx: CheckContext, decl: ast.Decl, what: str, example: str) -> None:
    if any(isinstance(i, ast.ErrorItem) for i in decl.items):
        return  # the item may be the one that did not parse: one refusal is enough
    ctx.refuse(
        "missing-item",
        f"system `{decl.name}` has no `{what}` item",
        decl.name_span,
        help=f"add, for example, `{example}`",
    )


_NAMED = (
    ast.ParamItem,
    ast.FnItem,
    ast.FnParam,
    ast.Let,
    ast.DataItem,
    ast.ParamArrayItem,
    ast.MemberName,
    ast.Member,
    ast.ForLoop,
    ast.Assign,
)


def _device_words(decl: ast.Decl, ctx: CheckContext) -> None:
    """No device, host, address or rank word anywhere inside a system."""
    seen: list[tuple[str, Span]] = []

    # Preorder, fields in declaration order: the order of the refusals. Only the fields that
    # may hold nodes are entered (node_fields), never spans, strings or numbers.
    def visit(node: object) -> None:
        if isinstance(node, tuple):
            for n in node:
                visit(n)
            return
        if isinstance(node, ast.Name):
            if device_word(node.id):
                seen.append((node.id, node.span))
        elif isinstance(node, ast.Kwarg):
            if device_word(node.name):
                seen.append((node.name, node.name_span))
        elif isinstance(node, ast.Call):
            if device_word(node.func):
                seen.append((node.func, node.func_span))
        elif isinstance(node, _NAMED) and device_word(node.name):
            seen.append((node.name, node.name_span))
        if hasattr(node, "__dataclass_fields__"):
            for name in node_fields(type(node))[1]:
                child = getattr(node, name)
                if child is not None:
                    visit(child)

    visit(decl.items)
    if device_word(decl.name):
        seen.append((decl.name, decl.name_span))
    for word, span in seen:
        ctx.refuse(
            "device-in-semantics",
            f"`{word}` names a device, host, address or rank inside system `{decl.name}`",
            span,
            help="placement belongs to a plan, a pairing or the deployment inputs",
        )


def _batch(item: ast.BatchItem | None, ctx: CheckContext, decl: ast.Decl) -> bool:
    if item is None:
        _missing(ctx, decl, "batch", "batch 64 leaves 8")
        return False
    if not (1 <= item.size <= RUNTIME_U32 and 1 <= item.leaves <= RUNTIME_U32):
        ctx.refuse(
            "bad-argument", f"`batch` and `leaves` must be from 1 to {RUNTIME_U32:,}", item.span
        )
        return False
    if item.size % item.leaves:
        ctx.refuse(
            "batch-not-divisible",
            f"a batch of {item.size} does not cut into {item.leaves} equal leaves",
            item.leaves_span,
            help=f"{item.size} examples make leaves of equal size for leaves in "
            # the help shows 60 characters: small divisors, found in bounded time
            + ", ".join(str(d) for d in range(1, min(item.size, 10_000) + 1) if item.size % d == 0)[
                :60
            ],
        )
        return False
    return True


def _params(
    items: list[ast.ParamItem | ast.ParamArrayItem], ctx: CheckContext, files: Files
) -> list[ParamSpec]:
    specs: list[ParamSpec] = []
    offset = 0
    for p in items:
        if isinstance(p, ast.ParamArrayItem):  # each block's members, block 0's first
            expanded = block_params.array_specs(p, ctx, files, offset, PARAM_FLOATS)
            specs += expanded
            offset += sum(s.count for s in expanded)
            continue
        shape = parameter_shape(ctx, p.type, f"parameter `{p.name}` is", f"parameter `{p.name}`")
        if shape is None:
            continue
        if offset + size(shape) > PARAM_FLOATS:
            ctx.refuse(
                "shape-mismatch",
                f"parameter `{p.name}` brings the parameters over {PARAM_FLOATS:,} floats; "
                "their bytes must fit in 64 bits",
                p.type.span,
            )
            continue
        init = check_init(p.init, shape, ctx, files)
        if init is None:
            continue
        specs.append(ParamSpec(p.name, shape, offset, size(shape), init, p.span))
        offset += size(shape)
    if any(isinstance(p, ast.ParamArrayItem) for p in items):
        block_params.seed_collisions(specs, ctx)
    return specs


def _learner(
    item: ast.LearnerItem | None, ctx: CheckContext, decl: ast.Decl, steps: ast.StepsItem | None
) -> LearnerSpec | None:
    if item is None:
        _missing(ctx, decl, "learner", "learner adam(lr: 0.001)")
        return None
    return check_learner(item, ctx, steps.count if steps is not None else None)


def _model(
    fns: dict[str, ast.FnItem],
    loss: ast.LossItem | None,
    specs: list[ParamSpec],
    params: list[ast.ParamItem | ast.ParamArrayItem],
    data: DataSpec | None,
    ctx: CheckContext,
    decl: ast.Decl,
) -> tuple[Graph, int, str, float, int | None] | None:
    model = fns.get("model")
    if model is None:
        _missing(ctx, decl, "fn model", "fn model(x: f32[B, 4]) -> f32[B, 3] { ... }")
        return None
    if loss is None:
        _missing(ctx, decl, "loss", "loss softmax_cross_entropy(model(x), y)")
        return None
    b = GraphBuilder(limit=MAX_MODEL_NODES)
    lower = ExprLowering(ctx, b, fns)
    env: dict[str, Binding] = {}
    by_name = {p.name: p for p in params}
    blocks = block_params.block_table(params)
    for p in params:  # a parameter refused where declared still binds its name, poisoned
        env[p.name] = Binding(-1, p.name_span, blocks.arrays.get(p.name))
    for index, spec in enumerate(specs):
        node = b.add("param", (), spec.shape, (("index", index),))
        if not blocks.bind(spec.name, node):  # a block's member is found through its array
            env[spec.name] = Binding(node, by_name[spec.name].name_span)
    lower.system_names = dict(env)
    features = data.features if data is not None else None
    if len(model.params) != 1:
        ctx.refuse(
            "bad-argument",
            "`model` takes one argument, the examples `x: f32[B, n]`",
            model.name_span,
        )
        return None
    xparam = model.params[0]
    xtype = xparam.type
    xshape = declared_shape(xtype) if isinstance(xtype, ast.TensorType) else None
    if xshape is None or len(xshape) < 2 or xshape[0] != BATCH or BATCH in xshape[1:]:
        ctx.refuse(
            "shape-mismatch",
            "the model's argument must be `f32[B, features]` (or the features as an image, "
            "`f32[B, C, H, W]`)",
            xparam.type.span,
        )
        return None
    per_example = size(xshape[1:])
    if features is not None and per_example != features:
        ctx.refuse(
            "shape-mismatch",
            f"the model takes {per_example} features but the data has {features}",
            xtype.dims[1].span
            if len(xshape) == 2 and isinstance(xtype, ast.TensorType)
            else xtype.span,
        )
        return None
    x = b.add("input_x", (), xshape)
    env["x"] = Binding(x, xparam.name_span)
    call = loss.call
    if call.func not in LOSSES:
        ctx.unknown("loss", call.func, call.func_span, LOSSES)
        return None
    smoothing = 0.0
    allowed = ("smoothing",) if call.func == "softmax_cross_entropy" else ()
    if len(call.args) != 2 or any(k.name not in allowed for k in call.kwargs):
        ctx.refuse(
            "bad-argument",
            f"`{call.func}` takes the model's output and `y`"
            + (" and `smoothing:`" if allowed else ""),
            call.span,
        )
        return None
    if call.kwargs:
        bound = A.bind(
            ctx,
            replace(call, args=()),
            [A.Arg("smoothing", "float", 0.0, low=0.0, high=1.0, below=True)],
        )
        if bound is None:
            return None
        smoothing = float(bound["smoothing"])
    pred_e, label_e = call.args
    if not (isinstance(label_e, ast.Name) and label_e.id == "y"):
        ctx.refuse(
            "bad-argument", f"the second argument of `{call.func}` is the labels `y`", label_e.span
        )
        return None
    if not (isinstance(pred_e, ast.Call) and pred_e.func == "model"):
        ctx.refuse("bad-argument", "the loss is taken of `model(x)`", pred_e.span)
        return None
    out = lower.inline(model, pred_e, {**env, "x": Binding(x, xparam.name_span)})
    if out is None:
        return None
    ctx.types[pred_e.span] = b.shape(out)
    oshape = b.shape(out)
    if data is not None:
        want_kind = "regression" if call.func == "mse" else "class"
        if data.label_kind != want_kind:
            needs = "class labels" if want_kind == "class" else "regression targets"
            has = "classes" if data.label_kind == "class" else "targets"
            ctx.refuse(
                "type-mismatch",
                f"`{call.func}` needs {needs} but the data has {has}",
                call.func_span,
            )
            return None
        labels = (
            (BATCH, data.outputs) if data.positions == 1 else (BATCH, data.positions, data.outputs)
        )
        if call.func == "sigmoid_cross_entropy":
            if data.outputs != 2 or data.positions != 1:
                ctx.refuse(
                    "type-mismatch",
                    f"`sigmoid_cross_entropy` needs two classes but the data has {data.outputs}",
                    call.func_span,
                    related=_label_count(decl),
                )
                return None
            labels = (BATCH, 1)  # one logit: the log-odds of class 1
        if oshape != labels:
            ctx.refuse(
                "shape-mismatch",
                f"the model gives {show_shape(oshape)} but the data's labels need "
                f"{show_shape(labels)}",
                pred_e.span,
                related=_label_count(decl),
            )
            return None
    forward = None
    if call.func == "sigmoid_cross_entropy":  # evaluated as the scores [0, z] of classes 0, 1
        forward = b.add("slice_grad", (out,), (BATCH, 2), (("axis", 1), ("start", 1)))
    return b.graph(), out, call.func, smoothing, forward


def _label_count(decl: ast.Decl) -> tuple[Related, ...]:
    """Where the data says how many classes or targets it has: the other half of a
    mismatch between the model's outputs and the labels."""
    for item in decl.items:
        if isinstance(item, ast.DataItem):
            for key in ("classes", "targets"):
                kw = item.source.kwarg(key)
                if kw is not None:
                    return (Related(kw.span, f"the data declares {key} here"),)
    return ()
