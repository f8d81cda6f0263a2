"""A fused system is refused at build time for a CPU without a fused multiply-add.

`arithmetic fused` (docs/semantics.md, "Arithmetic") adds each term of a sum of products with
one correctly rounded fma. x86-64-v3 and v4, AArch64 and GPUs have the instruction; x86-64-v2
does not, and LLVM would call the C library's fmaf there, a software routine correct to the bit
but tens of times slower than the products it would serve. Alpha refuses instead of running
that slowly (docs/architecture.md): a build pinned with `--cpu` to a CPU without FMA is refused
`unsupported-on-target` before anything is compiled, and a default x86-64 build carries no
x86-64-v2 copy, so its executable refuses such a CPU at start-up (`cpu-level-unsupported`).
"""

from __future__ import annotations

from collections.abc import Iterable

from alpha_core.check.program import Program
from alpha_core.codegen.target import TARGETS, fuses
from alpha_core.diagnostics import Diagnostic


def arithmetic_refusals(
    program: Program, targets: Iterable[str], cpu: str | None
) -> list[Diagnostic]:
    """`unsupported-on-target` when the system is fused and `cpu` (given with --cpu) of one of
    `targets` has no fused multiply-add; none for an unfused system or a default build."""
    if not program.fused or not cpu:
        return []
    lacking = sorted({t for t in targets if t in TARGETS and not fuses(t, cpu)})
    return [
        Diagnostic(
            "unsupported-on-target",
            f"system `{program.name}` is of arithmetic fused, and --cpu {cpu} has no fused "
            f"multiply-add instruction for target {t}",
            None,
            help="build for a CPU with FMA (x86-64-v3 or later), or without --cpu: a default "
            "build carries the x86-64-v3 and v4 kernels and picks at start-up",
        )
        for t in lacking
    ]
