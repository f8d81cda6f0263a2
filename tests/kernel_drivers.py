"""The C every direct kernel test's driver starts with (tests/test_tree_tiles.py,
test_conv_gemm.py, test_gemm_layouts.py): the runtime's thread pool, a file of float32 read
into memory, and floats written back to a file; and the switch over shapes that each
driver's kernel function is."""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

PRELUDE = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "pool.h"

/* The floats of a file (their count in *n), with room past the end. */
static float *slurp(const char *path, long *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) exit(2);
    fseek(f, 0, SEEK_END);
    *n = ftell(f) / 4;
    fseek(f, 0, SEEK_SET);
    float *v = malloc((size_t)*n * 4 + 64);
    if (fread(v, 4, (size_t)*n, f) != (size_t)*n) exit(3);
    fclose(f);
    return v;
}

/* n floats to a file: 0, or 4 where it cannot be written. */
static int spill(const char *path, const float *v, long n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(v, 4, (size_t)n, f) != (size_t)n) return 4;
    fclose(f);
    return 0;
}
"""


def shape_switch(
    fn: ir.Function, shape: ir.Value, count: int, case: Callable[[ir.IRBuilder, int], None]
) -> None:
    """fn's body: a switch on `shape` (an i32) over cases 0 … count-1, each emitted by
    case(builder, i), then a return."""
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    done = fn.append_basic_block("done")
    switch = b.switch(shape, done)
    for i in range(count):
        block = fn.append_basic_block(f"s{i}")
        switch.add_case(ir.Constant(ir.IntType(32), i), block)
        b.position_at_end(block)
        case(b, i)
        b.branch(done)
    b.position_at_end(done)
    b.ret_void()
