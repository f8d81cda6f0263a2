"""What every kernel entry starts with: the function (its pointer arguments noalias), the
graph's parameters and inputs bound to its arguments, and plain copies between buffers. Shared
by the leaf, forward, learner and all-leaves kernels (kernels.py, leaves_kernel.py)."""

from __future__ import annotations

from llvmlite import ir

from alpha_core.check.program import Program
from alpha_core.codegen.loops import for_range, gep, i64, load, store
from alpha_core.ir.graph import Graph


def function(
    module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type], names: list[str]
) -> tuple[ir.Function, ir.IRBuilder]:
    """A function of the module, its arguments named, and a builder at its entry."""
    fn = ir.Function(module, ir.FunctionType(ret, args), name=name)
    fn.attributes.add("nounwind")
    for arg, arg_name in zip(fn.args, names, strict=True):
        arg.name = arg_name
        if isinstance(arg.type, ir.PointerType):
            arg.add_attribute("noalias")
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


def bind_params(
    b: ir.IRBuilder, graph: Graph, program: Program, params: ir.Value
) -> dict[int, ir.Value]:
    bound: dict[int, ir.Value] = {}
    for i, node in enumerate(graph.nodes):
        if node.op == "param":
            index = node.attr("index")
            assert isinstance(index, int)
            bound[i] = gep(b, params, i64(program.params[index].offset))
    return bound


def bind_inputs(
    graph: Graph, x: ir.Value, ycls: ir.Value | None, yreg: ir.Value | None
) -> dict[int, ir.Value]:
    bound: dict[int, ir.Value] = {}
    for i, node in enumerate(graph.nodes):
        if node.op == "input_x":
            bound[i] = x
        elif node.op == "label_class" and ycls is not None:
            bound[i] = ycls
        elif node.op == "label_reg" and yreg is not None:
            bound[i] = yreg
    return bound


def copy(b: ir.IRBuilder, src: ir.Value, dst: ir.Value, dst_offset: int, n: int) -> None:
    """dst[dst_offset + j] = src[j] for j < n."""
    for_range(b, n, lambda j: store(b, load(b, src, j), dst, b.add(j, i64(dst_offset))), "cp")
