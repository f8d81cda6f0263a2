"""The C tables of a GPU role (runtime/gpu_program.h): its PTX, buffers and launches."""

from __future__ import annotations

from alpha_core.codegen.gpu_kernels import GpuLayout, Launch
from alpha_core.codegen.program_c import _c_string

ENTRIES = ("init", "leaf", "apply", "forward", "sqsum", "adds")


def _ptx_literal(ptx: str) -> str:
    """The PTX text as one C string literal, a line per line (NUL-terminated by C)."""
    lines = ptx.splitlines(keepends=True) or [""]
    return "\n".join("    " + _c_string(line) for line in lines)


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def breakdown(layout: GpuLayout) -> str:
    """The device memory by kind, largest first: one line for a memory-admission refusal."""
    kinds: dict[str, int] = {}
    for b in layout.buffers:
        kind = "intermediates" if "%" in b.what else b.what
        kinds[kind] = kinds.get(kind, 0) + b.bytes
    parts = sorted(kinds.items(), key=lambda kv: -kv[1])
    return ", ".join(f"{k} {_size(v)}" for k, v in parts)


def gpu_program_c(
    layout: GpuLayout,
    ptx: str,
    profile: str,
    shadow: bool,
    uuid: str = "",
    index: int = 0,
) -> str:
    """ALPHA_GPU (and, for the shadow, ALPHA_SHADOW_KERNELS) for one GPU role's build."""
    launches: list[Launch] = []
    entries: dict[str, tuple[int, int]] = {}
    for name in ENTRIES:
        seq = getattr(layout, name)
        entries[name] = (len(launches), len(seq))
        launches.extend(seq)
    args: list[tuple[int, int]] = []
    rows: list[str] = []
    for launch in launches:
        rows.append(
            f"    {{{launch.kernel}, {len(args)}, {len(launch.args)}, 0, {launch.threads}}},"
        )
        args.extend(launch.args)
    out = ['#include "gpu_program.h"', "#include <stddef.h>", ""]
    out.append("static const char ptx[] =\n" + (_ptx_literal(ptx) if ptx else '    ""') + ";")
    out.append("static const char *const names[] = {")
    out.extend(f"    {_c_string(k)}," for k in layout.kernels)
    out.append("};")
    out.append("static const uint8_t blockwise[] = {")
    out.append("    " + ", ".join(str(f) for f in layout.blockwise or [0]) + ",")
    out.append("};")
    out.append("static const uint64_t bytes[] = {")
    out.extend(f"    {b.bytes}u," for b in layout.buffers)
    out.append("};")
    out.append("static const char *const what[] = {")
    out.extend(f"    {_c_string(b.what)}," for b in layout.buffers)
    out.append("};")
    out.append("static const struct alpha_gpu_arg args[] = {")
    out.extend(f"    {{{buf}, 0, {off}u}}," for buf, off in args or [(0, 0)])
    out.append("};")
    out.append("static const struct alpha_gpu_launch launches[] = {")
    out.extend(rows or ["    {0, 0, 0, 0, 0},"])
    out.append("};")
    out.append("static const struct alpha_gpu_grad grads[] = {")
    out.extend(
        f"    {{{g.offset}u, {g.count}u, {g.buffer}, {float(g.value).hex()}f}},"
        for g in layout.grads
    )
    if not layout.grads:
        out.append("    {0, 0, -1, 0.0f},")
    out.append("};")

    def entry(name: str) -> str:
        first, count = entries[name]
        return f"{{{first}, {count}}}"

    if layout.sqsum:  # the clipping symbols the runtime's clip_norm.c and schedule.c use
        out.append('#include "schedule.h"')
        out.append("float alpha_clip_sqsum;")
        out.append("float alpha_grad_sqsum(const float *grad_sum, uint64_t lo, uint64_t hi)")
        out.append("{\n    return alpha_gpu_grad_sqsum(grad_sum, lo, hi);\n}")
        out.append("clip_hook_fn *const alpha_clip_hook = clip_norm_run;")
    out.append("const struct alpha_gpu_program ALPHA_GPU = {")
    out.append(f"    .profile = {_c_string(profile)},")
    out.append(f"    .shadow = {1 if shadow else 0},")
    out.append(f"    .uuid = {_c_string(uuid)},")
    out.append(f"    .index = {index},")
    out.append("    .ptx = ptx,")
    out.append(f"    .n_kernels = {len(layout.kernels)},")
    out.append("    .kernel_names = names,")
    out.append("    .blockwise = blockwise,")
    out.append(f"    .n_buffers = {len(layout.buffers)},")
    out.append("    .buffer_bytes = bytes,")
    out.append("    .buffer_what = what,")
    out.append("    .args = args,")
    out.append(f"    .n_args = {len(args)},")
    out.append("    .launches = launches,")
    for name in ENTRIES:
        out.append(f"    .{name} = {entry(name)},")
    out.append(f"    .n_grads = {len(layout.grads)},")
    out.append("    .grads = grads,")
    buffers = ["params", "x", "y_class", "y_reg", "state", "grad_sum", "scalars"]
    buffers += ["leaf_scalars", "norm", "sums", "constants", "tree_depth"]
    buffers += ["x_all", "y_class_all", "y_reg_all", "leaf_all"]
    for field in (*buffers, "loss", "out"):
        out.append(f"    .{field} = {getattr(layout, field)},")
    out.append(f"    .clip_sqsum = {'&alpha_clip_sqsum' if layout.sqsum else 'NULL'},")
    out.append(f"    .demand = {layout.device_bytes}u,")
    out.append(f"    .breakdown = {_c_string(breakdown(layout))},")
    out.append("};")
    if shadow:
        out.extend(f"void {k}(const uint64_t *args, uint64_t t);" for k in layout.kernels)
        out.append("const alpha_shadow_kernel ALPHA_SHADOW_KERNELS[] = {")
        out.extend(f"    {k}," for k in layout.kernels)
        out.append("};")
    return "\n".join(out) + "\n"
