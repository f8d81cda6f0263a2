"""What a checked system means: the facts codegen, the runtime and the faces build on."""

from __future__ import annotations

from dataclasses import dataclass, field

from alpha_core.data.spec import DataSpec
from alpha_core.ir.graph import Graph, Shape
from alpha_core.semantics.learners import SCALARS, SLOTS
from alpha_core.semantics.schedules import ScheduleSpec
from alpha_core.support.span import Span


@dataclass(frozen=True)
class LoadedTensor:
    """The values of a `load` initialiser, read at check time: the file's SHA-256 and the
    tensor's name in it are its identity; the values (little-endian float32, the parameter's
    count) go into the executable."""

    path: str  # as resolved against the source's folder (not part of the identity)
    sha256: str  # of the whole file
    key: str  # the tensor's name in the file
    values: bytes = field(compare=False, repr=False)

    def text(self) -> str:
        return f" load sha256={self.sha256} key={self.key!r}"


@dataclass(frozen=True)
class InitSpec:
    kind: str  # zeros | constant | normal | uniform | load
    a: float = 0.0  # normal: mean; uniform: low; constant: the value
    b: float = 0.0  # normal: std; uniform: high
    seed: int = 0
    # kind load: the tensor (outside the repr, so the other kinds keep the identity they had)
    loaded: LoadedTensor | None = field(default=None, repr=False)


@dataclass(frozen=True)
class ParamSpec:
    name: str
    shape: Shape
    offset: int  # first float in the flat parameter array
    count: int
    init: InitSpec
    span: Span


@dataclass(frozen=True)
class LearnerSpec:
    kind: str  # sgd | momentum | adam | adamw
    hyper: tuple[tuple[str, float], ...]
    schedule: ScheduleSpec | None = None  # the learning rate as a function of the round
    clip: float | None = None  # the global-norm threshold of the mean gradient

    def get(self, name: str) -> float:
        return dict(self.hyper)[name]

    def text(self) -> str:
        """The learner in the canonical text: unchanged for a constant rate without clipping."""
        text = f"{self.kind} {self.hyper}"
        if self.schedule is not None:
            text += f" schedule {self.schedule.text()}"
        if self.clip is not None:
            text += f" clip {self.clip!r}"
        return text


# How a sum of products adds each term (docs/semantics.md, "Arithmetic"): `unfused` rounds the
# product and then the sum, `fused` one correctly rounded fused multiply-add per term.
UNFUSED, FUSED = "unfused", "fused"
ARITHMETICS = (UNFUSED, FUSED)


@dataclass(frozen=True)
class Program:
    """A system that passed every check: the input to autodiff and codegen."""

    name: str
    data: DataSpec
    batch: int
    leaves: int
    shuffle_seed: int | None
    params: tuple[ParamSpec, ...]
    model: Graph  # input_x → model output; node `output` is the result
    output: int
    loss: str  # softmax_cross_entropy | sigmoid_cross_entropy | mse
    learner: LearnerSpec
    steps: int
    smoothing: float = 0.0  # softmax_cross_entropy's label smoothing
    # the node the forward (evaluation) kernel writes when it is not `output`: a single logit's
    # [0, z], whose first maximum is the predicted class of sigmoid_cross_entropy
    forward_output: int | None = None
    arithmetic: str = UNFUSED  # UNFUSED or FUSED

    @property
    def fused(self) -> bool:
        return self.arithmetic == FUSED

    @property
    def leaf_size(self) -> int:
        return self.batch // self.leaves

    @property
    def n_params(self) -> int:
        return sum(p.count for p in self.params)

    @property
    def state_slots(self) -> int:
        """Learner state arrays per element."""
        return SLOTS[self.learner.kind]

    @property
    def state_scalars(self) -> int:
        return SCALARS[self.learner.kind]

    @property
    def n_state(self) -> int:
        return self.state_slots * self.n_params + self.state_scalars

    def canonical(self) -> str:
        """A text that changes exactly when the meaning changes; its SHA-256 is the identity."""
        parts = [
            f"system {self.name}",
            f"data {self.data.kind} features={self.data.features} label={self.data.label_kind}"
            f" outputs={self.data.outputs} rows={self.data.rows} holdout={self.data.holdout}"
            f" sha256={self.data.sha256} seed={self.data.seed} noise={self.data.noise!r}"
            + (
                f" task={self.data.task} positions={self.data.positions}"
                if self.data.task or self.data.positions != 1
                else ""
            )
            + (f" vocabulary={self.data.vocabulary}" if self.data.vocabulary else "")
            + self.data.layout(),
            f"batch {self.batch} leaves {self.leaves} shuffle {self.shuffle_seed}",
        ]
        for p in self.params:
            loaded = p.init.loaded.text() if p.init.loaded is not None else ""
            parts.append(f"param {p.name} {p.shape} {p.init}{loaded}")
        for i, n in enumerate(self.model.nodes):
            parts.append(f"%{i} = {n.op}{n.inputs} {n.shape} {n.attrs}")
        parts += [
            f"output %{self.output}",
            f"loss {self.loss}" + (f" smoothing={self.smoothing!r}" if self.smoothing else ""),
            f"learner {self.learner.text()}",
            f"steps {self.steps}",
        ]
        if self.fused:  # an unfused system keeps the identity it always had
            parts.append(f"arithmetic {self.arithmetic}")
        return "\n".join(parts) + "\n"

    def identity(self) -> str:
        import hashlib

        return hashlib.sha256(self.canonical().encode()).hexdigest()
