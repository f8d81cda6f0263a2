"""The registry: every refusal Alpha can give, by stable name, with its long explanation.

The CLI (`alpha explain`), the LSP (diagnostic codes), the runtime and docs/refusals.md all read
this one table. Each compile-time entry's example is a source that really triggers it; a test
checks that.
"""

from __future__ import annotations

from dataclasses import dataclass

COMPILE = "compile time"
START_UP = "start-up"
FIRST_MESSAGE = "first message"
RESUME = "resume"
USAGE = "usage"


@dataclass(frozen=True)
class Refusal:
    name: str
    moment: str
    summary: str
    explanation: str
    example: str | None = None  # for compile-time refusals: a source that triggers it


_DIGITS_HEAD = """system tiny {
  data train: synthetic(rows: 64, features: 4, classes: 3, seed: 1)
  batch 8 leaves 2
  param w: f32[4, 3] = normal(0.0, 0.1, seed: 1)
  param b: f32[3] = zeros
"""
_MODEL = """  fn model(x: f32[B, 4]) -> f32[B, 3] {
    return x @ w + b
  }
"""
_TAIL = """  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.1)
  steps 10
}
"""


_PLAN = """plan duo for tiny {
  roles worker[2]
  topology pair
  round {
    each worker computes grad over its leaves
    combine grad by canonical tree, deliver to all
    each worker applies learner
  }
  contract exact
}
"""


_BLOCKS_HEAD = (
    _DIGITS_HEAD + "  param layers[2] {\n    w: f32[3, 3] = normal(0.0, 0.1, seed: 5)\n  }\n"
)


def _tiny(model: str = _MODEL, head: str = _DIGITS_HEAD, tail: str = _TAIL) -> str:
    return head + model + tail


_ENTRIES = [
    Refusal(
        "syntax-error",
        COMPILE,
        "the text does not follow the grammar",
        "An item (one line, or several lines held together by brackets) could not be parsed. "
        "Only that item is lost: the rest of the file is still parsed and checked, so further "
        "refusals may still be shown.",
        _tiny(model="  fn model(x: f32[B, 4]) -> f32[B, 3] {\n    return x @ w +\n  }\n"),
    ),
    Refusal(
        "unknown-name",
        COMPILE,
        "a name is used that nothing declares",
        "Every name in a system must be declared: parameters with `param`, functions with "
        "`fn`, locals with `let`, data sets with `data`, and the built-in operations, losses, "
        "learners and initialisers. The message suggests the nearest declared names.",
        _tiny(model="  fn model(x: f32[B, 4]) -> f32[B, 3] {\n    return x @ w + bias\n  }\n"),
    ),
    Refusal(
        "duplicate-name",
        COMPILE,
        "a name is declared twice",
        "Parameters, functions, data sets and locals share one namespace per system; each name "
        "may be declared once. A function may not take the name of a built-in function "
        "(`relu`, `sum`, `softmax`, ...): a call resolves to the built-in, so it would never be "
        "called.",
        _tiny(head=_DIGITS_HEAD + "  param b: f32[3] = zeros\n"),
    ),
    Refusal(
        "shape-mismatch",
        COMPILE,
        "operand shapes do not fit the operation",
        "Shapes are static. `a @ b` needs the last dimension of `a` to equal the first of `b`; "
        "`+ - * /` need shapes that broadcast (trailing dimensions equal, or one of them 1 or "
        "absent); a function's result must have its declared shape.",
        _tiny(model="  fn model(x: f32[B, 4]) -> f32[B, 3] {\n    return x @ b\n  }\n"),
    ),
    Refusal(
        "type-mismatch",
        COMPILE,
        "a value of the wrong kind",
        "Only `f32` tensors exist inside a model. A string, or an integer where a float tensor "
        "is needed in a declaration, is refused.",
        _tiny(head=_DIGITS_HEAD.replace("f32[4, 3]", "i64[4, 3]")),
    ),
    # block arrays (docs/language.md, "Block arrays")
    Refusal(
        "block-index-out-of-range",
        COMPILE,
        "a block array is indexed past its last block",
        "`param blocks[N] { ... }` holds blocks 0 to N - 1, and every index is known when the "
        "model is built (the body of a `for` loop is repeated then, once per value of its "
        "index), so an index outside that range is refused there, naming the loop's pass.",
        _tiny(
            head=_BLOCKS_HEAD,
            model="  fn model(x: f32[B, 4]) -> f32[B, 3] {\n    let h = x @ w + b\n"
            "    for i in 0..2 {\n      h = h @ layers[i + 1].w\n    }\n    return h\n  }\n",
        ),
    ),
    Refusal(
        "block-index-not-constant",
        COMPILE,
        "a block array's index is not known when the model is built",
        "Which block a model reads is part of the model: an index is an integer, a `for` "
        "loop's index, or `+ - *` of them. A tensor (known only when the model runs) or a "
        "division cannot choose a block.",
        _tiny(
            head=_BLOCKS_HEAD,
            model="  fn model(x: f32[B, 4]) -> f32[B, 3] {\n    return (x @ w + b) @ layers[b].w\n"
            "  }\n",
        ),
    ),
    Refusal(
        "block-shape-mismatch",
        COMPILE,
        "a block is passed where a block of another array's shape is declared",
        "An argument declared `p: blocks` takes one block of `blocks`, or of another array "
        "whose members have the same names, order and shapes. The message names the first "
        "member that differs.",
        _tiny(
            head=_BLOCKS_HEAD + "  param other[2] {\n    v: f32[4, 4] = zeros\n  }\n",
            model="  fn step(h: f32[B, 3], p: layers) -> f32[B, 3] {\n    return h @ p.w\n  }\n"
            "  fn model(x: f32[B, 4]) -> f32[B, 3] {\n    return step(x @ w + b, other[0])\n"
            "  }\n",
        ),
    ),
    Refusal(
        "seed-collision",
        COMPILE,
        "a block's member is generated from another tensor's seed",
        "The k-th name of a member declaration with `seed: s` is generated from seed s + k in "
        "block 0 and s + k + i·2^32 in block i. Two tensors generated from one seed start "
        "alike (element by element, one is the other scaled and shifted), so a member whose "
        "seed is another member's or a parameter's is refused: `wq, wk: ... seed: 3` takes "
        "seeds 3 and 4, and a later `seed: 4` would repeat `wk`.",
        _tiny(head=_BLOCKS_HEAD.replace("seed: 5", "seed: 1")),
    ),
    Refusal(
        "device-in-semantics",
        COMPILE,
        "a device, host, address or rank word inside a system",
        "A system says what is learned, never where: device products (rtx3070, h100), hosts "
        "(x86_64, aarch64), addresses, ports, ranks and drivers belong to a plan, a pairing or "
        "the deployment inputs. Keeping them out of the system is what lets one system be "
        "paired with any hardware and give the same bits.",
        _tiny(head=_DIGITS_HEAD.replace("seed: 1)\n  batch", "seed: 1, rank: 0)\n  batch")),
    ),
    Refusal(
        "missing-item",
        COMPILE,
        "a system lacks a required item",
        "A trainable system needs `data`, `batch`, at least one `param`, a `fn model`, a "
        "`loss`, a `learner` and `steps`.",
        _tiny(tail="  loss softmax_cross_entropy(model(x), y)\n  steps 10\n}\n"),
    ),
    Refusal(
        "bad-argument",
        COMPILE,
        "an argument is missing, unknown or out of range",
        "Built-ins take named arguments with fixed meanings: `adam(lr:, beta1:, beta2:, eps:)`, "
        "`normal(mean, std, seed:)`, `table(path, features:, label:, classes:, holdout:)` and "
        "so on (see docs/language.md). Unknown, missing and out-of-range arguments are refused.",
        _tiny(
            tail="  loss softmax_cross_entropy(model(x), y)\n  learner sgd(rate: 0.1)\n"
            "  steps 10\n}\n"
        ),
    ),
    Refusal(
        "batch-not-divisible",
        COMPILE,
        "the batch does not cut into equal leaves",
        "`batch N leaves L` cuts every round's N examples into L leaves of N / L examples; "
        "L must divide N. The leaves are the units the canonical combine tree adds, so they "
        "must be equal.",
        _tiny(head=_DIGITS_HEAD.replace("batch 8 leaves 2", "batch 8 leaves 3")),
    ),
    Refusal(
        "batch-axis-reduced",
        COMPILE,
        "a model reduces across examples",
        "A model maps each example to its output independently; the only sum across examples "
        "is the one the system declares (leaves in index order, then the canonical tree). A "
        "`sum` or `mean` over the batch axis inside the model would add examples in an "
        "undeclared order, so it is refused.",
        _tiny(
            model="  fn model(x: f32[B, 4]) -> f32[B, 3] {\n"
            "    return x @ w + b - mean(x @ w, axis: 0)\n  }\n"
        ),
    ),
    Refusal(
        "system-too-large",
        COMPILE,
        "a system is larger than one build may be",
        "A system may declare at most 10,000 parameter tensors, and its model and loss may "
        "lower to at most 25,000 operations (functions are inlined, so a function called many "
        "times counts each time, and one that calls another twice doubles at each level). "
        "The build's time and memory grow linearly with both, and a system at either limit "
        "builds in under a minute and a gigabyte, so the limits keep every build bounded. "
        "The tensors are counted before anything is lowered and the operations as they are, "
        "so `alpha check` and the editor give the refusal as quickly as any other.",
        _tiny(
            model="  fn f0(h: f32[B, 3]) -> f32[B, 3] { return tanh(h + b) }\n"
            + "".join(
                f"  fn f{k}(h: f32[B, 3]) -> f32[B, 3] {{ return f{k - 1}(f{k - 1}(h)) }}\n"
                for k in range(1, 15)
            )
            + "  fn model(x: f32[B, 4]) -> f32[B, 3] {\n    return f14(x @ w)\n  }\n"
        ),
    ),
    Refusal(
        "load-unreadable",
        COMPILE,
        "a `load` initialiser's file cannot be read or is not one it reads",
        '`param w: f32[..] = load("run/w.npz", key: "w1")` reads the tensor `w1` of a '
        "NumPy archive (.npz), a safetensors file or an earlier run's .params (named through "
        "the build manifest alpha-build.json beside it) when the system is checked, so the "
        "editor shows this refusal as you type. A missing or unreadable file, another format, "
        "a damaged archive or a .params file without its manifest is refused with this name; "
        "a tensor the file does not hold is `unknown-name` (listing those it does), one of "
        "another shape `shape-mismatch`, one that is not float32 `type-mismatch`. The file's "
        "SHA-256 and the tensor's name are part of the system's identity, and its values are "
        "compiled into the executable.",
        _tiny(
            head=_DIGITS_HEAD.replace(
                "normal(0.0, 0.1, seed: 1)", 'load("no/such/run.npz", key: "w")'
            )
        ),
    ),
    Refusal(
        "data-unreadable",
        COMPILE,
        "a data set named by the system cannot be read",
        "The build reads a table data set once to compile in its SHA-256, size and row count; "
        "the executable refuses any other file at start-up (`data-digest-mismatch`). The "
        "executable gives the same name at start-up when its data file exists but cannot be "
        "read, or is not a regular file (a FIFO, a device such as /dev/zero, a folder): it "
        "opens it without waiting and refuses it before reading a byte.",
        _tiny(
            head=_DIGITS_HEAD.replace(
                "synthetic(rows: 64, features: 4, classes: 3, seed: 1)",
                'table("no/such/file.csv", features: 4, label: last, classes: 3, holdout: 8)',
            )
        ),
    ),
    Refusal(
        "topology-mismatch",
        COMPILE,
        "the roles do not fit the plan's topology",
        "`pair` joins exactly two workers; `star(hub)` joins one hub and a family of workers; "
        "`hierarchy(fanout: k)` is made of workers only. Only the workers compute leaves and "
        "apply the learner.",
        _tiny() + _PLAN.replace("roles worker[2]", "roles worker[3]"),
    ),
    Refusal(
        "fanout-exceeded",
        COMPILE,
        "one role would combine more contributions than the bound",
        "A combining role receives one message per child every round; its schedule and the "
        "metadata compiled into it are bounded by its fan-out. A star's hub has every worker "
        "as a child, so a large star is refused: use a hierarchy, whose fan-out is declared.",
        _tiny() + _PLAN.replace("topology pair", "topology hierarchy(fanout: 1000)"),
    ),
    Refusal(
        "combine-order-changed",
        COMPILE,
        "the plan would add contributions in another order than the system declares",
        "The system fixes the order of every sum: leaves by the canonical tree. A plan that "
        "would combine in another order (by arrival, in sequence, around a ring) changes the "
        "bits of the result, so it must say so with `contract approximate(...)`; otherwise it "
        "is refused.",
        _tiny() + _PLAN.replace("by canonical tree", "by arrival"),
    ),
    Refusal(
        "leaves-uncovered",
        COMPILE,
        "some leaves of the round are computed by no role",
        "Every leaf of the system's batch is computed by exactly one worker. An explicit "
        "`leaves` assignment that leaves a gap is refused, naming the leaves.",
        _tiny(head=_DIGITS_HEAD.replace("leaves 2", "leaves 4"))
        + _PLAN.replace("contract exact", "leaves worker[0]: 0..1, worker[1]: 2..4"),
    ),
    Refusal(
        "leaves-overlap",
        COMPILE,
        "some leaves would be computed by two roles",
        "A leaf computed twice would be added twice, or one of the two would be a second "
        "authority for the same contribution. Each leaf belongs to one worker, in worker order.",
        _tiny(head=_DIGITS_HEAD.replace("leaves 2", "leaves 4"))
        + _PLAN.replace("contract exact", "leaves worker[0]: 0..3, worker[1]: 2..4"),
    ),
    Refusal(
        "role-without-leaves",
        COMPILE,
        "a worker would compute nothing",
        "With more workers than leaves, or an assignment that skips a worker, some worker "
        "would have no leaves to compute. Give the system more leaves or the plan fewer "
        "workers.",
        _tiny()
        + _PLAN.replace(
            "roles worker[2]\n  topology pair", "roles worker[4]\n  topology hierarchy(fanout: 2)"
        ),
    ),
    Refusal(
        "pairing-incomplete",
        COMPILE,
        "a pairing leaves a role without a host",
        "A pairing says, for every role of its plan, which host target (and later which "
        "device) realises it. Every role must be paired; the message names the ones missing "
        "as compact ranges.",
        _tiny() + _PLAN + "pairing lab for duo {\n  worker[0]: host x86_64\n}\n",
    ),
    Refusal(
        "pairing-overlap",
        COMPILE,
        "a role is paired twice",
        "Each role is paired once, so that which host realises it is never a matter of precedence.",
        _tiny()
        + _PLAN
        + "pairing lab for duo {\n  worker[*]: host x86_64\n  worker[1]: host aarch64\n}\n",
    ),
    Refusal(
        "unsupported-on-target",
        COMPILE,
        "the pairing asks for something this compiler cannot build for the target",
        "Missing target support fails by name; nothing is silently computed elsewhere, and an "
        "operation a GPU role cannot run is never computed on its host instead. A pairing that "
        "puts a role on a GPU (`gpu h200`) is refused when the system uses an operation that "
        "has no GPU kernel (the message names every such operation), and when the GPU's host "
        "is not x86_64: GPU roles are built for x86-64 hosts only, not yet for AArch64 ones "
        "such as a GH200's. Other plans and pairings of the file, and the system itself, "
        "still build.",
        _tiny() + _PLAN + "pairing lab for duo {\n  worker[*]: host aarch64, gpu h200\n}\n",
    ),
    Refusal(
        "not-built-yet",
        COMPILE,
        "the declaration is valid but its compilation is not built yet",
        "Some parts of the plan language are checked before they are compiled: approximate "
        "contracts and delivery to one owner per slice. They are refused by this name rather "
        "than compiled approximately.",
        _tiny() + _PLAN.replace("contract exact", "contract approximate(tolerance: 0.001)"),
    ),
    Refusal(
        "second-authority",
        COMPILE,
        "a piece of state would be mutated by two roles",
        "Every state mutation has one logical owner and a version. A replica is written only "
        "from what its owner computes; it is never a second authority. A layout where a "
        "replica would be updated by a worker that does not own its slice (for example "
        "partitioned gradients or parameters with a replicated optimizer), or a kind of state "
        "given two layouts, is refused.",
        _tiny() + _PLAN.replace("contract exact", "state { params partitioned over worker }"),
    ),
    Refusal(
        "unowned-state",
        COMPILE,
        "some state would have no owner",
        "Partitioned state is owned slice by slice by the roles that apply the learner. "
        "Partitioning over no role, or over roles that never apply it (a star's hub), would "
        "leave slices without an owner.",
        _tiny() + _PLAN.replace("contract exact", "state { optimizer partitioned }"),
    ),
    Refusal(
        "partition-coverage",
        COMPILE,
        "a partition does not cover a tensor exactly once",
        "A partition cuts the flat parameter array into one contiguous, non-empty slice per "
        "owner, in owner order, covering every element exactly once. More owners than "
        "elements cannot be covered that way.",
        _tiny(
            head=_DIGITS_HEAD.replace("f32[4, 3]", "f32[1, 1]")
            .replace("f32[3] = zeros", "f32[1] = zeros")
            .replace("features: 4, classes: 3", "features: 1, targets: 1")
            .replace("leaves 2", "leaves 4")
        )
        .replace("x: f32[B, 4]) -> f32[B, 3]", "x: f32[B, 1]) -> f32[B, 1]")
        .replace("softmax_cross_entropy", "mse")
        + _PLAN.replace(
            "roles worker[2]\n  topology pair", "roles worker[3]\n  topology hierarchy(fanout: 2)"
        ).replace("contract exact", "state { optimizer partitioned over worker }"),
    ),
    Refusal(
        "memory-admission",
        COMPILE,
        "a role's memory demand exceeds what its pairing, or the build machine, gives it",
        "Each role's demand (parameters, learner state, the gradient pieces its schedule "
        "holds, kernel buffers, data, frame buffers, a runtime reserve) is admitted against "
        "the memory of its profile: a host's `memory N gib` or the default, or a device "
        "profile. The refusal lists the breakdown; `alpha build` prints each role's demand and "
        "headroom. Without a pairing, `alpha build`, `alpha run` and alpha-tui admit the "
        "system (or each role of a plan) against the machine that builds it, before anything "
        "is compiled: its MemTotal in /proc/meminfo, or its container's memory limit when "
        "lower, or the default host profile when the machine does not say. `alpha check` and "
        "the editor admit only what a pairing names, so they answer alike on every machine. "
        "A GPU role is admitted twice: at compile time against its device profile, and at "
        "start-up against the free memory of the card it opened (cuMemGetInfo, once its "
        "context exists), refused with the same name, the demand, the free and total bytes "
        "and the breakdown, before anything is allocated on the card.",
        _tiny() + _PLAN + "pairing lab for duo {\n  worker[*]: host x86_64, memory 1 mib\n}\n",
    ),
    Refusal(
        "cpu-level-unsupported",
        START_UP,
        "this CPU cannot run the kernels chosen (or ALPHA_CPU_LEVEL names)",
        "A default x86-64 build carries its kernels for x86-64-v2 and v3 (and v4 when a product "
        "takes the packed GEMM) and runs the widest "
        "the CPU supports (the start event's `cpu` names it); every level gives the same bits. "
        "The environment variable ALPHA_CPU_LEVEL chooses one instead, for tests and "
        "comparisons. A level the executable does not carry (a build pinned with `--cpu` "
        "carries one), or one this CPU lacks (or whose registers the OS does not save), is "
        "refused at start-up, before anything is read or written; so is an executable built "
        "with `--cpu` for a CPU whose instructions (AVX2 and FMA, or AVX-512) this one lacks, "
        "rather than stopping at its first such instruction.",
    ),
    Refusal(
        "data-digest-mismatch",
        START_UP,
        "the data set is not the one the executable was built for",
        "The executable compiles in the SHA-256 and the size of the data set it was built "
        "against. At start-up a file of another size is refused before a byte of it is read "
        "(so a huge file costs nothing); one of the right size is hashed, and any difference "
        "(an edited, truncated or different file) is refused before training starts, and "
        "nothing is written.",
    ),
    Refusal(
        "data-missing",
        START_UP,
        "the data file does not exist or cannot be opened",
        "The path compiled in (or given with `--data`) could not be opened. Nothing is written.",
    ),
    Refusal(
        "data-malformed",
        START_UP,
        "a data row does not have the declared shape",
        "A row with the wrong number of columns, a field that is not a finite decimal number "
        "(as a float32), or a class label out of range; the message names the file, the line "
        "and the column. `alpha check`, the build and the editor read every row by the "
        "runtime's rules and give this refusal, with the same message, at compile time, before "
        "anything is compiled; the executable checks again at start-up (reached there only "
        "when the digest matched a file the checker did not read, which a build never makes).",
    ),
    Refusal(
        "data-bad-header",
        START_UP,
        "a data file's header is not what its source says",
        "A `.npy` array (alone or in a `.npz`) starts with the magic `\\x93NUMPY`, a version "
        "(1.0, 2.0 or 3.0) and a header dictionary of 'descr', 'fortran_order' and 'shape'; a "
        "file without them, with a header cut short or in Fortran order is refused. A table "
        "with `header: true` must have a header line of exactly its columns, naming the label "
        "column `label:` gives. `alpha check`, the build and the editor read the file by the "
        "runtime's rules and give this refusal with the executable's message.",
    ),
    Refusal(
        "data-wrong-dtype",
        START_UP,
        "a data array's element type is not one the source reads",
        "Features are float32 ('<f4'), uint8, uint16 or int32; class labels uint8, uint16, "
        "int32, int64 or integral float32; regression targets float32. A float64 array is "
        "refused rather than rounded silently: save `a.astype(numpy.float32)`. Given at check "
        "time (and in the editor) and by the executable.",
    ),
    Refusal(
        "data-wrong-shape",
        START_UP,
        "data arrays do not fit together or the system",
        "Features have at least two axes (rows, then the features, flattened in C order); "
        "labels are (rows,) or (rows, positions), targets (rows, targets), with as many rows as "
        "the features; a token file holds at least one window and the next token. Given at "
        "check time and by the executable.",
    ),
    Refusal(
        "data-wrong-size",
        START_UP,
        "a data file's size disagrees with its own header",
        "The bytes after a `.npy` header must be exactly what its dtype and shape hold (a "
        "truncated or padded array is refused); a token file is a whole number of uint16 or "
        "uint32 tokens. Given at check time and by the executable.",
    ),
    Refusal(
        "data-key-missing",
        START_UP,
        "a `.npz` archive has no array by the name the data item gives",
        "`npz(PATH, x: KEY, y: KEY)` reads the archive members `KEY.npy` (`numpy.savez(PATH, "
        "x=..., y=...)` writes `x.npy` and `y.npy`); the message lists the arrays the archive "
        "holds. Given at check time and by the executable.",
    ),
    Refusal(
        "data-bad-archive",
        START_UP,
        "a `.npz` file is not a zip archive the runtime reads",
        "The executable reads a `.npz` in place from its zip directory: members must be stored "
        "(`numpy.savez`), not compressed (`numpy.savez_compressed`) or encrypted, and the "
        "directory whole. Given at check time and by the executable.",
    ),
    Refusal(
        "out-of-memory",
        START_UP,
        "the executable could not allocate what the system needs",
        "The executable allocates its parameters, learner state, gradients and data once at "
        "start-up; if the machine cannot give it that memory it stops before training, and "
        "nothing is written.",
    ),
    Refusal(
        "program-invalid",
        START_UP,
        "the program compiled into the executable is inconsistent",
        "The runtime checks the description the compiler linked in (batch and leaves, holdout, "
        "sizes, the data digest, and a plan role's table: its SHA-256, version and bounds) "
        "before using it. Reaching this means the executable was not made by a matching "
        "`alpha build`, or its bytes were changed since; rebuild it.",
    ),
    Refusal(
        "params-write-failed",
        START_UP,
        "the final parameters could not be written",
        "The parameter file is written beside its final name, synced and renamed into place, "
        "so a reader never sees a partial file. When any step fails the executable stops with "
        "this refusal and the previous file, if any, is left as it was. Before round 0 the "
        "executable checks that the path is absent or a regular file (a device, a FIFO, a "
        "folder or a symbolic link is never replaced) and that its folder, or the nearest one "
        "above it that exists (the rest is made when the file is written), takes a new file, "
        "so a run that could not publish its parameters refuses before training.",
    ),
    Refusal(
        "internal-error",
        USAGE,
        "the compiler met a condition it does not handle",
        "A bug in alpha, not in the input: the command stops with this name and exit status "
        "101 instead of a Python traceback. Please report it with the input that caused it.",
    ),
    Refusal(
        "source-unreadable",
        USAGE,
        "the source file named cannot be read",
        "`alpha check`, `build`, `run`, `project`, `eval` and alpha-tui read only a regular "
        "file: a missing path, a directory, a FIFO, a device such as /dev/null, or a file the "
        "system will not let them read is refused by this name, saying which (exit status 1). "
        "A FIFO is recognised without opening it for a blocking read, so it never hangs the "
        "command. Bytes that are not UTF-8 are not this refusal: they are read and refused "
        "where they stand as `syntax-error`.",
    ),
    Refusal(
        "output-unwritable",
        USAGE,
        "the build's output folder cannot be written",
        "`alpha build -o DIR` makes DIR (and its parents) and proves it writable before "
        "compiling anything. A file in its place, a folder that cannot be made (a read-only "
        "file system, no permission) or a disk that fills up while an executable or the "
        "manifest is written is refused by this name with the path and the system's reason. "
        "Each file is written beside its name and renamed into place, so a failed build "
        "leaves no temporary file and no half-written executable or manifest behind.",
    ),
    Refusal(
        "export-layout-unknown",
        USAGE,
        "the parameters to export cannot be named and shaped",
        "`alpha export` writes each tensor by name and shape. A `.params` file is flat float32, "
        "so its names and shapes come from the build manifest alpha-build.json beside it (a "
        "run's folder has one), or from `--source FILE.alpha` (with `--system` when it "
        "declares several); a checkpoint names its tensors but not their shapes, which come "
        "from the manifest of the run folder above it or from `--source`. With neither, or "
        "when the values do not fit the layout (another parameter count, another system's "
        "capture), the export is refused with this name and nothing is written.",
    ),
    Refusal(
        "output-holds-another-build",
        USAGE,
        "the output folder holds the build of another system or plan",
        "`alpha build -o DIR` and `alpha run -o DIR` write each role's executable and the "
        "manifest `alpha-build.json` into DIR. When DIR already holds the build of another "
        "system or plan (its manifest says which), building there would leave the two builds' "
        "executables side by side under a manifest describing only the newer, so nothing is "
        "built and both are named. Rebuilding the same system and plan into its own folder "
        "replaces its files as before. Choose another folder, or remove the old build.",
    ),
    Refusal(
        "secret-file-unsafe",
        USAGE,
        "a launch secret would be written through a link or over a special file",
        "`alpha deploy k8s` (secret.yaml) and `alpha deploy slurm` (secret) write a fresh "
        "256-bit launch secret into their output folder. The file is created new with mode "
        "0600 from its first byte (O_CREAT|O_EXCL|O_NOFOLLOW), so nobody else can read it and "
        "it is never written through a symbolic link. A regular file left by an earlier emit "
        "is replaced (its secret belonged to that launch); a symbolic link, folder, FIFO or "
        "device in its place is refused by this name with the path and what is there, and "
        "left untouched. Remove it, or write into a folder only you can change.",
    ),
    Refusal(
        "cache-unusable",
        USAGE,
        "the object cache cannot be used",
        "The runtime's compiled objects, the objects a build shares between its roles (the "
        "program part and the kernels) and zig's own cache live under $ALPHA_CACHE_DIR "
        "(default ~/.cache/alpha). When that path is a file, or its folders cannot be made or "
        "written, the build stops with this name and the path, rather than with a toolchain "
        "error that names neither. Point ALPHA_CACHE_DIR at a writable folder.",
    ),
    Refusal(
        "stdout-unwritable",
        USAGE,
        "the command's standard output cannot be written",
        "Standard output was closed before the command started, is a full device "
        "(/dev/full), or is a pipe whose reader went away (`alpha check --json F | head -1`). "
        "The command stops writing, says so on standard error by this name and exits with "
        "status 1, so a script sees that the output it reads is incomplete. Work already done "
        "(a build on disk) stays done.",
    ),
    Refusal(
        "events-unwritable",
        START_UP,
        "an executable's event stream could not be written",
        "An executable writes its events as JSON lines on standard output. When that fails "
        "(the pipe's reader exited, the output is a full device) the executable does not die "
        "of SIGPIPE: it stops writing events, keeps training with its peers, writes its "
        "checkpoints and its parameter file as it would have, and only then exits with this "
        "refusal (status 3) on standard error, so the parameters are never lost to a closed "
        "pipe and the caller still learns that the event stream is incomplete.",
    ),
    Refusal(
        "threads-unavailable",
        START_UP,
        "the role's worker threads could not be started",
        "A role runs its matrix products on `--threads N` threads (by default the cores its "
        "CPU affinity allows). Each thread takes whole blocks of outputs, never part of a sum, "
        "so the count changes speed, never the bits. Every thread and its scratch memory is "
        "set up before round 0; when the system will not give one (a process or memory "
        "limit), the executable refuses before training anything, naming the thread and the "
        "reason. Run it with fewer threads.",
    ),
    Refusal(
        "threads-over-cores",
        USAGE,
        "more threads asked for than the pairing gives the role cores",
        "A pairing may say how many cores each role has (`worker[*]: host x86_64, cores 8`). "
        "A role then runs at most that many threads, and by default exactly that many "
        "(without `cores`, the cores its CPU affinity allows). `alpha build --threads N` with "
        "N above a role's `cores` is refused before anything is compiled, and so is an "
        "executable started with `--threads N` above the count compiled into it, before round "
        "0. The thread count never changes the bits, only the speed: lower it, or pair the "
        "role with more cores.",
    ),
    Refusal(
        "hosts-malformed",
        USAGE,
        "a line of a hosts file is not `ROLE HOST[:PORT]`",
        "`alpha build --hosts FILE` reads one line per role: the role as `alpha project` prints "
        "it, then its address (an IPv4 address, an IPv6 address in brackets when a port "
        "follows, or a host name), optionally `:PORT` (1 to 65535; by default the plan's port "
        "for the role). `#` starts a comment. A line with more or fewer words, an address that "
        "is neither an address nor a host name, or a port out of range is refused with the "
        "file, line and column, before anything is compiled.",
    ),
    Refusal(
        "hosts-unreadable",
        USAGE,
        "the hosts file cannot be read",
        "The file given to `--hosts` does not exist, cannot be opened or is not UTF-8 text; "
        "nothing is compiled.",
    ),
    Refusal(
        "hosts-unknown-role",
        USAGE,
        "a hosts file names a role the plan does not have",
        "Every line of a hosts file names one role of the plan being built, as `alpha project` "
        "prints it (`hub`, `worker[3]`). A name the plan does not have (a typo, a plan with "
        "fewer workers) is refused at its line, with the plan's roles, before anything is "
        "compiled.",
    ),
    Refusal(
        "hosts-duplicate",
        USAGE,
        "a hosts file gives a role two addresses, or two roles one address",
        "Each role listens on exactly one address and every peer dials that address, so a role "
        "listed twice is ambiguous, and two roles at one HOST:PORT (the port given, or the "
        "plan's port for the role: base + index) cannot both listen there, a peer dialling it "
        "reaching whichever bound first. Both lines are shown, and nothing is compiled. Two "
        "spellings of one address (`::1` and `0::1`, a name in other case or with a final "
        "dot) are the same address.",
    ),
    Refusal(
        "hosts-incomplete",
        USAGE,
        "a hosts file leaves roles of the plan without an address",
        "With `--hosts`, every role's address comes from the file: none falls back to `--host`, "
        "because a role placed by accident on the wrong machine would only be found when its "
        "peers cannot reach it. The roles missing are named; nothing is compiled.",
    ),
    Refusal(
        "peer-unresolvable",
        START_UP,
        "a peer's host name did not resolve before the connect deadline",
        "A hosts file may give a role's address as a host name. Each role resolves the names of "
        "the peers it dials at start-up (the C library's resolver: /etc/hosts, then DNS), "
        "looking a name up again, less often each time, until the connect deadline, so a name "
        "that appears late (a Kubernetes pod's DNS record) is still found; a name server that "
        "never answers costs the deadline, not the resolver's own timeout. A name that never "
        "resolves is named with the peer and the resolver's reason; no round has run, so "
        "nothing is committed.",
    ),
    Refusal(
        "slurm-failed",
        USAGE,
        "a Slurm command failed during `alpha deploy slurm`",
        "`alpha deploy slurm` runs Slurm's own commands on the submitting machine: salloc "
        "(or scontrol for a job given with --jobid), sbcast, srun and scancel. When one is not "
        "installed, fails or runs past its limit, the deployment stops with the command and "
        "the last line Slurm printed. An allocation obtained by the deployment is released "
        "(scancel) whatever happened; one given with --jobid is left to its owner. A role "
        "that fails on its node is not this refusal: it is reported by its own name with the "
        "node.",
    ),
    Refusal(
        "listen-failed",
        START_UP,
        "a role cannot listen on its address",
        "A role that accepts connections listens on the port its deployment inputs give it "
        "(port base + role index), and, on a loopback address, on a local socket beside it "
        "(`alpha/HOST:PORT`) that peers on the same machine dial. When that port or that "
        "name is taken, or the address is not local, it stops before any round, naming it. "
        "A listening address given as a host name that does not resolve yet is looked up "
        "again until the connect deadline, as a peer's is; then it stops, naming the deadline "
        "and the resolver's reason.",
    ),
    Refusal(
        "peer-unreachable",
        START_UP,
        "a peer never connected or never accepted before the deadline",
        "Every link is opened at start-up, with retries until the connect deadline (a "
        "deployment input). A peer that is not there by then is named with its address; no "
        "round has run, so nothing is committed.",
    ),
    Refusal(
        "peer-timeout",
        FIRST_MESSAGE,
        "a frame did not arrive before the deadline",
        "Every read has a deadline. A peer that stops sending (stuck, or on a network that "
        "drops the traffic) is named with the round that waited; the round commits nothing. "
        "On one machine, a sender whose shared slot the peer has not freed within the deadline "
        "(the peer two rounds behind) is refused the same way.",
    ),
    Refusal(
        "peer-lost",
        FIRST_MESSAGE,
        "a peer closed or reset its connection",
        "A peer that exits or is killed closes its sockets; its neighbours see it at once and "
        "stop with this name, the peer and the round. A failed round commits nothing: no "
        "parameter, optimizer slot or checkpoint changes.",
    ),
    Refusal(
        "frame-corrupt",
        FIRST_MESSAGE,
        "a message is not a well-formed Alpha frame",
        "Frames carry a magic number and a header checksum (CRC-32C), and the handshake's "
        "frames a payload checksum too (later frames have a MAC instead: frame-forged). "
        "Random bytes, a flipped bit or a truncated frame are refused by this name before "
        "anything in them is used.",
    ),
    Refusal(
        "frame-version-mismatch",
        FIRST_MESSAGE,
        "the peer speaks another frame version",
        "The handshake carries the frame version; executables built by different versions of "
        "Alpha refuse to talk rather than misread each other.",
    ),
    Refusal(
        "frame-oversize",
        FIRST_MESSAGE,
        "a frame is longer than the program allows",
        "The largest frame a role can receive is fixed by its program (a piece: the "
        "parameters and one loss). A longer length is refused before any allocation.",
    ),
    Refusal(
        "frame-unexpected",
        FIRST_MESSAGE,
        "a well-formed frame that the schedule does not expect here",
        "Each receive in a role's projected schedule names the sender, the round, the tree "
        "node and the element range it expects. Any other frame is refused. On a link between "
        "roles on one machine, shared pages offered after the handshake that are not the size "
        "both schedules give the link's large frames (or come without their file, or in a file "
        "not sealed against shrinking) are refused the same way, naming the sizes.",
    ),
    Refusal(
        "plan-identity-mismatch",
        FIRST_MESSAGE,
        "the peer was built from another system or plan",
        "The handshake carries the SHA-256 of the canonical system and plan. A role built "
        "from a different plan, or from the same plan of a system with another learning rate, "
        "is refused on its first message; the message names both identities.",
    ),
    Refusal(
        "role-identity-mismatch",
        FIRST_MESSAGE,
        "the peer claims a role this link does not expect",
        "Each link joins two named roles. A peer that introduces itself as another role, or "
        "believes it is talking to another role, is refused.",
    ),
    Refusal(
        "membership-epoch-mismatch",
        FIRST_MESSAGE,
        "the peer belongs to another membership epoch",
        "The handshake carries the membership epoch; roles of different epochs refuse to "
        "combine anything.",
    ),
    Refusal(
        "peer-unauthenticated",
        FIRST_MESSAGE,
        "a peer did not prove it holds the launch secret",
        "Opening a link is a mutual challenge-response: each side sends a fresh nonce and "
        "proves it knows the launch's secret with an HMAC-SHA256 over both nonces, the plan "
        "identity, both roles and the epoch. A role that dials and is answered without a valid "
        "proof stops with this name (it chose the address, so what answers there is not its "
        "peer). A listener never stops for a connection that has not proven itself: it drops "
        "it, naming it in a `stranger-dropped` event with this name (or the frame refusal its "
        "bytes earned), and keeps waiting for its real peer until the connect deadline.",
    ),
    Refusal(
        "frame-forged",
        FIRST_MESSAGE,
        "a frame's MAC does not verify under its link's key",
        "Every frame after the handshake is followed by a 16-byte MAC of its header and "
        "payload (a polynomial hash over GF(2^128) hidden by a pad drawn from its sequence "
        "number on the link), keyed by a key of that link and direction derived from the "
        "handshake. A frame made without the key, changed on the way, replayed, "
        "delivered out of order or copied from another link (or another launch) fails it and "
        "stops the round with this name; the round commits nothing.",
    ),
    Refusal(
        "secret-missing",
        START_UP,
        "a role with links has no launch secret",
        "A role that talks to other roles needs the launch's 256-bit secret before it opens a "
        "link: from `--secret-file PATH`, from an inherited descriptor named by the "
        "ALPHA_SECRET_FD environment variable (how `alpha run`, alpha-tui and bench/round.py "
        "give a fresh one per launch), or from the path `alpha build --secret-file` compiled "
        "in. None given, a file that does not exist or a descriptor that is not open stops "
        "the role at start-up with this name. A single-process build needs no secret.",
    ),
    Refusal(
        "secret-unreadable",
        START_UP,
        "the launch secret cannot be used",
        "A secret file must be a regular file of exactly 32 bytes that only its owner may "
        "access (mode 0600); a descriptor must be a pipe or a regular file giving exactly 32 "
        "bytes. Anything else (another size, a directory, a FIFO or device, a file its group "
        "or others may read, an open or read error) stops the role at start-up with this "
        "name and the reason. The check happens before any byte is read, so nothing in place "
        "of the file can hold the role.",
    ),
    Refusal(
        "checkpoint-write-failed",
        START_UP,
        "a pack or folder of a capture could not be written, synced or renamed",
        "Captures are written into a partial folder, synced, and published by renaming the "
        "folder. When any write fails the role stops with this name; the capture is never "
        "published, and the last published one stays as it was.",
    ),
    Refusal(
        "checkpoint-incomplete",
        RESUME,
        "the checkpoint lacks a piece it needs",
        "A capture is published only when every owner's piece belongs to it. A path that names "
        "no published capture (or a partial one), a missing pack, or shards that leave "
        "parameter or learner-state elements uncovered are refused at resume; nothing is "
        "loaded and nothing is written.",
    ),
    Refusal(
        "checkpoint-malformed",
        RESUME,
        "a manifest is not one this version reads",
        "Each pack ends with a trailer locating its manifest; manifests are JSON of a fixed "
        "format and version. Anything else (no trailer, damaged text, another format, fields "
        "out of range) is refused before any shard is read.",
    ),
    Refusal(
        "checkpoint-identity-mismatch",
        RESUME,
        "the checkpoint belongs to another system",
        "Checkpoints are indexed by logical identity: the SHA-256 of the canonical system. "
        "Any plan of the same system may resume from it (another owner count, another "
        "partitioning); a checkpoint of a different system is refused, naming both "
        "identities.",
    ),
    Refusal(
        "arithmetic-mismatch",
        RESUME,
        "the checkpoint was made by a system of the other arithmetic",
        "A system's arithmetic (`arithmetic fused` or the default `unfused`) is part of its "
        "identity: the same parameters trained on with the other arithmetic would give other "
        "bits. Resuming or evaluating a capture made by a system of the other arithmetic is "
        "refused before anything is built (`alpha run --resume`, `alpha eval`) and again by "
        "the executable at start-up, naming both arithmetics; a fused capture's manifest says "
        '`"arithmetic": "fused"`, an unfused one has no such field. Change the source\'s '
        "`arithmetic` item back, or train from the start.",
    ),
    Refusal(
        "checkpoint-digest-mismatch",
        RESUME,
        "a shard or manifest is not what its manifest says",
        "Every shard is listed with its SHA-256 by its manifest, every manifest by its pack's "
        "trailer and by the manifest above it. A flipped byte anywhere is refused by name, "
        "naming the file; nothing is loaded and nothing is written.",
    ),
    Refusal(
        "predict-input-unreadable",
        START_UP,
        "the inputs to predict on cannot be read",
        "`alpha predict` and an executable's `--predict INPUT` read a regular file of new "
        "inputs (CSV rows of features, or a float32 .npy); a missing file, a folder, a FIFO or "
        "a device, or an output path that cannot be written (`--predict-out`), is refused with "
        "this name before anything is computed. New inputs are not training data: no digest "
        "of them is compiled in or checked.",
    ),
    Refusal(
        "predict-input-malformed",
        START_UP,
        "the inputs to predict on are not rows of the system's features",
        "Each CSV line that is not blank must hold exactly the system's `features` decimal "
        "numbers (finite as float32, read as the data's rows are), and nothing else: no label, "
        "no header. A .npy file must be little-endian float32, C order, of shape (rows, "
        "features) or (features,) for one row. The message names the file and the line or "
        "the header field at fault; nothing is predicted and nothing is written.",
    ),
    Refusal(
        "params-file-mismatch",
        START_UP,
        "a parameter file given to predict with is not this system's",
        "`alpha predict --params P` and an executable's `--params P` read a `.params` file: "
        "exactly the system's parameter count of little-endian float32, as a run writes it. A "
        "file of another size (another system's, or not a parameter file) or one that cannot "
        "be read is refused with this name before anything is computed.",
    ),
    Refusal(
        "checkpoint-folder-foreign",
        START_UP,
        "the run would publish a capture over something that is not this system's",
        "Captures belong to the system identity that wrote them. Before round 0 the root looks "
        "at every round it will publish: where the checkpoint folder already holds that "
        "`round-<R>` and it is not a capture of this system (another system's, a symbolic "
        "link, a file, or a folder holding files the runtime never writes) the run stops with "
        "this name, naming it, and leaves it as it is; the same check is made again right "
        "before each publication. Retention (`--checkpoint-keep`) never counts nor removes such "
        "folders. Give the run its own `--checkpoint-dir`, or move the folder away.",
    ),
    Refusal(
        "usage",
        USAGE,
        "a command was called with arguments it does not take",
        "The command-line arguments could not be understood; the message names the argument.",
    ),
    Refusal(
        "launch-failed",
        START_UP,
        "a role's executable could not be started",
        "The launcher (`alpha run`, alpha-tui) starts every role's executable, under qemu-user "
        "when its instruction set is not this machine's. When one cannot be started (the "
        "emulator is not installed, the file is gone or not executable), no role is started, "
        "and the refusal names the role, the command and the reason.",
    ),
    Refusal(
        "role-crashed",
        START_UP,
        "an executable ended without naming a reason",
        "Every failure an executable detects is refused by name. This one is reported by the "
        "launcher when a process ends with a non-zero status and no refusal event, for example "
        "when it was killed by a signal.",
    ),
    Refusal(
        "gpu-driver-missing",
        START_UP,
        "a GPU role found no working NVIDIA driver",
        "A GPU role needs the NVIDIA kernel driver and its library `libcuda.so.1`, and nothing "
        "else from CUDA (no toolkit, no runtime library). At start-up it opens `libcuda.so.1` "
        "with dlopen and calls cuInit; when the library cannot be loaded the refusal quotes the "
        "loader's reason, when cuInit or a later query fails it names the driver's error "
        "(`CUDA_ERROR_...`). Nothing is computed on the host instead, and nothing is written.",
    ),
    Refusal(
        "gpu-not-found",
        START_UP,
        "the GPU a role was given is not on this machine",
        "A GPU role runs on the device named by `--gpu-uuid` (the UUID as `nvidia-smi -L` "
        "prints it, `GPU-` and 32 hex digits) or `--gpu-index` (the driver's order), by default "
        "the first. When the driver has no such device, or none at all, the role stops at "
        "start-up and the message lists the index and UUID of every device the driver sees.",
    ),
    Refusal(
        "gpu-jit-failed",
        START_UP,
        "the NVIDIA driver could not compile a GPU role's kernels",
        "A GPU role carries its kernels as PTX and hands them to the driver's JIT compiler at "
        "start-up (cuModuleLoadDataEx). When the JIT refuses them (a driver too old for the "
        "PTX version, a device below the PTX target) the message carries the driver's error "
        "name and its error log, and the whole log goes to stderr; a kernel missing from the "
        "module is refused the same way. Nothing is written.",
    ),
    Refusal(
        "gpu-launch-failed",
        START_UP,
        "a GPU kernel, or a copy to or from the device, failed during the run",
        "Every kernel launch is checked, and so is every wait for the device and every copy "
        "between host and device memory, where a kernel's own fault shows. The message names "
        "the driver's error (`CUDA_ERROR_...`) and the kernel; the `refused` event names the "
        "round. A failed round commits nothing and no parameter file is written.",
    ),
    Refusal(
        "no-system",
        COMPILE,
        "the file declares no system to build",
        "`alpha build` and `alpha run` need a `system` declaration; name one with `--system` "
        "when the file declares several.",
        "# an empty file\n",
    ),
    Refusal(
        "link-failed",
        COMPILE,
        "the native toolchain could not produce the executable",
        "The bundled zig toolchain failed to compile the runtime or link the executable. The "
        "message carries the toolchain's own output.",
    ),
]

REGISTRY: dict[str, Refusal] = {r.name: r for r in _ENTRIES}
