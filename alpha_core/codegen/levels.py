"""One executable, every x86-64 level: the kernels compiled once per level and a dispatcher that
picks, at start-up, the widest level the CPU (and the OS's saved register state) supports.

A default x86-64 build carries the kernels three times, for x86-64-v2 (SSE4.2, 4 lanes), v3
(AVX2, 8 lanes) and v4 (AVX-512, 16 lanes). Each copy's exported symbols get the level's suffix
(`alpha_leaf_grad__v3`); the dispatcher (C, generated here) defines the unsuffixed symbols the
runtime calls (runtime/alpha_program.h) as calls through the chosen level's table. Vector width
never changes a bit (only independent outputs are computed side by side, and no level contracts
a multiply and an add), so the choice changes the speed and nothing else; tests force each
level (`ALPHA_CPU_LEVEL`) and compare the parameters' SHA-256.

What the levels share is defined once, by the dispatcher: the variables the runtime writes and
the kernels read (`alpha_direct_rows`, `alpha_clip_sqsum`: each copy reads them as externals),
the clipping hook (a pointer to the runtime's clip_norm_run), the scratch each worker needs
(the largest of the copies'), and the thread hook (the chosen copy's). A build pinned with
`--cpu` carries one copy and a dispatcher that only names its level.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

import llvmlite.binding as llvm

# the x86-64 levels a default build carries, narrowest first, and each one's suffix
X86_LEVELS = ("x86-64-v2", "x86-64-v3", "x86-64-v4")
LEVEL_VARIABLE = "ALPHA_CPU_LEVEL"
# levels whose copy is optimised for size: x86-64-v2 is the fallback for CPUs without AVX2
# (before 2013, and some low-end parts since), where the kernels unrolled for speed took as much
# room as the v3 and v4 copies together; built for size they take a fifth of it
SMALL = frozenset({"x86-64-v2"})
# levels carried only when the kernels have tasks (a product on the packed GEMM): without them
# the v4 copy ran slower than the v3 one on this project's small examples (digits_cnn 2,143
# against 1,675 us a step, the transformer example 1,119 against 1,004; docs/performance.md),
# while a model whose products take the GEMM is fastest at v4
TASKS_ONLY = frozenset({"x86-64-v4"})  # names a level to use instead of the widest (for tests)

# the kernels' functions (runtime/alpha_program.h), with their C prototypes for the dispatcher
KERNELS: dict[str, tuple[str, str, str]] = {
    # name: (return type, parameters, arguments)
    "alpha_init_params": ("void", "float *params", "params"),
    "alpha_leaf_grad": (
        "float",
        "const float *params, const float *x, const int32_t *y_class, const float *y_reg, "
        "float *grad",
        "params, x, y_class, y_reg, grad",
    ),
    "alpha_leaf_grad_chain": (
        "float",
        "const float *params, const float *x, const int32_t *y_class, const float *y_reg, "
        "float *grad, const float *const *chain, uint32_t n",
        "params, x, y_class, y_reg, grad, chain, n",
    ),
    "alpha_leaves_grad": (
        "float",
        "const float *params, const float *x, const int32_t *y_class, const float *y_reg, "
        "float *grad, uint32_t count",
        "params, x, y_class, y_reg, grad, count",
    ),
    "alpha_leaves_batch": ("int", "uint32_t count", "count"),
    "alpha_apply": (
        "void",
        "float *params, float *state, const float *grad_sum, uint32_t step, uint64_t start, "
        "uint64_t count",
        "params, state, grad_sum, step, start, count",
    ),
    "alpha_apply_pair": (
        "void",
        "float *params, float *state, const float *left, const float *right, uint32_t step, "
        "uint64_t start, uint64_t count",
        "params, state, left, right, step, start, count",
    ),
    "alpha_forward": ("void", "const float *params, const float *x, float *out", "params, x, out"),
    "alpha_grad_sqsum": (
        "float",
        "const float *grad_sum, uint64_t lo, uint64_t hi",
        "grad_sum, lo, hi",
    ),
}
# kernels that run once (the initialiser): every level calls the narrowest copy's, and the
# others' are dropped by LLVM (made internal and unused), which keeps the executable small
ONCE = ("alpha_init_params",)
SCRATCH = "alpha_scratch_floats"
HOOK = "alpha_threads_hook"
# variables the runtime writes and the kernels read: one of each, defined by the dispatcher,
# which every copy reads as an external (name: its C type)
SHARED = {"alpha_direct_rows": "int64_t", "alpha_clip_sqsum": "float", "alpha_gemm_fold": "int64_t"}
# constant pointers to a runtime function, the same in every copy: the dispatcher's points there
POINTERS = {"alpha_clip_hook": ('#include "schedule.h"', "clip_hook_fn")}


# levels without FMA: a system of `arithmetic fused` carries none of them, and its executable
# refuses a CPU that runs none of the levels it carries (runtime/cpu_level.c)
NO_FMA = frozenset({"x86-64-v2"})


def carried(fused: bool) -> tuple[str, ...]:
    """The levels a default x86-64 build carries, narrowest first."""
    return tuple(v for v in X86_LEVELS if not (fused and v in NO_FMA))


class UnknownExport(Exception):
    """A kernels module defines an external symbol the dispatcher does not know: a new kernel
    must be added to KERNELS, or it would be called unsuffixed and fail to link."""


def suffix_of(level: str) -> str:
    """`x86-64-v3` → `__v3`."""
    return "__" + level.rsplit("-", 1)[-1]


@dataclass(frozen=True)
class LevelCopy:
    """One level's kernels as the dispatcher sees them."""

    level: str
    kernels: tuple[str, ...]  # the KERNELS it defines, in module order
    scratch: int  # floats of scratch per worker (0: no tasks)
    hook: bool  # it defines a thread hook
    shared: tuple[tuple[str, str], ...]  # SHARED variables it defines, with their initial value
    pointers: tuple[tuple[str, str], ...]  # POINTERS it defines, with the function each names


_DEFINE = re.compile(r'^define (?!(?:internal|private) )[^@\n]*@"?([\w.$]+)"?\(', re.M)
_GLOBAL = re.compile(r'^@"?([\w.$]+)"? = (?!(?:internal|private) )[^\n]*', re.M)


def _shared_definition(name: str) -> re.Pattern[str]:
    return re.compile(rf'^@"?{name}"? = (?:dso_local )?global (?:i64|float) ([^,\n]+)', re.M)


def _c_value(ctype: str, text: str) -> str:
    """An LLVM constant (`96`, `0.000000e+00`, `0x0`, `0x3FF0000000000000`) as a C literal."""
    text = text.strip()
    if ctype == "int64_t":
        return str(int(text))
    if text.startswith("0x"):  # LLVM writes a float's bits as a double's, in hex
        return repr(struct.unpack(">d", int(text, 16).to_bytes(8, "big"))[0])
    return repr(float(text))


def copy_of(text: str, level: str) -> LevelCopy:
    """What the dispatcher needs of the kernels module `text` built for `level`, read from its
    text (so that a cached object needs no parse): its kernels, scratch, hook, shared variables
    and pointers."""
    kernels = [name for name in _DEFINE.findall(text)]
    unknown = [name for name in kernels if name not in KERNELS]
    if unknown:
        raise UnknownExport(f"the kernels define {unknown}, which no dispatcher knows")
    scratch, hook = 0, False
    shared: list[tuple[str, str]] = []
    pointers: list[tuple[str, str]] = []
    for m in _GLOBAL.finditer(text):
        name, line = m.group(1), m.group(0)
        if line.split(" = ", 1)[1].startswith("external"):
            continue
        if name == SCRATCH:
            scratch = int(line.rsplit(" ", 1)[-1])
        elif name == HOOK:
            hook = True
        elif name in SHARED:
            found = _shared_definition(name).match(line)
            assert found is not None, line
            shared.append((name, _c_value(SHARED[name], found.group(1))))
        elif name in POINTERS:
            target = re.search(r'constant ptr @"?([\w.$]+)"?', line)
            assert target is not None, line
            pointers.append((name, target.group(1)))
        else:
            raise UnknownExport(f"the kernels define `{name}`, which no dispatcher knows")
    return LevelCopy(level, tuple(kernels), scratch, hook, tuple(shared), tuple(pointers))


def renamed(text: str, level: str, narrowest: str = X86_LEVELS[0]) -> str:
    """The kernels module `text` with its external definitions suffixed for `level`, and
    the SHARED variables made externals the dispatcher defines; `narrowest`, the first level
    the build carries, keeps the ONCE kernels every level calls."""
    for name, ctype in SHARED.items():
        ir_type = "i64" if ctype == "int64_t" else "float"
        text = _shared_definition(name).sub(f"@{name} = external global {ir_type}", text)
    module = llvm.parse_assembly(text)
    suffix = suffix_of(level)
    for f in module.functions:
        if not f.is_declaration and f.linkage == llvm.Linkage.external:
            if level != narrowest and f.name in ONCE:
                f.linkage = llvm.Linkage.internal  # the narrowest copy's runs instead
            f.name = f.name + suffix
    for g in module.global_variables:
        if not g.is_declaration and g.linkage == llvm.Linkage.external:
            g.name = g.name + suffix
    return str(module)


def dispatcher_c(copies: list[LevelCopy]) -> str:
    """C defining the runtime's kernel symbols as calls into the chosen copy, and
    `alpha_cpu_level`: the level chosen at start-up from CPUID (or ALPHA_CPU_LEVEL)."""
    names = copies[0].kernels
    if any(c.kernels != names for c in copies):
        raise UnknownExport("the levels' kernels differ: " + ", ".join(map(str, copies)))
    out = [
        "/* Generated by alpha_core/codegen/levels.py: the kernels of every x86-64 level, one",
        " * chosen at start-up (runtime/cpu_level.h). */",
        "#include <stdint.h>",
        '#include "cpu_level.h"',
        "",
    ]
    for c in copies:
        s = suffix_of(c.level)
        for name in names:
            if name in ONCE and c is not copies[0]:
                continue
            ret, params, _ = KERNELS[name]
            out.append(f"{ret} {name}{s}({params});")
        if c.hook:
            out.append(f"extern void (*const {HOOK}{s})(uint32_t);")
    out.append("")
    out.append("struct kernels {")
    for name in names:
        ret, params, _ = KERNELS[name]
        out.append(f"    {ret} (*{name.removeprefix('alpha_')})({params});")
    out.append("    void (*const *hook)(uint32_t);")
    out.append("};")
    out.append(f"static const struct kernels levels[{len(copies)}] = {{")
    for c in copies:
        s = suffix_of(c.level)
        once = suffix_of(copies[0].level)
        fields = [f"{name}{once if name in ONCE else s}" for name in names]
        fields.append(f"&{HOOK}{s}" if c.hook else "0")
        out.append("    {" + ", ".join(fields) + "},")
    out.append("};")
    level_names = ", ".join(f'"{c.level}"' for c in copies)
    out.append(f"static const char *const level_names[{len(copies)}] = {{{level_names}}};")
    out.append("static const struct kernels *chosen = &levels[0];")
    out.append("")
    out.append("const char *alpha_cpu_level(const char **refused)")
    out.append("{")
    out.append(f"    int i = cpu_level_choose(level_names, {len(copies)}, refused);")
    out.append("    chosen = &levels[i < 0 ? 0 : i];")
    out.append("    return i < 0 ? 0 : level_names[i];")
    out.append("}")
    out.append("")
    for name in names:
        ret, params, args = KERNELS[name]
        call = f"chosen->{name.removeprefix('alpha_')}({args})"
        body = f"return {call};" if ret != "void" else f"{call};"
        out.append(f"{ret} {name}({params}) {{ {body} }}")
    scratch = max(c.scratch for c in copies)
    out.append(f"const uint64_t {SCRATCH} = {scratch}u;")
    out.append("static void hook(uint32_t threads)")
    out.append("{")
    out.append("    if (chosen->hook && *chosen->hook)")
    out.append("        (*chosen->hook)(threads);")
    out.append("}")
    out.append(f"void (*const {HOOK})(uint32_t) = hook;")
    for name, value in dict(p for c in copies for p in c.shared).items():
        out.append(f"{SHARED[name]} {name} = {value};")
    for name, target in dict(p for c in copies for p in c.pointers).items():
        include, ctype = POINTERS[name]
        out[4:4] = [include]
        out.append(f"{ctype} {target};")
        out.append(f"{ctype} *const {name} = {target};")
    return "\n".join(out) + "\n"


def pinned_c(level: str, needs: int = 0) -> str:
    """A build with one copy of the kernels (`--cpu`, or a target with one level): the level's
    name, and ALPHA_CPU_LEVEL naming another refused. `needs`: the x86-64 level (3 or 4) whose
    instructions that CPU's code may use (`needed_level`), which a CPU without them refuses by
    name at start-up rather than stopping at its first AVX instruction; 0 or 2: none."""
    return (
        "/* Generated by alpha_core/codegen/levels.py: kernels built for one CPU. */\n"
        '#include "cpu_level.h"\n'
        "const char *alpha_cpu_level(const char **refused)\n"
        "{\n"
        f'    return cpu_level_pinned("{level}", {needs}, refused);\n'
        "}\n"
    )


def needed_level(width: int, fma: bool) -> int:
    """The x86-64 level a CPU's code needs, from what LLVM makes of it: 4 where its vectors
    are 16 lanes (AVX-512), 3 where it has FMA (AVX2 and FMA come together on every CPU that
    has them), else 2. A CPU with AVX but neither (Sandy and Ivy Bridge) counts as 2: its code
    may still stop on a CPU without AVX."""
    return 4 if width == 16 else 3 if fma else 2
