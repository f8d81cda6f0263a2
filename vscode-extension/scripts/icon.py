"""Draws images/icon.png (128x128): a white alpha on a dark blue tile. Standard library only;
run from vscode-extension/: python3 scripts/icon.py"""

import math
import struct
import zlib
from pathlib import Path

SIZE = 128
BG = (30, 58, 95)
FG = (255, 255, 255)
ACCENT = (255, 196, 0)


def coverage(x: float, y: float) -> tuple[float, float]:
    """How much of the pixel at (x, y) the alpha's stroke (and its accent dot) cover."""
    cx, cy, r, w = 52.0, 66.0, 26.0, 9.0
    ring = abs(math.hypot(x - cx, y - cy) - r) - w / 2  # the bowl of the alpha
    # the tail: a stroke from upper right to lower right through the bowl's right side
    ax, ay, bx, by = 92.0, 34.0, 80.0, 98.0
    t = max(0.0, min(1.0, ((x - ax) * (bx - ax) + (y - ay) * (by - ay)) / ((bx - ax) ** 2 + (by - ay) ** 2)))
    tail = math.hypot(x - (ax + t * (bx - ax)), y - (ay + t * (by - ay))) - w / 2
    stroke = min(ring, tail)
    dot = math.hypot(x - 102.0, y - 98.0) - 7.0
    return max(0.0, min(1.0, 0.5 - stroke)), max(0.0, min(1.0, 0.5 - dot))


def pixel(x: int, y: int) -> bytes:
    # rounded tile: transparent outside a radius-20 rounded square
    edge = 20.0
    qx, qy = max(abs(x + 0.5 - 64) - (64 - edge), 0), max(abs(y + 0.5 - 64) - (64 - edge), 0)
    inside = max(0.0, min(1.0, edge + 0.5 - math.hypot(qx, qy)))
    s, d = coverage(x + 0.5, y + 0.5)
    color = [BG[i] * (1 - s) + FG[i] * s for i in range(3)]
    color = [color[i] * (1 - d) + ACCENT[i] * d for i in range(3)]
    return bytes([round(c) for c in color] + [round(255 * inside)])


def png(width: int, height: int, rows: list[bytes]) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + r for r in rows)
    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


rows = [b"".join(pixel(x, y) for x in range(SIZE)) for y in range(SIZE)]
Path("images").mkdir(exist_ok=True)
Path("images/icon.png").write_bytes(png(SIZE, SIZE, rows))
