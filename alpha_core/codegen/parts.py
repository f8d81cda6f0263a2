"""A long straight line of calls, emitted as calls of part functions of at most PART_CALLS.

A kernel of many nodes calls one function per node (graph_emit.OUTLINE_FROM), and the kernels
make a call per parameter (its initialiser, its gradient's copy and chain pass): thousands of
calls in one function. LLVM's machine scheduler does work per scheduling region in proportion
to the function's virtual registers, and both grow with the calls, so its time grew with their
square (10,000 bias vectors: 36 s of a 47 s build, and cutting the function into basic blocks
made it slower, not faster). A run of more than PART_CALLS calls is cut into internal functions
of at most PART_CALLS calls each, called in order: the same calls with the same arguments in the
same order, so the same arithmetic and the same bits, and LLVM's time grows with the calls.

A call's arguments are whatever the caller computed: constants and globals are used as they
are, an address a constant offset from another (`gep(params, offset)`) is computed again
inside the part, and any other value (a function argument, a loaded pointer) is passed to the
part as an argument of its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

PART_CALLS = 256  # calls in one part function


class CallRun:
    """Calls recorded in order and emitted by `flush` under `b`: as they are when there are at
    most PART_CALLS of them, else as calls of part functions named after `name`."""

    def __init__(self, module: ir.Module, b: ir.IRBuilder, name: str) -> None:
        self.module = module
        self.b = b
        self.name = name
        self.pending: list[tuple[ir.Function, list[ir.Value]]] = []
        self.parts = 0  # part functions made, for tests and benches

    def call(self, fn: ir.Function, args: Sequence[ir.Value]) -> None:
        self.pending.append((fn, list(args)))

    def flush(self) -> None:
        """Emit every recorded call, in order, at the builder's position."""
        pending, self.pending = self.pending, []
        if len(pending) <= PART_CALLS:
            for fn, args in pending:
                self.b.call(fn, args)
            return
        for start in range(0, len(pending), PART_CALLS):
            self._part(pending[start : start + PART_CALLS])

    def _part(self, calls: list[tuple[ir.Function, list[ir.Value]]]) -> None:
        roots: dict[int, ir.Value] = {}
        for _, args in calls:
            for arg in args:
                _roots(arg, roots)
        passed = list(roots.values())
        fn = ir.Function(
            self.module,
            ir.FunctionType(ir.VoidType(), [v.type for v in passed]),
            self.module.get_unique_name(f"{self.name}.part"),
        )
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        fn.attributes.add("noinline")  # inlined back, the caller would be one function again
        self.parts += 1
        inner = ir.IRBuilder(fn.append_basic_block("entry"))
        local: dict[int, ir.Value] = {id(v): a for v, a in zip(passed, fn.args, strict=True)}
        for callee, args in calls:
            inner.call(callee, [_rebuilt(inner, arg, local) for arg in args])
        inner.ret_void()
        self.b.call(fn, passed)


def _fixed(v: ir.Value) -> bool:
    """A value the part uses as it is: a constant, or a global's or function's address."""
    return isinstance(v, ir.Constant | ir.GlobalValue)


def _offset(v: ir.Value) -> bool:
    """An address a constant offset from another value, computed again inside the part."""
    return isinstance(v, ir.GEPInstr) and all(isinstance(i, ir.Constant) for i in v.indices)


def _roots(v: ir.Value, roots: dict[int, ir.Value]) -> None:
    if _fixed(v):
        return
    if _offset(v):
        assert isinstance(v, ir.GEPInstr)
        _roots(v.pointer, roots)
        return
    roots.setdefault(id(v), v)


def _rebuilt(b: ir.IRBuilder, v: ir.Value, local: dict[int, ir.Value]) -> ir.Value:
    if _fixed(v):
        return v
    found = local.get(id(v))
    if found is not None:
        return found
    assert isinstance(v, ir.GEPInstr) and _offset(v)
    made = b.gep(
        _rebuilt(b, v.pointer, local),
        list(v.indices),
        inbounds=v.inbounds,
        source_etype=v.source_etype,
    )
    local[id(v)] = made
    return made
