"""Memory admission: what one role holds at its peak, item by item, against its profile.

The demand is computed from the same facts the executable is built from: the parameter and
learner-state sizes, the pieces its projected schedule holds in a round, the static buffers of
the leaf kernels, the data it loads and the frames it sends and receives.
"""

from __future__ import annotations

from dataclasses import dataclass

from alpha_core.autodiff.reverse import StepGraph, training_step
from alpha_core.check.program import Program
from alpha_core.diagnostics import Diagnostic
from alpha_core.ir.graph import concrete, size
from alpha_core.lower.batching import batching, subtree_sizes
from alpha_core.lower.blocking import TREE_MC, blocking_for, packed
from alpha_core.lower.conv_gemm import CONV_PRODUCTS, gather_floats, on_gemm
from alpha_core.lower.live import live_nodes
from alpha_core.lower.tree import split, tree_walk
from alpha_core.plan.model import Pairing, Plan
from alpha_core.plan.profiles import Profile, host_profile
from alpha_core.plan.projection import project
from alpha_core.plan.schedule import RoleSchedule, single_process
from alpha_core.support.sizes import human_bytes

FLOAT = 4
FRAME_HEADER = 64
RUNTIME_RESERVE = 1 << 20  # the executable's own code, stack and C library
TILES = ((4, 16), (8, 16), (16, 32), (4, 32))  # (lanes, registers) of every target's tile
# A role's threads are counted as its pairing's `cores` (one without it); the kernels' static
# buffers above are an upper bound: a transpose read in place or a gradient computed where the
# caller wants it takes no buffer of its own.


@dataclass(frozen=True)
class Admission:
    role: str
    profile: Profile
    items: tuple[tuple[str, int], ...]  # (what, bytes)

    @property
    def total(self) -> int:
        return sum(b for _, b in self.items)

    @property
    def headroom(self) -> int:
        return self.profile.memory - self.total

    @property
    def admitted(self) -> bool:
        return self.headroom >= 0

    def show(self) -> str:
        lines = [f"{self.role} on {self.profile.name} ({_bytes(self.profile.memory)})"]
        width = max(len(w) for w, _ in self.items)
        lines += [f"  {what:<{width}}  {_bytes(n):>10}" for what, n in self.items]
        lines.append(f"  {'total':<{width}}  {_bytes(self.total):>10}")
        lines.append(f"  {'headroom':<{width}}  {_bytes(self.headroom):>10}")
        return "\n".join(lines)


_bytes = human_bytes  # the one formatter of sizes, shared with the CLI and alpha-tui


def _exact(n: int) -> str:
    return f"{human_bytes(n)} ({n:,} bytes)"


def pieces_held(schedule: RoleSchedule) -> int:
    """Distinct pieces a role holds by the end of a round: an upper bound (the runtime computes
    a COMPUTE folded into the COMBINE after it leaf by leaf, holding fewer)."""
    held: set[tuple[int, int]] = set()

    def evaluate(lo: int, hi: int) -> None:
        if (lo, hi) in held:
            return
        mid = split(lo, hi)
        evaluate(lo, mid)
        evaluate(mid, hi)
        held.add((lo, hi))

    for op in schedule.ops:
        if op.kind == "compute":
            held.update((leaf, leaf + 1) for leaf in range(op.a, op.b))
        elif op.kind == "recv":
            held.add((op.a, op.b))
        elif op.kind == "combine":
            evaluate(op.a, op.b)
    return len(held)


def kernel_buffers(program: Program, step: StepGraph) -> int:
    """The static buffers of the leaf-gradient (`step`) and forward kernels, and of the kernel
    for all the leaves at once where the step has one (its rows for every leaf, and each sum's
    value per leaf)."""
    total = 0
    for graph, roots in (
        (step.graph, [step.loss_sum, *step.grads]),
        (program.model, [program.output]),
    ):
        for i in live_nodes(graph, roots):
            node = graph[i]
            if node.op not in ("param", "input_x", "label_class", "label_reg"):
                total += max(1, size(concrete(node.shape, program.leaf_size))) * FLOAT
    split = batching(program, step)
    if split is not None:
        rows = program.leaves * program.leaf_size
        for i in split.rows:
            if step.graph[i].op not in ("input_x", "label_class", "label_reg"):
                total += max(1, size(concrete(step.graph[i].shape, rows))) * FLOAT
        per_leaf = sum(subtree_sizes(program.leaves))  # each size's kernel: a sum per leaf
        for g in split.sums:
            if step.graph[g].op != "matmul":
                total += per_leaf * max(1, size(step.graph[g].shape)) * FLOAT
    return total


def task_scratch(program: Program, step: StepGraph) -> int:
    """Bytes of packed panels one thread needs: the largest tile's, when the leaf kernel
    (`step`) has a product large enough for the packed GEMM (codegen/gemm.py), else none; and
    the blocks of C a tree of products holds (the kernel for all leaves), where there is one;
    or the operands a convolution on the GEMM gathers (codegen/conv_gemm.py), where one does
    (the forward kernel's convolutions are the step's own)."""
    split = batching(program, step)
    if split is not None:
        blocks = tree_walk(program.leaves)[1]
        return max(
            (t.scratch_floats + blocks * TREE_MC * t.nc) * FLOAT
            for t in (blocking_for(w, r, program.fused) for w, r in TILES)
        )
    panels = 0
    for node in step.graph.nodes:
        if node.op == "matmul":
            (m, k), (_, n) = (concrete(step.graph[i].shape, program.leaf_size) for i in node.inputs)
            if packed(m, n, k):
                tiles = (blocking_for(w, r, program.fused) for w, r in TILES)
                panels = max(t.scratch_floats for t in tiles) * FLOAT
        elif node.op in CONV_PRODUCTS:
            out = concrete(node.shape, program.leaf_size)
            ins = tuple(concrete(step.graph[i].shape, program.leaf_size) for i in node.inputs)
            if on_gemm(node.op, out, ins):  # its gathered operands beside the panels
                tiles = (blocking_for(w, r, program.fused) for w, r in TILES)
                return max(t.scratch_floats + gather_floats(t) for t in tiles) * FLOAT
    return panels


def demand(program: Program, schedule: RoleSchedule, threads: int = 1) -> list[tuple[str, int]]:
    step = training_step(program)  # once: both the buffers and the scratch read it
    n = program.n_params
    d = program.data
    label_width = d.positions if d.label_kind == "class" else d.outputs
    applies = any(op.kind == "apply" for op in schedule.ops)
    owned = (schedule.state_count or n) if applies else 0
    state = program.state_slots * owned + (program.state_scalars if applies else 0)
    items = [
        ("parameters", n * FLOAT),
        (f"learner state ({owned:,} elements)", state * FLOAT),
        (
            f"gradient pieces ({pieces_held(schedule)} held)",
            pieces_held(schedule) * (n + 1) * FLOAT,
        ),
        ("activations (kernel buffers)", kernel_buffers(program, step)),
        ("data", d.rows * (d.features + label_width) * FLOAT),
        (
            "leaf inputs",
            program.leaf_size
            * (program.leaves if batching(program, step) is not None else 1)
            * (d.features + label_width)
            * FLOAT,
        ),
    ]
    if schedule.links:
        items.append(
            (
                f"frame buffers ({len(schedule.links)} links)",
                len(schedule.links) * (FRAME_HEADER + (n + 1) * FLOAT),
            )
        )
    scratch = task_scratch(program, step)
    if scratch:
        items.append((f"packed panels ({threads} thread{'s' * (threads != 1)})", threads * scratch))
    items.append(("runtime reserve", RUNTIME_RESERVE))
    return items


class AdmissionRefused(Exception):
    """A build refused before anything is compiled: a role does not fit its machine."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def refuse_unless_admitted(a: Admission, what: str) -> None:
    """Raise AdmissionRefused (`memory-admission`, with the breakdown) when `a` does not fit.
    Used by the build without a pairing, against the build machine (`machine_profile`): a
    pairing's roles were admitted by the checker against their own profiles."""
    if a.admitted:
        return
    raise AdmissionRefused(
        Diagnostic(
            "memory-admission",
            f"{what} needs {_exact(a.total)} but {a.profile.name} has {_exact(a.profile.memory)}: "
            "without a pairing a build is admitted against the machine that builds it",
            None,
            notes=tuple(f"{item}: {n:,} bytes" for item, n in a.items),
            help="build on a machine with that memory, pair the roles of a plan with hosts "
            "that have it (`memory N gib`), or make the system smaller",
        )
    )


def admit_program(program: Program, profile: Profile | None = None) -> Admission:
    schedule = single_process(program.leaves, program.identity())
    return Admission(
        "main", profile or host_profile("x86_64", None), tuple(demand(program, schedule))
    )


def role_profile(pairing: Pairing | None, index: int) -> Profile:
    if pairing is None:
        return host_profile("x86_64", None)
    return pairing.profile_of(index)


def admit(
    plan: Plan, pairing: Pairing | None, index: int, profile: Profile | None = None
) -> Admission:
    """Role `index` against `profile`, or else its pairing's profile (the default host
    profile without a pairing)."""
    schedule = project(plan, index)
    threads = (pairing.cores_of(index) if pairing is not None else None) or 1
    return Admission(
        schedule.name,
        profile or role_profile(pairing, index),
        tuple(demand(plan.system, schedule, threads)),
    )


def positions(plan: Plan, lo: int, hi: int) -> list[int]:
    """Roles of a family range whose demands differ: the ends and the first combiner of each
    level (a hierarchy's demand depends only on how many levels a worker combines)."""
    first = plan.workers.first
    picks = {lo, hi - 1}
    k = max(2, plan.fanout)
    step = 1
    while step < plan.workers.count:
        w = ((lo - first + step - 1) // step) * step
        if first + w < hi:
            picks.add(first + w)
        step *= k
    return sorted(p for p in picks if lo <= p < hi)
