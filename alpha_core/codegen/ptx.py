"""PTX for a GPU role: LLVM's NVPTX backend at a pinned ISA, and the lint that proves it exact.

The PTX is made for a baseline (`sm_80`, PTX ISA 7.8) so the driver's JIT runs it on sm_80,
sm_86, sm_90 and later cards. Its float arithmetic must be the host's: every f32 add, sub, mul,
div and sqrt rounds to nearest (`.rn`), nothing is approximate (`.approx`), flushes subnormals
(`.ftz`) or fuses (`fma`, `mad`), no atomics add, and no transcendental instruction appears (the
compiler's own exp/log/tanh are plain arithmetic). `lint_ptx` checks exactly that on the text.
A system of `arithmetic fused` declares its products' fused multiply-adds: there `fma.rn.f32`
(one correctly rounded fma, the host's `llvm.fma`) is allowed, and nothing else that fuses.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import llvmlite.binding as llvm
from llvmlite import ir

from alpha_core.codegen.gpu_kernels import PTX_TRIPLE

PTX_CPU = "sm_80"
PTX_ISA = "7.8"
_FEATURE = "+ptx78"


@functools.cache
def _machine() -> llvm.TargetMachine:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm.Target.from_triple(PTX_TRIPLE).create_target_machine(
        cpu=PTX_CPU, features=_FEATURE, opt=3
    )


def emit_ptx(module: ir.Module) -> str:
    """The module's PTX text; refuses (AssertionError) a version other than the pinned one,
    since LLVM falls back silently on an unknown PTX feature."""
    mod = llvm.parse_assembly(str(module))
    mod.verify()
    tm = _machine()
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    ptx = tm.emit_assembly(mod)
    if f".version {PTX_ISA}" not in ptx or f".target {PTX_CPU}" not in ptx:
        raise AssertionError(f"LLVM did not emit PTX {PTX_ISA} for {PTX_CPU}")
    return ptx


# float instructions that must carry `.rn`
_ROUNDED = ("add", "sub", "mul", "div", "sqrt")
_FORBIDDEN = (
    (re.compile(r"\.approx\b"), "an approximate instruction"),
    (re.compile(r"\.ftz\b"), "flushing subnormals to zero"),
    (re.compile(r"^\s*(fma|mad)\.\S*f(16|32|64)"), "a fused multiply-add"),
    (re.compile(r"^\s*(atom|red)\."), "an atomic update"),
    # rcp.rn.f32 is 1/x correctly rounded (IEEE), what div.rn.f32 gives; rcp.approx is not
    (re.compile(r"^\s*(ex2|lg2|sin|cos|rsqrt|tanh)\."), "a hardware transcendental"),
    (re.compile(r"^\s*rcp\.(?!rn\.f32)"), "a reciprocal not rounded to nearest"),
    (re.compile(r"\.f64\b"), "double precision"),
    # a min/max of two registers, or with a zero: its signed-zero rule is the hardware's, not
    # the select's (with a nonzero constant the two agree on every input, NaN included)
    (
        re.compile(r"^\s*(min|max)\.\S*f32\s+[^,]+,\s*(%r\d+,\s*%r\d+|.*0f[08]0000000)"),
        "a min/max, whose signed-zero rule is not the select's",
    ),
)
_FUSED_FMA = re.compile(r"^\s*(?:@%p\d+\s+)?fma\.rn\.f32\s")  # the one fma a fused system has
_F32_OP = re.compile(r"^\s*(?:@%p\d+\s+)?(add|sub|mul|div|sqrt)((?:\.\w+)*)\.f32\b")


@dataclass(frozen=True)
class LintProblem:
    line: int  # 1-based line of the PTX text
    text: str
    why: str


def lint_ptx(ptx: str, fused: bool = False) -> list[LintProblem]:
    """Every line of `ptx` whose arithmetic could differ from the host's, and why; `fused`:
    the system's arithmetic is fused, and `fma.rn.f32` is its own."""
    problems: list[LintProblem] = []
    for n, line in enumerate(ptx.splitlines(), start=1):
        code = line.split("//", 1)[0]
        if not code.strip():
            continue
        declared = fused and _FUSED_FMA.match(code) is not None
        for pattern, why in _FORBIDDEN:
            if pattern.search(code) and not declared:
                problems.append(LintProblem(n, line.strip(), why))
        m = _F32_OP.match(code)
        if m and ".rn" not in m.group(2).split("."):
            if ".rn" not in m.group(2):
                problems.append(LintProblem(n, line.strip(), f"{m.group(1)}.f32 without .rn"))
    return problems


def kernel_names(ptx: str) -> list[str]:
    """The `.entry` points of the PTX, in order."""
    return re.findall(r"^\.visible \.entry (\w+)\(", ptx, flags=re.MULTILINE)
