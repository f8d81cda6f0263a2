"""The frame MAC alone (runtime/frame_mac.c) against HMAC-SHA256 and CRC-32C, in GB/s.

    python bench/frame_mac.py [SIZE ...]

Builds bench/frame_mac/mac_speed.c with the runtime's own sources and C flags (`-O2
-ffp-contract=off`, through `python -m ziglang cc` for this machine) and times, over a frame of
each SIZE bytes (default 9,708 and 4,096,068: a 64-byte header and a 2,410- or
1,024,000-parameter piece with its loss float, as bench/round.py sends them), the frame MAC with
this CPU's carry-less multiply and with the portable one, HMAC-SHA256 of the frame (as frame
version 2 MACed it) and CRC-32C of the payload (which version 2 also computed on both sides).
Best of 7 batches. A benchmark, never a test: nothing here asserts a timing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
SIZES = (64 + 4 * 2411, 64 + 4 * 1_024_001)


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(REPO))
    from alpha_core.link.toolchain import C_FLAGS, run_zig, runtime_dir

    sizes = [int(a) for a in argv] or list(SIZES)
    runtime = runtime_dir()
    sources = [BENCH / "frame_mac" / "mac_speed.c"] + [
        runtime / f for f in ("frame_mac.c", "hmac.c", "sha256.c", "crc32c.c")
    ]
    print(f"load average (1 min): {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="alpha-mac-") as tmp:
        exe = Path(tmp) / "mac_speed"
        run_zig(["cc", *C_FLAGS, f"-I{runtime}", *map(str, sources), "-o", str(exe)], cwd=Path(tmp))
        subprocess.run([str(exe), *map(str, sizes)], check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
