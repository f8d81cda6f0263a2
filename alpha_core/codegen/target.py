"""Host targets and turning an LLVM module into object code for one of them."""

from __future__ import annotations

import dataclasses
import difflib
import functools
import subprocess
import sys
from dataclasses import dataclass

import llvmlite.binding as llvm
from llvmlite import ir


@dataclass(frozen=True)
class HostTarget:
    name: str  # as a pairing spells it
    triple: str  # LLVM
    zig: str  # zig cc -target
    cpu: str
    features: str


TARGETS = {
    # x86-64-v2 (SSE4.2) runs on every x86-64 server of the last decade; vector width never
    # changes the bits, since only independent outputs are computed side by side.
    "x86_64": HostTarget(
        "x86_64", "x86_64-unknown-linux-musl", "x86_64-linux-musl", "x86-64-v2", ""
    ),
    "aarch64": HostTarget(
        "aarch64", "aarch64-unknown-linux-musl", "aarch64-linux-musl", "generic", "+neon"
    ),
}


@functools.cache
def _init() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


# LLVM lists a target's CPUs when a target machine is made for the CPU `help`; it prints them on
# the process's own stderr (not Python's), so the list is read from a child interpreter. An
# unknown CPU is not an error to LLVM: it warns once per target machine and then aborts the
# process on x86-64 ("64-bit code requested on a subtarget that doesn't support it").
_LIST_CPUS = """
import llvmlite.binding as llvm
llvm.initialize_all_targets()
llvm.Target.from_triple(%r).create_target_machine(cpu="help", features=%r)
"""


@functools.cache
def known_cpus(target: str) -> tuple[str, ...]:
    """The CPU names LLVM knows for a target of TARGETS (empty if LLVM would not say)."""
    host = TARGETS[target]
    try:
        listed = subprocess.run(
            [sys.executable, "-c", _LIST_CPUS % (host.triple, host.features)],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=120,
            check=False,
        ).stderr
    except (OSError, subprocess.SubprocessError):
        return ()
    rest = listed.partition("Available CPUs for this target:")[2]
    names = []
    for line in rest.partition("Available features for this target:")[0].splitlines():
        name, dash, _ = line.strip().partition(" - ")
        if dash and name.strip():
            names.append(name.strip())
    return tuple(sorted(set(names)))


def cpu_problem(target: str, cpu: str) -> str | None:
    """Why `cpu` is not a CPU of `target` (the nearest names first, then every valid one), or
    None when LLVM knows it."""
    names = known_cpus(target)
    if not names or cpu in names:
        return None
    near = difflib.get_close_matches(cpu, names, n=4, cutoff=0.5)
    arch = TARGETS[target].triple.split("-")[0]
    here = llvm.get_host_cpu_name()
    if cpu == "native" and here in names and llvm.get_process_triple().split("-")[0] == arch:
        # builds are reproducible, so they name their CPU: offer this machine's own
        near = [f"{here} (this machine)", *[n for n in near if n != here]]
    hint = f"; did you mean {', '.join(near)}?" if near else ";"
    return (
        f"--cpu {cpu} is not a CPU LLVM knows for target {target}{hint} the {len(names)} "
        f"valid ones: {', '.join(names)}"
    )


def _machine(target: HostTarget) -> llvm.TargetMachine:
    _init()
    t = llvm.Target.from_triple(target.triple)
    # x86-64's medium code model: arrays over 64 KiB (a deep model's kernel buffers) go to
    # .lbss, addressed with 64 bits, so the buffers of a model may pass 2 GiB while the code and
    # the runtime's own data keep the small model's 32-bit addresses
    model = "medium" if target.triple.startswith("x86_64") else "default"
    features = target.features
    if target.cpu == "x86-64-v4":
        # LLVM's x86-64-v4 tuning vectorises loops 8 lanes wide (256-bit), for CPUs that slowed
        # their clock for 512-bit work; the micro-kernel runs 512-bit vectors anyway (it names
        # them), so the loops (gelu's tanh, softmax's exp, Adam) take the 16 lanes too. Lanes
        # hold independent outputs: the width never changes a bit
        features = ",".join(f for f in (features, "-prefer-256-bit") if f)
    return t.create_target_machine(
        cpu=target.cpu, features=features, opt=3, reloc="pic", codemodel=model
    )


def optimized_ir(module: ir.Module | str, target: HostTarget) -> llvm.ModuleRef:
    """`module`, or its text when the caller has it already (the text of a large module takes
    as long to make as LLVM takes to read it)."""
    tm = _machine(target)
    mod = llvm.parse_assembly(module if isinstance(module, str) else str(module))
    mod.triple = target.triple
    mod.data_layout = str(tm.target_data)
    mod.verify()
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return mod


def object_code(module: ir.Module | str, target: HostTarget) -> bytes:
    """Verified, optimised at O3 (no fast-math anywhere), emitted as an ELF object."""
    mod = optimized_ir(module, target)
    return bytes(_machine(target).emit_object(mod))


def assembly(module: ir.Module | str, target: HostTarget) -> str:
    """The assembly `object_code` assembles: what a test reads where this CPU cannot run it."""
    return str(_machine(target).emit_assembly(optimized_ir(module, target)))


@functools.cache
def fuses(target: str, cpu: str) -> bool:
    """Whether `cpu` of `target` has a fused multiply-add instruction: LLVM's code for one
    `llvm.fma.f32` on it is the instruction itself rather than a call to the C library's fmaf
    (what LLVM emits for a CPU without one, x86-64-v2 among them)."""
    host = dataclasses.replace(TARGETS[target], cpu=cpu)
    f32 = ir.FloatType()
    module = ir.Module(name="fma_probe")
    module.triple = host.triple
    fn = ir.Function(module, ir.FunctionType(f32, [f32] * 3), "probe")
    fma = ir.Function(module, ir.FunctionType(f32, [f32] * 3), "llvm.fma.f32")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.ret(b.call(fma, list(fn.args)))
    asm = _machine(host).emit_assembly(optimized_ir(module, host))
    return "fmaf" not in asm
