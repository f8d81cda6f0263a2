"""The loop hint of codegen/loops.py: a loop given `interleave` reaches LLVM as
`llvm.loop.interleave.count`, and the project's O3 pipeline honours it. gelu's recipe (a long
chain with one division an element) is emitted as Alpha emits an activation's loop, once
plain and once with RECIPE_VECTORS; the optimised IR's vector loop then holds RECIPE_VECTORS
vector divisions for the one it holds plain. The hint is speed only: the outputs are the
recipe's, element by element, in both (tests/test_ops_layers.py checks their bits)."""

from __future__ import annotations

import re

import pytest
from llvmlite import ir

from alpha_core.codegen.loops import F32, I64, PTR, RECIPE_VECTORS, for_range, load, store
from alpha_core.codegen.target import TARGETS, HostTarget, optimized_ir
from alpha_core.semantics import activations
from alpha_core.semantics.llvm_arith import LlvmArith


def _vector_divisions(interleave: int, cpu: str) -> int:
    module = ir.Module(name="loop_hints")
    host = TARGETS["x86_64"]
    module.triple = host.triple
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, PTR]), "gelu_loop")
    x, y = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    A = LlvmArith(b)
    for_range(
        b, 4096, lambda j: store(b, activations.gelu(A, load(b, x, j)), y, j), "u", interleave
    )
    b.ret_void()
    text = str(
        optimized_ir(module, HostTarget(host.name, host.triple, host.zig, cpu, host.features))
    )
    return len(re.findall(r"= fdiv <\d+ x float>", text))


@pytest.mark.parametrize("cpu", ["x86-64-v2", "x86-64-v4"])
def test_recipe_loops_run_interleaved(cpu: str) -> None:
    plain, hinted = _vector_divisions(1, cpu), _vector_divisions(RECIPE_VECTORS, cpu)
    assert plain >= 1
    assert hinted == RECIPE_VECTORS * plain, (plain, hinted)


def test_the_hint_names_itself_first() -> None:
    module = ir.Module(name="hint")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, I64]), "f")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    for_range(b, 8, lambda j: store(b, ir.Constant(F32, 1.0), fn.args[0], j), "a", 4)
    for_range(b, 8, lambda j: store(b, ir.Constant(F32, 2.0), fn.args[0], j), "b", 4)
    b.ret_void()
    text = str(module)
    ids = re.findall(r"!llvm\.loop (!\d+)", text)
    assert len(ids) == 2 and ids[0] == ids[1]  # one hint per count, shared by the module
    assert re.search(rf"{ids[0]} = !{{ {ids[0]}, !\d+ }}", text)
    assert '!"llvm.loop.interleave.count", i32 4' in text
