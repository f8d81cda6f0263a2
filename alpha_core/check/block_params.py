"""A block array's parameters: `param blocks[N] { members }` checked and expanded, block by
block, into ordinary parameter tensors named `blocks[i].m` (docs/language.md "Block arrays").

The expansion is the whole meaning of a block array: what follows the check (autodiff, the
kernels, the runtime, checkpoints, plans that partition parameters) sees N × members tensors
in this order, block 0's members first, exactly as if they were written out one by one. Their
initial values are those of the written-out declarations with these seeds: the k-th name of a
member declaration (from 0) whose initialiser says `seed: s` has seed `s + k` in block 0 and
`s + k + i·2^32` in block i. Every seed is an integer a written-out `param` may say, so the
block form and the written-out form with those seeds are one system but for the names.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace

from alpha_core.check.block_values import BlockArray, MemberInfo
from alpha_core.check.context import CheckContext, show_shape
from alpha_core.check.expressions import declared_shape, parameter_shape
from alpha_core.check.init_check import Files, check_init
from alpha_core.check.program import InitSpec, ParamSpec
from alpha_core.diagnostics import Related
from alpha_core.ir.graph import size
from alpha_core.support.span import Span
from alpha_core.syntax import ast

BLOCK_SEED_STRIDE = 1 << 32  # block i adds i·2^32 to each member's seed
MEMBER_SEEDS = 1 << 32  # a member's seed (declared, plus its place among its names) is below
RANDOM = ("normal", "uniform")  # the kinds that have a seed


def tensor_name(array: str, block: int, member: str) -> str:
    """The name of one member of one block: in captures, exports, `alpha inspect` and plans."""
    return f"{array}[{block}].{member}"


def tensor_count(items: list[ast.ParamItem | ast.ParamArrayItem]) -> int:
    """How many parameter tensors the items declare, each block's members counted."""
    return sum(1 if isinstance(p, ast.ParamItem) else max(0, p.count) * _names(p) for p in items)


def nth_tensor_span(items: list[ast.ParamItem | ast.ParamArrayItem], n: int) -> Span:
    """Where the n-th tensor (from 0) is declared: a `param`'s name or a member's."""
    for p in items:
        if isinstance(p, ast.ParamItem):
            if n == 0:
                return p.name_span
            n -= 1
            continue
        per_block = _names(p)
        if n < max(0, p.count) * per_block:
            k = n % per_block
            return [m for d in p.members for m in d.names][k].name_span
        n -= max(0, p.count) * per_block
    return items[-1].name_span


def _names(item: ast.ParamArrayItem) -> int:
    return sum(len(d.names) for d in item.members)


@dataclass
class BlockTable:
    """The block arrays of a system and, for each of their tensors, its array, block and
    member: how the model's lowering finds the graph node of `blocks[i].m`."""

    arrays: dict[str, BlockArray] = field(default_factory=dict)
    tensors: dict[str, tuple[BlockArray, int, str]] = field(default_factory=dict)

    def bind(self, tensor: str, node: int) -> bool:
        """Records the graph node of a block's member; False for a tensor of no block."""
        found = self.tensors.get(tensor)
        if found is None:
            return False
        array, block, member = found
        array.nodes[block][member] = node
        return True


def block_table(items: list[ast.ParamItem | ast.ParamArrayItem]) -> BlockTable:
    """The arrays as declared (a member refused where declared has no shape, and its tensors
    no node: a use of it is refused once, there)."""
    table = BlockTable()
    for item in items:
        if not isinstance(item, ast.ParamArrayItem):
            continue
        array = BlockArray(item.name, item.name_span, max(0, item.count))
        for decl in item.members:
            shape = declared_shape(decl.type)
            for m in decl.names:
                array.members.setdefault(m.name, MemberInfo(shape, m.name_span))
        array.nodes = [{} for _ in range(array.count)]
        for block in range(array.count):
            for member in array.members:
                table.tensors[tensor_name(item.name, block, member)] = (array, block, member)
        table.arrays[item.name] = array
    return table


def array_specs(
    item: ast.ParamArrayItem, ctx: CheckContext, files: Files, offset: int, limit: int
) -> list[ParamSpec]:
    """The tensors of every block, block 0's members first, from flat offset `offset`; none
    when the array or a member is refused (each refusal given once, where it is written)."""
    errors = len(ctx.diagnostics)
    if item.count < 1:
        ctx.refuse("bad-argument", "a block array holds at least one block", item.count_span)
    members = _members(item, ctx, files)
    if len(ctx.diagnostics) > errors:
        return []
    per_block = sum(size(shape) for _, shape, _, _ in members)
    if offset + per_block * item.count > limit:
        ctx.refuse(
            "shape-mismatch",
            f"block array `{item.name}` brings the parameters over {limit:,} floats; their "
            "bytes must fit in 64 bits",
            item.count_span,
        )
        return []
    specs: list[ParamSpec] = []
    for block in range(item.count):
        for name, shape, init, decl in members:
            if init.kind in RANDOM:
                init = replace(init, seed=init.seed + block * BLOCK_SEED_STRIDE)
            n = size(shape)
            specs.append(
                ParamSpec(tensor_name(item.name, block, name), shape, offset, n, init, decl)
            )
            offset += n
    return specs


Member = tuple[str, tuple[int, ...], InitSpec, Span]


def _members(item: ast.ParamArrayItem, ctx: CheckContext, files: Files) -> list[Member]:
    """Each member of one block in order: its name, shape, block 0's initialiser (InitSpec)
    and the span of its declaration."""
    out: list[Member] = []
    seen: dict[str, Span] = {}
    for decl in item.members:
        shape = parameter_shape(
            ctx, decl.type, f"members of `{item.name}` are", f"a member of `{item.name}`"
        )
        if shape is None:
            continue
        if isinstance(decl.init, ast.Call) and decl.init.func == "load":
            ctx.refuse(
                "bad-argument",
                "a block array's members are generated, not loaded: one `load` would give "
                "every block the same tensor",
                decl.init.func_span,
                help="write the loaded tensors out as `param` items, one per block",
            )
            continue
        init = check_init(decl.init, shape, ctx, files)
        if init is None:
            continue
        for k, m in enumerate(decl.names):
            if m.name in seen:
                ctx.refuse(
                    "duplicate-name",
                    f"`{m.name}` is a member of `{item.name}` twice",
                    m.name_span,
                    related=(Related(seen[m.name], "first declared here"),),
                )
                continue
            if m.name == "T":
                ctx.refuse(
                    "duplicate-name",
                    "a member may not be named `T`: `p.T` is the transpose",
                    m.name_span,
                )
                continue
            seen[m.name] = m.name_span
            mine = init
            if init.kind in RANDOM:
                if init.seed + k >= MEMBER_SEEDS:
                    ctx.refuse(
                        "bad-argument",
                        f"member `{m.name}` of `{item.name}` would have seed {init.seed + k:,}; "
                        f"a member's seed is below 2^32 = {MEMBER_SEEDS:,} (block i adds i·2^32)",
                        decl.init.span,
                    )
                    continue
                mine = replace(init, seed=init.seed + k)
            out.append((m.name, shape, mine, decl.span))
    return out


def seed_collisions(specs: list[ParamSpec], ctx: CheckContext) -> None:
    """A block's member whose seed is another tensor's: refused, once per pair of
    declarations. Two generated tensors of one seed start alike (one is the other scaled and
    shifted, element by element), which a grouped declaration (`wq, wk: ... seed: 3` takes
    seeds 3 and 4) makes an easy slip; plain `param`s keep the seeds they are given."""
    by_seed: dict[int, list[ParamSpec]] = defaultdict(list)
    for spec in specs:
        if spec.init.kind in RANDOM:
            by_seed[spec.init.seed].append(spec)
    told: set[tuple[Span, Span]] = set()
    for seed, alike in sorted(by_seed.items()):
        if len(alike) < 2 or not any("[" in s.name for s in alike):
            continue
        first, second = alike[0], alike[1]
        pair = (first.span, second.span)
        if pair in told:
            continue
        told.add(pair)
        ctx.refuse(
            "seed-collision",
            f"`{second.name}` and `{first.name}` are both generated from seed {seed:,}: they "
            f"would start alike ({show_shape(second.shape)}, {show_shape(first.shape)})",
            second.span,
            related=(Related(first.span, f"`{first.name}` is declared here"),),
            help="give each member declaration seeds of its own: `a, b: ... seed: s` takes "
            "s and s + 1, and block i adds i·2^32",
        )
