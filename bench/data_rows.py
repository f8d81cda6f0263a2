"""How fast the checker reads every row of a table (alpha_core/data/csv_rows.py), against NumPy's
`loadtxt` reading the same file into float32 (a peer that parses and converts every field too,
without the runtime's grammar or messages).

    .venv/bin/python bench/data_rows.py        # [--copies N] [--repeats R]

The table is `examples/data/digits.csv` repeated N times (default 50: 89,850 rows of 65 columns,
13 MB), once as it is (integers) and once with every feature written as `%.6e` (the rows that
take the per-field path). Each figure is the best of R runs (default 3), in MB/s; the verdict is
memoized by digest in the checker, so an editor pays this once per version of the file.
"""

from __future__ import annotations

import argparse
import io
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

from alpha_core.data.csv_rows import Shape, read_rows

ROOT = Path(__file__).resolve().parents[1]


def _best(run: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def _loadtxt(content: bytes) -> object:
    return np.loadtxt(io.BytesIO(content), delimiter=",", dtype=np.float32)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--copies", type=int, default=50)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    digits = (ROOT / "examples" / "data" / "digits.csv").read_bytes() * args.copies
    rows = [line.split(b",") for line in digits.split(b"\n") if line]
    exponent = b"".join(
        b",".join([*(b"%.6e" % float(f) for f in r[:-1]), r[-1]]) + b"\n" for r in rows
    )
    shape = Shape(64, 10, True)
    for name, content in (("integers", digits), ("%.6e features", exponent)):
        assert read_rows(content, shape).count == len(rows)
        ours = _best(partial(read_rows, content, shape), args.repeats)
        peer = _best(partial(_loadtxt, content), args.repeats)
        mb = len(content) / 1e6
        print(
            f"{name:>14}: {mb:.1f} MB, {len(rows):,} rows  checker {mb / ours:6.1f} MB/s  "
            f"numpy.loadtxt {mb / peer:6.1f} MB/s  loadtxt/checker time {peer / ours:.2f}"
        )


if __name__ == "__main__":
    main()
