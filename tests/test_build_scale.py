"""Build work against the number of parameter tensors (issue 22): linear, and bounded by a
named limit.

`alpha build` of a system of N small tensors took 2.8 s at 100, 39 s at 600 and 578 s at 2,000:
every tensor added loops to one kernel function and calls to one basic block, and LLVM's time on
those grew with their square. The times are in docs/performance.md (bench/build_scale.py); here
only what can be counted: the system of 2,000 tensors builds and trains to the reference's bits,
the kernels' code grows by the same amount per tensor with no function growing at all, and a
system past either limit is refused by name before it is lowered or built.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from conftest import build, program_of, run_exe
from reference import train

from alpha_core.autodiff.reverse import training_step
from alpha_core.check.expressions import ExprLowering
from alpha_core.check.program import Program
from alpha_core.check.system import MAX_MODEL_NODES, MAX_PARAM_TENSORS
from alpha_core.codegen.kernels import build_kernels
from alpha_core.codegen.parts import PART_CALLS
from alpha_core.codegen.target import TARGETS, optimized_ir
from alpha_core.ir.graph import GraphBuilder
from alpha_core.lower.batching import OUTLINE_SUMS_FROM, batching
from alpha_core.workspace.analysis import Workspace


def source(tensors: int, steps: int = 4, dense_every: int = 10) -> str:
    """A system of `tensors` parameter tensors: a first layer, then a chain in which every
    `dense_every`-th tensor is a small dense layer (tanh(t @ m)) and the others bias vectors
    added to the chain (t + b), so that both kinds of gradient occur: a product's, and sums
    that many biases share."""
    params, lets = [], []
    for i in range(1, tensors):
        if i % dense_every == 0:
            params.append(f"  param m{i}: f32[3, 3] = normal(0.0, 0.5, seed: {i})")
            lets.append(f"    let t{i} = tanh(t{i - 1} @ m{i})")
        else:
            params.append(f"  param b{i}: f32[3] = uniform(-0.1, 0.1, seed: {i})")
            lets.append(f"    let t{i} = t{i - 1} + b{i}")
    body = "\n".join(params)
    chain = "\n".join(lets)
    return f"""system many {{
  data train: synthetic(rows: 96, features: 4, classes: 3, seed: 5, noise: 0.3, holdout: 16)
  batch 16 leaves 4 shuffle(seed: 2)
  param w: f32[4, 3] = normal(0.0, 0.4, seed: 900)
{body}
  fn model(x: f32[B, 4]) -> f32[B, 3] {{
    let t0 = x @ w
{chain}
    return t{tensors - 1}
  }}
  loss softmax_cross_entropy(model(x), y)
  learner momentum(lr: 0.05, mu: 0.9)
  steps {steps}
}}
"""


def wide(biases: int, width: int = 512) -> str:
    """A first layer large enough for alpha_leaves_grad (its weight gradient a large product
    per leaf), then `biases` bias vectors each with a gradient of its own."""
    params = "\n".join(
        f"  param b{i}: f32[{width}] = uniform(-0.1, 0.1, seed: {i + 10})"
        for i in range(1, biases + 1)
    )
    lets = "\n".join(f"    let t{i} = relu(t{i - 1} + b{i})" for i in range(1, biases + 1))
    return f"""system wide {{
  data train: synthetic(rows: 80, features: 64, classes: 3, seed: 1, noise: 0.3, holdout: 16)
  batch 16 leaves 2
  param w: f32[64, {width}] = normal(0.0, 0.1, seed: 1)
  param v: f32[{width}, 3] = normal(0.0, 0.1, seed: 2)
{params}
  fn model(x: f32[B, 64]) -> f32[B, 3] {{
    let t0 = x @ w
{lets}
    return t{biases} @ v
  }}
  loss softmax_cross_entropy(model(x), y)
  learner sgd(lr: 0.1)
  steps 3
}}
"""


def _trains_exactly(program: Program, tmp: Path) -> None:
    result = build(program, tmp / "build")
    params = tmp / "out.params"
    code, events, stderr = run_exe(result.executables[0].path, "--params-out", str(params))
    assert code == 0, stderr
    done = events[-1]
    assert done["params_sha256"] == hashlib.sha256(params.read_bytes()).hexdigest()
    assert done["params_sha256"] == train(program).sha256


def test_2000_parameter_tensors_build_and_train_to_the_reference_bits(tmp_path: Path) -> None:
    program = program_of(source(2000), tmp_path / "many.alpha")
    assert len(program.params) == 2000
    _trains_exactly(program, tmp_path)


def test_many_sums_in_the_all_leaves_kernel_are_calls_and_exact(tmp_path: Path) -> None:
    program = program_of(wide(OUTLINE_SUMS_FROM + 8), tmp_path / "wide.alpha")
    step = training_step(program)
    assert batching(program, step) is not None
    module = str(build_kernels(program, step, TARGETS["x86_64"].triple))
    # one function for every bias's sum over the leaves, called once per bias
    assert len(re.findall(r'define internal void @"alpha\.leaves\.2\.sum\.', module)) == 1
    assert len(re.findall(r'call void @"alpha\.leaves\.2\.sum\.', module)) == OUTLINE_SUMS_FROM + 8
    _trains_exactly(program, tmp_path)


def _functions(text: str) -> dict[str, tuple[int, int]]:
    """Each defined function of LLVM IR text: (instructions, calls)."""
    out: dict[str, tuple[int, int]] = {}
    name = None
    for line in text.splitlines():
        if line.startswith("define"):
            found = re.search(r'@"?([^"(]+)"?\(', line)
            assert found is not None, line
            name = found.group(1)
            out[name] = (0, 0)
        elif line.startswith("}"):
            name = None
        elif name is not None and line.startswith("  ") and not line.endswith(":"):
            n, calls = out[name]
            out[name] = (n + 1, calls + (" call " in line))
    return out


def test_the_kernels_grow_linearly_and_no_function_grows(tmp_path: Path) -> None:
    host = TARGETS["x86_64"]
    emitted, optimised = {}, {}
    for n in (500, 1000, 2000):
        program = program_of(source(n), tmp_path / f"n{n}.alpha")
        module = build_kernels(program, training_step(program), host.triple, host.cpu)
        text = str(module)
        emitted[n] = _functions(text)
        if n >= 1000:
            optimised[n] = {
                f.name: sum(len(list(bb.instructions)) for bb in f.blocks)
                for f in optimized_ir(text, host).functions
                if not f.is_declaration
            }
    total = {n: sum(i for i, _ in fs.values()) for n, fs in emitted.items()}
    # the same instructions per tensor from 500 to 1,000 as from 1,000 to 2,000
    first, second = (total[1000] - total[500]) / 500, (total[2000] - total[1000]) / 1000
    assert abs(first - second) <= 0.02 * second, (first, second)
    for n, fs in emitted.items():
        # no function makes more calls than a part holds, or a few more around it
        assert max(c for _, c in fs.values()) <= PART_CALLS + 8, n
    # the largest function LLVM makes is the same size at 1,000 and 2,000 tensors (as emitted,
    # a kernel still holds the address of every parameter, which nothing reads once its calls
    # are in parts: LLVM drops those first)
    assert max(optimised[2000].values()) == max(optimised[1000].values())
    grown = sum(optimised[2000].values()) / sum(optimised[1000].values())
    assert grown < 2.05, grown


def _check(text: str, tmp: Path) -> tuple[Program | None, list[tuple[str, str]]]:
    path = tmp / "limit.alpha"
    path.write_text(text)
    program, diags = Workspace(one_shot=True).analyze_file(str(path)).program()
    return program, [(d.name, d.message) for d in diags]


def test_tensors_past_the_limit_are_refused_before_anything_is_lowered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    program, diags = _check(source(MAX_PARAM_TENSORS, dense_every=10**9), tmp_path)
    assert diags == [] and program is not None and len(program.params) == MAX_PARAM_TENSORS

    def lowered(*_: object) -> None:
        raise AssertionError("the model was lowered")

    monkeypatch.setattr(ExprLowering, "inline", lowered)
    program, diags = _check(source(MAX_PARAM_TENSORS + 1, dense_every=10**9), tmp_path)
    assert program is None
    assert diags == [
        (
            "system-too-large",
            f"system `many` declares {MAX_PARAM_TENSORS + 1:,} parameter tensors; at most "
            f"{MAX_PARAM_TENSORS:,} can be built",
        )
    ]


def _doubling(levels: int) -> str:
    """A model whose operations double with each level of functions: 2^levels tanh(h + b)."""
    fns = "".join(
        f"  fn f{k}(h: f32[B, 3]) -> f32[B, 3] {{ return f{k - 1}(f{k - 1}(h)) }}\n"
        for k in range(1, levels + 1)
    )
    return (
        source(2)
        .replace(
            "  fn model(",
            "  fn f0(h: f32[B, 3]) -> f32[B, 3] { return tanh(h + b1) }\n" + fns + "  fn model(",
        )
        .replace("    return t1\n", f"    return f{levels}(t1)\n")
    )


def test_operations_past_the_limit_are_refused_as_they_are_lowered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 2^13 levels of two operations: 16,384 of them and a few more, under the limit
    program, diags = _check(_doubling(13), tmp_path)
    assert diags == [] and program is not None and MAX_MODEL_NODES // 2 < len(program.model)
    asked = 0
    add = GraphBuilder.add

    def counted(self: GraphBuilder, *args: object, **kwargs: object) -> int:
        nonlocal asked
        asked += 1
        return add(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(GraphBuilder, "add", counted)
    # 2^40 levels' worth of operations asked for: refused at the limit, not expanded
    program, diags = _check(_doubling(40), tmp_path)
    assert program is None
    assert diags == [
        (
            "system-too-large",
            f"the model of system `many` lowers to more than {MAX_MODEL_NODES:,} operations, "
            "the most one system can have",
        )
    ]
    assert asked < 2 * MAX_MODEL_NODES
