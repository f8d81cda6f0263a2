"""The block-tiled product kernels of GPU roles (alpha_core/codegen/gpu_tiles.py).

- Bits: every tile, unfused and fused, run as the host shadow runs it (block by block, phase
  by phase, compiled for this CPU), gives the NumPy float32 reference's bits for `@` (terms
  k ascending from +0.0, a separate multiply and add or one fma), with edges and a K tail; and
  each convolution and batched product of the CNN and transformer examples gives under every
  tile the bits of the smallest tile, the one their shadow roles run end to end against the
  single-process SHA-256 (test_gpu_roles.py).
- Resources: `ptxas -v` for sm_80 and sm_90 puts every product kernel (each tile at 4096^3
  and at edges, each example's products) at 0 bytes of stack and spills, and the tiles'
  registers per thread are the ones recorded in docs/performance.md.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import EXAMPLES, program_of
from llvmlite import ir

from alpha_core.autodiff.reverse import training_step
from alpha_core.codegen.gpu_products import PRODUCT_OPS, matmul_product, product_of
from alpha_core.codegen.gpu_tiles import (
    BLOCK,
    TILES,
    Product,
    Tile,
    TiledKernel,
    product_module,
    table_arg,
)
from alpha_core.ir.graph import concrete
from alpha_core.semantics.numpy_fma import fma32

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import gpu_kernels  # noqa: E402  (bench/gpu_kernels.py: ptxas -v, static counts, the JIT)
from gpu_kernels import shadow_kernel  # noqa: E402


def _data(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Random float32 with signed zeros, subnormals and values that cancel."""
    x = rng.standard_normal(shape).astype(np.float32)
    flat = x.reshape(-1)
    picks = rng.integers(0, flat.size, size=max(1, flat.size // 16))
    flat[picks[0::3]] = -0.0
    flat[picks[1::3]] = np.float32(1e-41) * rng.choice([-1, 1])
    flat[picks[2::3]] = rng.choice([-1e20, 1e20, 3.0]).astype(np.float32)
    return x


def reference(a: np.ndarray, w: np.ndarray, fused: bool) -> np.ndarray:
    """out[r, c] = Σ_k a[r, k] · w[k, c], k ascending from +0.0, in float32."""
    acc = np.zeros((a.shape[0], w.shape[1]), dtype=np.float32)
    with np.errstate(all="ignore"):
        for k in range(a.shape[1]):
            col, row = a[:, k : k + 1], w[k : k + 1, :]
            acc = fma32(col, row, acc) if fused else (acc + col * row).astype(np.float32)
    return acc


@pytest.mark.parametrize("fused", [False, True], ids=["unfused", "fused"])
@pytest.mark.parametrize("tile", TILES, ids=[t.name for t in TILES])
def test_each_tile_gives_the_references_bits(tile: Tile, fused: bool) -> None:
    rng = np.random.default_rng(29)
    # edges in both directions, a K tail for every BK, and more than one block each way
    m, n, k = tile.bm + 37, tile.bn + 11, 3 * tile.bk + 5
    a, w = _data(rng, (m, k)), _data(rng, (k, n))
    out = np.full((m, n), np.nan, dtype=np.float32)
    shadow_kernel(matmul_product(m, n, k), tile, fused)(out, a, w)
    expected = reference(a, w, fused)
    assert out.view(np.uint32).tobytes() == expected.view(np.uint32).tobytes()


def _products(name: str, tmp: Path) -> list[tuple[str, Product, list[tuple[int, ...]]]]:
    """The first node of each convolution and batched-product op in the example's step."""
    text = (EXAMPLES / f"{name}.alpha").read_text().replace('"data/', f'"{EXAMPLES}/data/')
    program = program_of(text, tmp / f"{name}.alpha")
    graph = training_step(program).graph
    found: dict[str, tuple[str, Product, list[tuple[int, ...]]]] = {}
    for node in graph.nodes:
        if node.op not in PRODUCT_OPS or node.op == "matmul":
            continue
        shapes = [concrete(graph[j].shape, program.leaf_size) for j in node.inputs]
        product = product_of(node, concrete(node.shape, program.leaf_size), shapes)
        assert product is not None
        found.setdefault(node.op, (node.op, product, shapes))
    return list(found.values())


@pytest.mark.parametrize("name", ["digits_cnn", "transformer"])
def test_convolutions_and_batched_products_agree_under_every_tile(
    name: str, tmp_path: Path
) -> None:
    rng = np.random.default_rng(7)
    products = _products(name, tmp_path)
    assert {op for op, _, _ in products} >= (
        {"conv2d", "conv2d_dx", "conv2d_dw"} if name == "digits_cnn" else {"bmatmul"}
    )
    for fused in (False, True):
        for op, product, shapes in products:
            ins = [_data(rng, s) for s in shapes]
            outs = []
            for tile in TILES:
                out = np.full(product.batch * product.m * product.n, np.nan, dtype=np.float32)
                shadow_kernel(product, tile, fused)(out, ins[0], ins[1])
                outs.append(out.view(np.uint32).tobytes())
            assert not np.isnan(np.frombuffer(outs[-1], dtype=np.float32)).all(), op
            assert len(set(outs)) == 1, (name, op, fused)


def test_every_product_kernel_has_no_local_memory_and_the_recorded_registers() -> None:
    tiles = gpu_kernels.tile_rows()
    examples = gpu_kernels.example_rows()
    assert len(tiles) == 2 * 2 * len(TILES) and len(examples) >= 10
    for row in tiles + examples:
        for arch, res in row.resources.items():
            assert 0 < res.registers <= 255 and res.shared > 0, (row.what, arch, res)
    for row in examples:  # every kernel of the examples: no local memory on either arch
        assert gpu_kernels.local_bytes(row) == "0 / 0", (row.what, row.resources)
    # the tiles' registers and local memory, as docs/performance.md records them: none on
    # sm_90 (the H200 measured); sm_80's ptxas keeps 8 bytes in two unfused 4096^3 tiles
    doc = (ROOT / "docs" / "performance.md").read_text()
    for row in tiles:
        arith = "fused" if row.fused else "unfused"
        assert gpu_kernels.local_bytes(row).endswith("/ 0"), (row.what, row.resources)
        pattern = (
            rf"\| {re.escape(row.what)} \| {row.tile.name} \([^|]*\) \| {arith} \| "
            rf"(\d+) / (\d+) \| ([^|]*) \|"
        )
        found = re.search(pattern, doc)
        assert found, f"docs/performance.md records no row for {row.what} {row.tile.name} {arith}"
        recorded = (int(found.group(1)), int(found.group(2)), found.group(3).strip())
        measured = (
            *(row.resources[a].registers for a in gpu_kernels.ARCHES),
            gpu_kernels.local_bytes(row),
        )
        assert recorded == measured, (row.what, row.tile.name, arith, recorded, measured)


def test_long_sums_over_few_outputs_take_the_deep_stages() -> None:
    from alpha_core.codegen.gpu_tiles import LONG_K, tile_for

    names = {t.name: t for t in TILES}
    # a convolution's weight gradient: 288 sums of 43,264 terms, two blocks on an H200
    assert tile_for(1, 32, 9, 132, 43264) == names["t16k"]
    assert tile_for(1, 32, 9, 132, LONG_K - 1) == names["t16"]  # short sums keep t16
    assert tile_for(1, 1024, 1024, 132, 4096) == names["t64"]  # a full card keeps its tile
    assert tile_for(1, 4096, 4096, 132, 4096) == names["t128"]
    assert tile_for(1, 512, 512, 132, 4096) == names["t32"]


def test_a_tiled_kernel_loads_a_fraction_of_the_naive_kernels_bytes() -> None:
    big = matmul_product(4096, 4096, 4096)
    t128 = TILES[0]
    assert gpu_kernels.global_bytes_per_muladd(big, t128) == pytest.approx(1 / 16)
    assert t128.global_bytes_per_muladd == pytest.approx(1 / 16)  # 8 B / 128
    assert gpu_kernels.NAIVE_BYTES / gpu_kernels.global_bytes_per_muladd(big, t128) == 128
    assert all(t.bm // t.tm * (t.bn // t.tn) == BLOCK for t in TILES)


_OPS = {"add": int.__add__, "mul": int.__mul__, "and": int.__and__, "xor": int.__xor__}


def _value(v: ir.Value, counter: int | None) -> int:
    """An emitted index's value: a constant, or an expression of the loop's counter (its phi)."""
    if isinstance(v, ir.Constant):
        return int(v.constant)
    if isinstance(v, ir.PhiInstr):
        assert counter is not None, v
        return counter
    assert isinstance(v, ir.Instruction) and v.opname in _OPS, v
    left, right = (_value(x, counter) for x in v.operands)
    return _OPS[v.opname](left, right)


def _expanded(kernel: TiledKernel) -> list[tuple[str, int | None]]:
    """The phases a kernel's block runs, in order, its steady loop unrolled, each operand's
    value (fetch: its first k; put and compute: the buffer)."""
    schedule, out, i = kernel.schedule, [], 0
    while i < len(schedule):
        phase, operand = schedule[i]
        if phase != "loop":
            out.append((phase, None if operand is None else _value(operand, None)))
            i += 1
            continue
        end = next(j for j in range(i, len(schedule)) if schedule[j][0] == "end")
        for s in range(operand):
            for ph, op in schedule[i + 1 : end]:
                out.append((ph, None if op is None else _value(op, s)))
        i = end + 1
    return out


@pytest.mark.parametrize("tile", TILES, ids=[t.name for t in TILES])
def test_every_stage_of_a_tiled_kernel_is_fenced_by_barriers(tile: Tile) -> None:
    """What the shadow cannot show is a race: a thread reading a shared tile before every
    thread has written it, or overwriting it while another still reads it. The kernel keeps
    two buffers of each tile, stage s in buffer s % 2: stage s + 1 is read from global memory
    before stage s is computed and stored after it. Over the schedule the emitter followed
    (steady loop unrolled), for K with only a tail, one stage, full stages and a tail:
    between two barriers no buffer is both written and read; every stage is computed once, in
    order, from the buffer its own elements were stored into, with a barrier in between; and
    a thread's staged loads are stored before the next stage's loads replace them."""
    from alpha_core.codegen.ptx import emit_ptx

    for k in (tile.bk - 3, tile.bk, 2 * tile.bk + 3, 5 * tile.bk):
        product = matmul_product(tile.bm + 3, tile.bn + 5, k)
        module = ir.Module(name="fence")
        module.triple = "nvptx64-nvidia-cuda"
        kernel = TiledKernel(module, product, tile, True, False)
        kernel.emit("alpha_product", table_arg)
        events = _expanded(kernel)
        stages = -(-k // tile.bk)
        computed: list[int] = []
        segment_reads: set[int] = set()
        segment_writes: set[int] = set()
        holds: dict[int, tuple[int, bool]] = {}  # buffer: (stage stored, fenced since)
        staged: int | None = None  # the stage a thread's registers hold, not yet stored
        for phase, operand in events:
            if phase == "barrier":
                segment_reads, segment_writes = set(), set()
                holds = {u: (st, True) for u, (st, _) in holds.items()}
            elif phase == "fetch":
                assert staged is None and operand is not None, (k, events)  # stored first
                assert operand % tile.bk == 0, (k, events)
                staged = operand // tile.bk
            elif phase == "put":
                assert operand is not None and staged is not None, (k, events)
                segment_writes.add(operand)
                holds[operand] = (staged, False)
                staged = None
            elif phase == "compute":
                assert operand is not None, (k, events)
                stage, fenced = holds[operand]
                assert fenced and stage == len(computed), (k, operand, events)
                computed.append(stage)
                segment_reads.add(operand)
            assert not segment_reads & segment_writes, (k, phase, operand, events)
        assert staged is None and computed == list(range(stages)), (k, events)
    # the PTX holds both buffers of both tiles, and barriers
    ptx = emit_ptx(product_module(matmul_product(tile.bm, tile.bn, 3 * tile.bk), tile, True, False))
    for operand, elements in (("a", tile.bk * tile.bm), ("b", tile.bk * tile.bn)):
        assert f"alpha_product_$_{operand}[{2 * 4 * elements}]" in ptx, operand
    assert "bar.sync" in ptx
