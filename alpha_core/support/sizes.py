"""Sizes and losses as people read them, one formatter for every face: the LSP's memory
admission, `alpha build`, alpha-tui and the tutorial all print 8.00 GiB, never 8,588,215,204."""

from __future__ import annotations

_UNITS = (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024))


def human_bytes(n: int) -> str:
    """`8.00 GiB`, `3.50 KiB`, `512 B` (binary units, two decimals; negative for a deficit)."""
    sign = "-" if n < 0 else ""
    n = abs(n)
    for unit, scale in _UNITS:
        if n >= scale:
            return f"{sign}{n / scale:.2f} {unit}"
    return f"{sign}{n} B"


def show_loss(x: float | None) -> str:
    """A loss with six decimals while that keeps its digits, else in scientific notation, so
    a loss of 3e-9 does not print as 0.000000; `–` for none, `nan` and `inf` as they are."""
    if x is None:
        return "–"
    if x != x or x in (float("inf"), float("-inf")):
        return str(x)
    if x == 0 or 1e-3 <= abs(x) < 1e6:
        return f"{x:.6f}"
    return f"{x:.4e}"
