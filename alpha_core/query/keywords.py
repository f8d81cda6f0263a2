"""What each keyword of the language means, in a sentence or two: what a hover on it shows."""

from __future__ import annotations

from alpha_core.check.learner_check import LEARNERS  # every learner, named where it is defined


def _learners() -> str:
    """`learner sgd(...)`, `momentum(...)`, ... or `adamw(...)`: every learner the checker knows."""
    calls = [f"`{name}(...)`" for name in LEARNERS]
    calls[0] = f"`learner {calls[0][1:]}"
    return ", ".join(calls[:-1]) + f" or {calls[-1]}"


KEYWORD_DOCS: dict[str, str] = {
    "system": "`system NAME { ... }` declares a learning system: its data, batch, parameters, "
    "functions, loss, learner and steps. It compiles to one executable.",
    "plan": "`plan NAME for SYSTEM { ... }` runs a system as several roles (workers, a hub) "
    "that exchange gradients each round; every plan gives the bits of the single-process build.",
    "pairing": "`pairing NAME for PLAN { ... }` says where each role of a plan runs: its host "
    "architecture, a GPU profile, its memory and cores. The build admits every role against it.",
    "for": "names what a plan runs (a system) or what a pairing places (a plan). In a "
    "function, `for i in A..B { ... }` repeats its body for i = A to B - 1 when the model is "
    "built, as if written out once per pass (block arrays: `h = block(h, blocks[i])`).",
    "in": "in `for i in A..B { ... }`: the range of a loop's index, A up to B - 1.",
    "data": '`data NAME: SOURCE` declares the training set: `table("file.csv", ...)` or '
    "`synthetic(...)`; its rows are read at check time and compiled in.",
    "batch": "`batch N leaves L` takes N examples a step, cut into L leaves of N/L examples; "
    "each leaf's gradient is computed alone and the leaves are combined by the canonical tree, "
    "so any plan gives the same bits. `shuffle(seed: S)` reorders the examples each epoch.",
    "leaves": "in `batch N leaves L`: the leaves a batch is cut into (L must divide N). In a "
    "plan, `leaves ROLE: LO..HI, ...` assigns leaves to workers by hand.",
    "shuffle": "`shuffle(seed: S)` after `batch`: the order of the examples each epoch, from a "
    "seed.",
    "param": "`param NAME: f32[...] = INIT` declares a trained parameter, its shape and its "
    "initialiser (`zeros`, `normal(...)`, `uniform(...)`). `param blocks[N] { MEMBER: f32[...] "
    "= INIT ... }` declares N blocks of the same members, `blocks[i].MEMBER` each.",
    "fn": "`fn NAME(ARG: TYPE, ...) -> TYPE { ... }` declares a function of the model; `B` in "
    "a type is the batch axis.",
    "let": "`let NAME = EXPR` names a value inside a function; its shape is checked (an inlay "
    "hint shows it).",
    "return": "`return EXPR`: the value of the function, of the declared result type.",
    "loss": "`loss softmax_cross_entropy(model(x), y)` or `mse(...)`: what training minimises; "
    "`x` stands for the examples and `y` for the labels.",
    "learner": _learners() + ": how the parameters are updated from the combined gradient.",
    "steps": "`steps N`: the number of training steps (rounds, in a plan).",
    "arithmetic": "`arithmetic fused` adds each term of every sum of products (`@`, batched "
    "`@`, convolutions and their gradients) with one correctly rounded fused multiply-add, in "
    "the declared order; `arithmetic unfused` (the default) multiplies and adds separately. "
    "Part of the system's identity; fused needs FMA (x86-64-v3 or later, AArch64, GPUs).",
    "roles": "`roles worker[N], hub`: the processes of a plan; `worker[N]` is a family of N "
    "members.",
    "topology": "`topology pair`, `star(hub)` or `hierarchy(fanout: K)`: how the roles "
    "exchange their pieces of the gradient.",
    "round": "`round { ... }`: what every round does, in order: each worker computes its "
    "leaves, the pieces are combined, each worker applies the learner.",
    "each": "`each ROLE computes grad over its leaves` / `each ROLE applies learner`: a round "
    "statement for every member of a family.",
    "computes": "`each worker computes grad over its leaves`: each worker's gradient over the "
    "leaves assigned to it.",
    "over": "`... over its leaves`; in `state`, `partitioned over ROLE`.",
    "its": "`... over its leaves`: the leaves assigned to each member.",
    "combine": "`combine grad by canonical tree, deliver to all`: the leaves' gradients are "
    "added in the fixed tree order, whatever the topology, and the total reaches every worker.",
    "by": "`combine grad by canonical tree`: the order the pieces are added in.",
    "deliver": "`deliver to all`: every worker receives the combined gradient.",
    "to": "`deliver to all`.",
    "applies": "`each worker applies learner`: every worker updates its parameters.",
    "contract": "`contract exact`: the plan must give the bits of the single-process build "
    "(checked, not hoped for).",
    "state": "`state { params replicated; optimizer partitioned over worker }`: where the "
    "parameters and the learner's state live.",
    "checkpoint": "`checkpoint every N rounds`: the roles write a checkpoint every N rounds, "
    "from which `alpha run --resume` continues with the same bits.",
    "every": "`checkpoint every N rounds`.",
    "rounds": "`checkpoint every N rounds`.",
    "host": "`host x86_64` or `host aarch64`: the architecture a role's executable is built for.",
    "gpu": "`gpu PROFILE`: the role runs on a GPU of that profile; its memory is what the role "
    "is admitted against.",
    "memory": "`memory N gib` (or `mib`, `gb`, `mb`): the memory a role may use on its host.",
    "cores": "`cores N`: the cores a role's threads may use.",
}


def keyword_doc(word: str) -> str | None:
    return KEYWORD_DOCS.get(word)
