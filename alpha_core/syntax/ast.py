"""The syntax tree: frozen nodes, each with the span of the text it came from."""

from __future__ import annotations

from dataclasses import dataclass, field

from alpha_core.support.span import Span

# ---- expressions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Number:
    value: float
    text: str
    is_int: bool
    span: Span


@dataclass(frozen=True)
class String:
    value: str
    span: Span


@dataclass(frozen=True)
class Name:
    id: str
    span: Span


@dataclass(frozen=True)
class Kwarg:
    name: str
    name_span: Span
    value: Expr
    span: Span


@dataclass(frozen=True)
class Call:
    func: str
    func_span: Span
    args: tuple[Expr, ...]
    kwargs: tuple[Kwarg, ...]
    span: Span

    def kwarg(self, name: str) -> Kwarg | None:
        for kw in self.kwargs:
            if kw.name == name:
                return kw
        return None


@dataclass(frozen=True)
class BinOp:
    op: str  # one of + - * / @
    left: Expr
    right: Expr
    span: Span
    op_span: Span


@dataclass(frozen=True)
class Neg:
    operand: Expr
    span: Span


@dataclass(frozen=True)
class Index:
    """`blocks[i]`: one block of a block array; the index is known when the model is built."""

    value: Expr
    index: Expr
    span: Span


@dataclass(frozen=True)
class Member:
    """`blocks[i].wq`, `p.wq`: one member of one block."""

    value: Expr
    name: str
    name_span: Span
    span: Span


Expr = Number | String | Name | Call | BinOp | Neg | Index | Member

# ---- types ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dim:
    value: int | str  # a size, or a symbolic name such as B
    span: Span


@dataclass(frozen=True)
class TensorType:
    dtype: str
    dtype_span: Span
    dims: tuple[Dim, ...]
    span: Span


# ---- system items --------------------------------------------------------------------------


@dataclass(frozen=True)
class DataItem:
    name: str
    name_span: Span
    source: Call
    span: Span


@dataclass(frozen=True)
class BatchItem:
    size: int
    size_span: Span
    leaves: int
    leaves_span: Span
    shuffle: Call | None
    span: Span


@dataclass(frozen=True)
class ParamItem:
    name: str
    name_span: Span
    type: TensorType
    init: Name | Call
    span: Span


@dataclass(frozen=True)
class MemberName:
    """One name of a block array's member declaration (`wq` of `wq, wk: f32[4, 4] = ...`)."""

    name: str
    name_span: Span
    span: Span


@dataclass(frozen=True)
class MemberDecl:
    """`wq, wk: f32[D, D] = normal(0.0, 0.1, seed: 3)`: members declared alike."""

    names: tuple[MemberName, ...]
    type: TensorType
    init: Name | Call
    span: Span


@dataclass(frozen=True)
class ParamArrayItem:
    """`param blocks[N] { members }`: N blocks, each holding every member."""

    name: str
    name_span: Span
    count: int
    count_span: Span
    members: tuple[MemberDecl, ...]
    span: Span


@dataclass(frozen=True)
class BlockType:
    """The type of a function argument that is one block of the array named `array`."""

    array: str
    span: Span


@dataclass(frozen=True)
class FnParam:
    name: str
    name_span: Span
    type: TensorType | BlockType
    span: Span


@dataclass(frozen=True)
class Let:
    name: str
    name_span: Span
    value: Expr
    span: Span


@dataclass(frozen=True)
class Return:
    value: Expr
    span: Span


@dataclass(frozen=True)
class Assign:
    """`h = expr`: a new value of the same shape for a `let` or an argument."""

    name: str
    name_span: Span
    value: Expr
    span: Span


@dataclass(frozen=True)
class ForLoop:
    """`for i in 0..N { ... }`: the body repeated for i = 0 … N-1 when the model is built."""

    name: str
    name_span: Span
    start: int
    stop: int
    range_span: Span
    body: tuple[Stmt, ...]
    span: Span


Stmt = Let | Return | Assign | ForLoop


@dataclass(frozen=True)
class FnItem:
    name: str
    name_span: Span
    params: tuple[FnParam, ...]
    result: TensorType
    body: tuple[Stmt, ...]
    span: Span


@dataclass(frozen=True)
class LossItem:
    call: Call
    span: Span


@dataclass(frozen=True)
class LearnerItem:
    call: Call
    span: Span


@dataclass(frozen=True)
class StepsItem:
    count: int
    count_span: Span
    span: Span


@dataclass(frozen=True)
class ArithmeticItem:
    """`arithmetic fused` or `arithmetic unfused`: how a sum of products adds each term."""

    word: str
    word_span: Span
    span: Span


@dataclass(frozen=True)
class ErrorItem:
    """An item that did not parse; its diagnostic is reported beside the tree."""

    text: str
    span: Span


SystemItem = (
    DataItem
    | BatchItem
    | ParamItem
    | ParamArrayItem
    | FnItem
    | LossItem
    | LearnerItem
    | StepsItem
    | ArithmeticItem
)


# ---- declarations --------------------------------------------------------------------------


@dataclass(frozen=True)
class Decl:
    """A top-level declaration: `system NAME { ... }`, `plan NAME for S { ... }`, ...

    `items` are the body's parsed items in source order; ErrorItems stand where one failed.
    """

    kind: str  # system | plan | pairing | error
    name: str
    name_span: Span
    target: str | None  # the `for NAME` of a plan or pairing
    target_span: Span | None
    items: tuple[object, ...]
    span: Span
    body_span: Span


@dataclass(frozen=True)
class Module:
    decls: tuple[Decl, ...] = field(default_factory=tuple)

    def systems(self) -> list[Decl]:
        return [d for d in self.decls if d.kind == "system"]


# ---- plan items ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RoleDecl:
    name: str
    name_span: Span
    count: int | None  # a family `worker[4]`, or None for a singleton `hub`
    span: Span


@dataclass(frozen=True)
class RolesItem:
    roles: tuple[RoleDecl, ...]
    span: Span


@dataclass(frozen=True)
class TopologyItem:
    shape: Name | Call  # pair | star(hub) | hierarchy(fanout: k)
    span: Span


@dataclass(frozen=True)
class ComputeStmt:
    family: str
    family_span: Span
    what: str
    what_span: Span
    span: Span


@dataclass(frozen=True)
class CombineStmt:
    what: str
    what_span: Span
    order: str  # words joined by spaces: "canonical tree", "sequence", ...
    order_span: Span
    deliver: str
    deliver_span: Span
    span: Span


@dataclass(frozen=True)
class ApplyStmt:
    family: str
    family_span: Span
    span: Span


RoundStmt = ComputeStmt | CombineStmt | ApplyStmt


@dataclass(frozen=True)
class RoundItem:
    stmts: tuple[RoundStmt, ...]
    span: Span


@dataclass(frozen=True)
class ContractItem:
    kind: Name | Call  # exact | approximate(tolerance: x)
    span: Span


@dataclass(frozen=True)
class RoleRef:
    """`hub`, `worker[3]`, `worker[0..4]` (a half-open range) or `worker[*]`."""

    name: str
    name_span: Span
    index: int | None
    lo: int | None
    hi: int | None
    every: bool
    span: Span


@dataclass(frozen=True)
class LeafRange:
    role: RoleRef
    lo: int
    hi: int
    span: Span


@dataclass(frozen=True)
class LeavesItem:
    ranges: tuple[LeafRange, ...]
    span: Span


@dataclass(frozen=True)
class StateStmt:
    """`params replicated`, `optimizer partitioned over worker`, ..."""

    what: str
    what_span: Span
    mode: str
    mode_span: Span
    over: str | None
    over_span: Span | None
    span: Span


@dataclass(frozen=True)
class StateItem:
    stmts: tuple[StateStmt, ...]
    span: Span


@dataclass(frozen=True)
class CheckpointItem:
    every: int
    every_span: Span
    span: Span


PlanItem = (
    RolesItem | TopologyItem | RoundItem | ContractItem | LeavesItem | StateItem | CheckpointItem
)


# ---- pairing items -------------------------------------------------------------------------


@dataclass(frozen=True)
class PairingProp:
    """`host x86_64`, `gpu h200`, an amount: `memory 64 gib` (amount 64, value `gib`), or a
    count: `cores 8` (amount 8, value "")."""

    key: str
    key_span: Span
    value: str
    value_span: Span
    amount: int | None = None


@dataclass(frozen=True)
class PairingItem:
    role: RoleRef
    props: tuple[PairingProp, ...]
    span: Span
