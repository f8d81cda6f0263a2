"""A loss chart in braille dots (2x4 per character cell): one line per series, a y axis of
values on its left, the round range under it, a title and a legend. Plain data: a list of
(text, style) segments, the style a colour or `bold` / `dim` name (or ""), so that alpha-tui
draws it with its colours and `alpha runs compare` prints it, with or without them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from alpha_core.support.sizes import show_loss

COLOURS = ("cyan", "magenta", "yellow", "green", "blue", "red", "bright_white", "bright_cyan")
_BRAILLE = 0x2800
# the bit of each dot in a braille cell, by (column, row)
_DOT = {(0, 0): 0x01, (0, 1): 0x02, (0, 2): 0x04, (0, 3): 0x40}
_DOT.update({(1, 0): 0x08, (1, 1): 0x10, (1, 2): 0x20, (1, 3): 0x80})

Segment = tuple[str, str]


@dataclass(frozen=True)
class Series:
    role: str  # the name the legend gives it
    first_round: int  # the round of values[0]
    values: tuple[float, ...]
    every: int = 1  # value i is the loss of round first_round + i * every


def _finite(values: Sequence[float], log: bool) -> list[float]:
    return [v for v in values if math.isfinite(v) and (v > 0 or not log)]


def _label(v: float, log: bool) -> str:
    return show_loss(10**v if log else v)


def chart(
    series: Sequence[Series],
    width: int,
    height: int,
    log: bool,
    what: str,
    keys: str = "",
    empty_keys: str = "",
) -> list[Segment]:
    """The chart, `width` x `height` cells: a title (`loss of WHAT, rounds A–B (SCALE; KEYS)`),
    the plotting area with a y axis on its left, and the round range under it. A series with
    its values gathered at uneven rounds is drawn by position: give it evenly spaced ones.
    `keys` and `empty_keys`: what a face's keys do, said in the title with and without rounds."""
    out: list[Segment] = []
    shown = [s for s in series if _finite(s.values, log)]
    scale = "log scale" if log else "linear scale"
    note = f"{scale}; {keys}" if keys else scale
    if not shown:
        said = f"{scale}; {empty_keys}" if empty_keys else scale
        out.append((f"loss of {what}: no rounds yet ({said})", "dim"))
        return out
    first = min(s.first_round for s in shown)
    last = max(s.first_round + (len(s.values) - 1) * s.every for s in shown)
    title = f"loss of {what}, rounds {first:,}–{last:,} ({note})"
    out.append((title[:width] + "\n", "bold"))
    ys = [math.log10(v) if log else v for s in shown for v in _finite(s.values, log)]
    low, high = min(ys), max(ys)
    if high - low < 1e-12:
        low, high = low - 0.5, high + 0.5
    rows = max(1, height - 3)  # the title, the axis and the round range take three
    label_w = max(len(_label(high, log)), len(_label(low, log))) + 1
    cols = max(1, width - label_w - 1)
    grid = [[0] * cols for _ in range(rows)]
    colour: list[list[str | None]] = [[None] * cols for _ in range(rows)]
    span = max(1, last - first)
    for k, s in enumerate(shown):
        paint = COLOURS[k % len(COLOURS)]
        prev: int | None = None
        for x in range(cols * 2):
            # the rounds under dot column x: their mean is drawn
            lo_round = first + span * x / (cols * 2)
            hi_round = first + span * (x + 1) / (cols * 2)
            a = max(0, (int(lo_round) - s.first_round) // s.every)
            b = min(len(s.values), max(a + 1, (int(hi_round) - s.first_round) // s.every))
            bucket = _finite(s.values[a:b], log) if a < len(s.values) else []
            if not bucket:
                prev = None
                continue
            v = sum(math.log10(u) if log else u for u in bucket) / len(bucket)
            y = round((high - v) / (high - low) * (rows * 4 - 1))
            for yy in range(min(y, prev), max(y, prev) + 1) if prev is not None else (y,):
                cell_row, dot_row = divmod(yy, 4)
                grid[cell_row][x // 2] |= _DOT[(x % 2, dot_row)]
                colour[cell_row][x // 2] = paint
            prev = y
    for r in range(rows):
        if r == 0:
            label = _label(high, log)
        elif r == rows - 1:
            label = _label(low, log)
        elif r == rows // 2 and rows > 2:
            mid = high - (high - low) * (r * 4 + 1.5) / (rows * 4 - 1)
            label = _label(mid, log)
        else:
            label = ""
        out.append((f"{label:>{label_w - 1}} ┤" if label else " " * (label_w - 1) + " │", "dim"))
        for c in range(cols):
            bits = grid[r][c]
            out.append((chr(_BRAILLE + bits) if bits else " ", colour[r][c] or ""))
        out.append(("\n", ""))
    axis = f"{first:,}"
    end = f"{last:,}"
    out.append((" " * label_w + "└" + "─" * max(0, cols - 1) + "\n", "dim"))
    gap = max(1, cols - len(axis) - len(end))
    out.append((" " * label_w + axis + " " * gap + end, "dim"))
    if len(shown) > 1:
        out.append(("  ", ""))
        for k, s in enumerate(shown):
            out.append((f"■ {s.role} ", COLOURS[k % len(COLOURS)]))
    return out


def plain(segments: Sequence[Segment]) -> str:
    """The chart's text without its styles."""
    return "".join(text for text, _ in segments)
